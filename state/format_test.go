package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// everything is what a reader sees of a state: meta, resources, intents,
// every address's history and the outputs.
type everything struct {
	Meta      Meta
	Resources []*Resource
	Intents   []*Intent
	History   map[string][]*HistoryEntry
	Outputs   map[string]Output
}

func readEverything(t *testing.T, s Store) everything {
	t.Helper()
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	e := everything{Meta: snap.Meta, Resources: snap.Resources, Intents: snap.Intents, History: map[string][]*HistoryEntry{}}
	for _, r := range snap.Resources {
		if e.History[r.Address], err = s.History(r.Address); err != nil {
			t.Fatal(err)
		}
	}
	if e.Outputs, err = s.Outputs(); err != nil {
		t.Fatal(err)
	}
	return e
}

// copyFixture copies testdata/NAME to a fresh .sparkform/state.db.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := statePath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// readFixture copies testdata/NAME to a state path and reads everything
// in it with a reader (which converts nothing).
func readFixture(t *testing.T, name string) (string, everything) {
	t.Helper()
	path := copyFixture(t, name)
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return path, readEverything(t, r)
}

// testdata/format1.db was written by sparkform at format 1 (JSON
// records): three sparkform_data instances, history (creates and an
// update), an output and a journal intent. It reads as it is, and the
// first writer converts it to format 2 without changing anything a reader
// sees.
func TestFormat1FileOpensAndMigrates(t *testing.T) {
	path, before := readFixture(t, "format1.db")
	if before.Meta.Version != 1 || len(before.Resources) != 3 || len(before.Intents) != 1 ||
		len(before.History["sparkform_data.a"]) != 2 || before.Outputs["a_output"].Value == nil {
		t.Fatalf("the fixture does not read as the format-1 state it is: %+v", before)
	}
	if got := before.History["sparkform_data.a"][0]; got.Action != HistoryUpdate || got.Prior == nil || !bytes.Contains(got.Prior.Value, []byte(`"one"`)) {
		t.Fatalf("history of sparkform_data.a: %+v", got)
	}

	s := openStore(t, path) // the writer migrates
	after := readEverything(t, s)
	if after.Meta.Version != FormatVersion {
		t.Errorf("after a writer opened it: format %d, want %d", after.Meta.Version, FormatVersion)
	}
	before.Meta.Version = after.Meta.Version
	if !reflect.DeepEqual(before, after) {
		b, _ := json.MarshalIndent(before, "", " ")
		a, _ := json.MarshalIndent(after, "", " ")
		t.Fatalf("migration changed what readers see:\nbefore %s\nafter %s", b, a)
	}
	// It works as a format-2 state: a write keeps the migrated record as
	// history and the new one reads back.
	next := *after.Resources[0]
	next.Value = []byte{0x81, 0xa1, 'v', 0x01}
	next.ValueType = json.RawMessage(`["object",{"v":"number"}]`)
	if err := s.PutResource(&next); err != nil {
		t.Fatal(err)
	}
	got, err := s.Resource(next.Address)
	if err != nil || !bytes.Equal(got.Value, next.Value) || string(got.ValueType) != string(next.ValueType) {
		t.Fatalf("after a write: %+v, %v", got, err)
	}
	h, err := s.History(next.Address)
	if err != nil || len(h) != len(before.History[next.Address])+1 || !reflect.DeepEqual(h[0].Prior, after.Resources[0]) {
		t.Fatalf("history after a write: %v, %v", h, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	forEachRecord(t, path, func(bucket string, k, v []byte) {
		if bucket == "meta" {
			return
		}
		body, err := unseal(k, v)
		if err != nil {
			t.Errorf("%s %q is not sealed: %v", bucket, k, err)
		} else if bucket != "interned" && (len(body) == 0 || body[0] != recordTag) {
			t.Errorf("%s %q is not a format-2 record: %q", bucket, k, body)
		}
	})
}

// testdata/format2.db was written by sparkform a222680 at format 2: three
// sparkform_data instances (a updated once, so it has history) and an
// output. It reads as it is; the first writer only raises its version to 3
// (no record is rewritten), after which a record can carry sensitive
// attribute names.
func TestFormat2FileOpensAndUpgrades(t *testing.T) {
	path, before := readFixture(t, "format2.db")
	if before.Meta.Version != 2 || len(before.Resources) != 3 || len(before.History["sparkform_data.a"]) != 2 || before.Outputs["a_output"].Value == nil {
		t.Fatalf("the fixture does not read as the format-2 state it is: %+v", before)
	}
	records := func() map[string]string {
		out := map[string]string{}
		forEachRecord(t, path, func(bucket string, k, v []byte) {
			if bucket != "meta" {
				out[bucket+"/"+string(k)] = string(v)
			}
		})
		return out
	}
	raw := records()

	s := openStore(t, path)
	after := readEverything(t, s)
	if after.Meta.Version != FormatVersion {
		t.Errorf("after a writer opened it: format %d, want %d", after.Meta.Version, FormatVersion)
	}
	before.Meta.Version = after.Meta.Version
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("the upgrade changed what readers see:\nbefore %+v\nafter %+v", before, after)
	}
	next := *after.Resources[0]
	next.SensitiveAttrs = []string{"input", "output"}
	if err := s.PutResource(&next); err != nil {
		t.Fatal(err)
	}
	got, err := s.Resource(next.Address)
	if err != nil || !reflect.DeepEqual(got.SensitiveAttrs, next.SensitiveAttrs) {
		t.Fatalf("after a write: %+v, %v", got, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Format 4 seals every record: the bodies stay what format 2 wrote.
	for k, v := range records() {
		_, key, _ := strings.Cut(k, "/")
		if was, ok := raw[k]; ok && v != string(seal([]byte(key), []byte(was))) && k != "resources/"+next.Address && !strings.HasPrefix(k, "history/"+next.Address+"\x00") {
			t.Errorf("%s was changed by the upgrade, not only sealed", k)
		}
	}
}

// forEachRecord calls fn with every key and value of every bucket.
func forEachRecord(t *testing.T, path string, fn func(bucket string, k, v []byte)) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error { fn(string(name), k, v); return nil })
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A format-2 file refuses an older reader's assumptions: a version past
// this build's is ErrFormat, naming the upgrade.
func TestNewerFormatRefused(t *testing.T) {
	path := statePath(t)
	s := openStore(t, path)
	if err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, u64(FormatVersion+1)) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Meta(); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "upgrade sparkform") {
		t.Fatalf("Meta of a newer format: %v", err)
	}
	s.update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, u64(FormatVersion)) })
}

func fullRecord(addr string) *Resource {
	return &Resource{
		Address: addr, Type: "kmod_module", Provider: "kmod",
		Node:           json.RawMessage(`{"Name":"node.spark[\"a\"]","Host":"10.0.0.1"}`),
		SchemaVersion:  -3,
		Value:          []byte{0x82, 0xa4, 'n', 'a', 'm', 'e', 0xa1, 'x', 0xa1, 'p', 0xc0, 0x00},
		ValueType:      json.RawMessage(`["object",{"name":"string","p":"dynamic"}]`),
		Private:        []byte("restore\x00\xff"),
		Dependencies:   []string{"node.spark", `kmod_module.other["a"]`, ""},
		SensitiveAttrs: []string{"params", ""},
		Status:         StatusTainted,
		UpdatedAt:      time.Date(2026, 12, 3, 11, 0, 0, 123456789, time.UTC),
	}
}

// Records survive the format-2 encoding field by field, inline (etcd)
// and with interned refs (the local file), stored under their address
// or another key.
func TestRecordRoundTrip(t *testing.T) {
	recs := []*Resource{
		fullRecord(`kmod_module.k["a"]`),
		{Address: "sparkform_data.min", Type: "sparkform_data", Status: StatusReady},
		{Address: "x.y", Type: "x", Value: json.RawMessage(`{"v":"json form"}`), Status: StatusReady},
	}
	for _, r := range recs {
		for _, key := range []string{r.Address, "other.key"} {
			data, err := EncodeResource(r, key)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeResource(data, key)
			if err != nil || !reflect.DeepEqual(got, r) {
				t.Errorf("inline under %s:\n got %+v, %v\nwant %+v", key, got, err, r)
			}
		}
	}
	path := statePath(t)
	s := openStore(t, path)
	for _, r := range recs {
		if err := s.PutResource(r); err != nil {
			t.Fatal(err)
		}
		got, err := s.Resource(r.Address)
		if err != nil {
			t.Fatal(err)
		}
		if got.UpdatedAt.IsZero() {
			t.Errorf("UpdatedAt not set")
		}
		got.UpdatedAt = r.UpdatedAt
		if !reflect.DeepEqual(got, r) {
			t.Errorf("stored:\n got %+v\nwant %+v", got, r)
		}
	}
	in := &Intent{Address: recs[0].Address, Action: "replace", Resource: recs[0], Started: time.Unix(5, 6).UTC(), PID: 42}
	if err := s.PutIntent(in); err != nil {
		t.Fatal(err)
	}
	ins, err := s.Intents()
	if err != nil || len(ins) != 1 || !reflect.DeepEqual(ins[0], in) {
		t.Errorf("intent: %+v, %v", ins, err)
	}
	data, err := EncodeIntent(in)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeIntent(data, in.Address); err != nil || !reflect.DeepEqual(got, in) {
		t.Errorf("inline intent: %+v, %v", got, err)
	}
	prior, _ := EncodeResource(recs[0], recs[0].Address)
	for _, a := range []string{HistoryCreate, HistoryUpdate, HistoryDelete, HistoryMoveIn, HistoryMoveOut} {
		e, err := DecodeHistory(EncodeHistory(time.Unix(7, 8), a, "peer.x", prior), recs[0].Address, 9)
		want := &HistoryEntry{Address: recs[0].Address, Serial: 9, Time: time.Unix(7, 8).UTC(), Action: a, Peer: "peer.x", Prior: recs[0]}
		if err != nil || !reflect.DeepEqual(e, want) {
			t.Errorf("history %s: %+v, %v", a, e, err)
		}
	}
	// A snapshot (state pull/push) carries a binary value as base64 and
	// reads it back as it was.
	js, err := json.Marshal(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	var back Resource
	if err := json.Unmarshal(js, &back); err != nil || !reflect.DeepEqual(&back, recs[0]) {
		t.Errorf("JSON round trip: %s -> %+v, %v", js, back, err)
	}
}

// Instances of one node and type store the node details and the value
// type once: a state of many instances grows by the values alone.
func TestSharedPartsStoredOnce(t *testing.T) {
	path := statePath(t)
	s := openStore(t, path)
	for i := 0; i < 50; i++ {
		r := fullRecord(fmt.Sprintf(`kmod_module.k["%d"]`, i))
		if err := s.PutResource(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	interned := 0
	forEachRecord(t, path, func(bucket string, k, v []byte) {
		switch {
		case bucket == "interned":
			interned++
		case bucket != "meta" && (bytes.Contains(v, []byte("10.0.0.1")) || bytes.Contains(v, []byte("dynamic"))):
			t.Errorf("%s %q repeats the node or the value type: %q", bucket, k, v)
		}
	})
	if interned != 4 { // type, provider, node, value type
		t.Errorf("%d interned entries, want 4", interned)
	}
}

// State size per instance after an apply from empty, in both of
// bench/run.sh's shapes (issue 13: at most 0.9 KB; format 1 took 1.7 KB).
func TestStateSizePerInstance(t *testing.T) {
	const n = 3000
	for _, shape := range []string{"blocks", "count"} {
		t.Run(shape, func(t *testing.T) {
			path := statePath(t)
			s := openStore(t, path)
			addrs, deps := applyOrder(shape, n)
			errs := make(chan error, 10)
			for w := 0; w < 10; w++ {
				go func() {
					for i := w; i < n; i += 10 {
						r := applyRecord(addrs[i], deps[i])
						if err := s.PutIntent(&Intent{Address: r.Address, Action: "create", Resource: r}); err != nil {
							errs <- err
							return
						}
						if err := s.Complete(r.Address, r); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for w := 0; w < 10; w++ {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, BackupPath(path)} {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				per := float64(fi.Size()) / n
				t.Logf("%s: %d bytes, %.0f per instance", filepath.Base(p), fi.Size(), per)
				if per > 900 {
					t.Errorf("%s: %.0f bytes per instance, want at most 900", filepath.Base(p), per)
				}
			}
		})
	}
}

// Opening a state for writing and closing it with nothing written (a
// no-op plan) leaves the file as it was: no commit, no fsync, no copy.
func TestOpenWithoutWritesWritesNothing(t *testing.T) {
	path := statePath(t)
	s := openStore(t, path)
	if err := s.PutResource(applyRecord("sparkform_data.a", "")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bak, err := os.Stat(BackupPath(path))
	if err != nil {
		t.Fatal(err)
	}
	s = openStore(t, path)
	if _, err := s.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("opening and closing the state changed the file")
	}
	if fi, err := os.Stat(BackupPath(path)); err != nil || !fi.ModTime().Equal(bak.ModTime()) {
		t.Errorf("the last-good copy was rewritten: %v", err)
	}
}

// TestRecordSensitiveAttrsDamaged: a record whose flag promises sensitive
// attribute names it does not hold, or holds cut short, is ErrFormat,
// never a panic or a record with fewer names.
func TestRecordSensitiveAttrsDamaged(t *testing.T) {
	r := &Resource{Address: "a.b", Type: "a", Status: StatusReady}
	plain, err := EncodeResource(r, r.Address)
	if err != nil {
		t.Fatal(err)
	}
	r.SensitiveAttrs = []string{"token"}
	full, err := EncodeResource(r, r.Address)
	if err != nil {
		t.Fatal(err)
	}
	flagged := bytes.Clone(plain)
	flagged[1] |= flagSensitive // flags is one byte here
	for name, data := range map[string][]byte{
		"flag without a list": flagged,
		"count of none":       append(bytes.Clone(flagged), 0),
		"cut in a name":       full[:len(full)-2],
		"count past the end":  append(bytes.Clone(flagged), 9, 1, 'x'),
	} {
		if got, err := DecodeResource(data, r.Address); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: got %+v, %v; want ErrFormat", name, got, err)
		}
	}
	if got, err := DecodeResource(full, r.Address); err != nil || !reflect.DeepEqual(got.SensitiveAttrs, []string{"token"}) {
		t.Errorf("whole record: %+v, %v", got, err)
	}
}

// testdata/format3.db was written by sparkform 7cdbea9 at format 3 (no
// checksums): sparkform_data.a updated once with sensitive attributes,
// two more instances, an output and a journal intent. Readers read it as
// it is; the first writer seals every record (format 4) without changing
// what readers see, and from then on a flipped byte in a record is
// damage, where in format 3 it was read as data.
func TestFormat3FileOpensAndSeals(t *testing.T) {
	path, before := readFixture(t, "format3.db")
	if before.Meta.Version != 3 || len(before.Resources) != 3 || len(before.Intents) != 1 ||
		len(before.History["sparkform_data.a"]) != 2 || before.Outputs["a_output"].Value == nil ||
		len(before.Resources[0].SensitiveAttrs) != 1 {
		t.Fatalf("the fixture does not read as the format-3 state it is: %+v", before)
	}
	raw := map[string][]byte{}
	forEachRecord(t, path, func(bucket string, k, v []byte) {
		if bucket != "meta" {
			raw[bucket+"/"+string(k)] = bytes.Clone(v)
		}
	})

	s := openStore(t, path)
	after := readEverything(t, s)
	if after.Meta.Version != FormatVersion {
		t.Errorf("after a writer opened it: format %d, want %d", after.Meta.Version, FormatVersion)
	}
	before.Meta.Version = after.Meta.Version
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("sealing changed what readers see:\nbefore %+v\nafter %+v", before, after)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	forEachRecord(t, path, func(bucket string, k, v []byte) {
		if bucket == "meta" {
			return
		}
		n++
		if was := raw[bucket+"/"+string(k)]; !bytes.Equal(v, seal(k, was)) {
			t.Errorf("%s %q: %q is not the format-3 record sealed", bucket, k, v)
		}
	})
	if n != len(raw) {
		t.Errorf("%d records after sealing, %d before", n, len(raw))
	}
	// Now a flipped byte in a record is damage.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	flipAll(t, data, []byte(`"input":"two"`), 10)
	os.WriteFile(path, data, 0o600)
	wantDamaged(t, readAll(path), path)
}
