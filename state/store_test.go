package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestCreateModesAndMeta(t *testing.T) {
	path := statePath(t)
	s := openStore(t, path)
	for p, want := range map[string]os.FileMode{
		filepath.Dir(path): 0o700 | os.ModeDir,
		path:               0o600,
		lockPath(path):     0o600,
	} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
	m, err := s.Meta()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Lineage) != 36 || m.Serial != 0 || m.Version != FormatVersion {
		t.Errorf("fresh meta = %+v, want a 36-char lineage, serial 0, version %d", m, FormatVersion)
	}
}

func TestLooseFileModeIsTightened(t *testing.T) {
	path := statePath(t)
	s := openStore(t, path)
	s.Close()
	for _, p := range []string{path, lockPath(path)} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	openStore(t, path)
	for _, p := range []string{path, lockPath(path)} {
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v after reopen, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
}

func TestLineageStableAcrossReopen(t *testing.T) {
	path := statePath(t)
	checkOnCleanup(t, path)
	var lineages []string
	for i := 0; i < 3; i++ {
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.Meta()
		if err != nil {
			t.Fatal(err)
		}
		if m.Serial != uint64(i) {
			t.Errorf("open %d: serial %d, want %d (kept across reopen)", i, m.Serial, i)
		}
		lineages = append(lineages, m.Lineage)
		if err := s.PutResource(testResource(fmt.Sprintf("a.b[%d]", i), "x")); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if lineages[0] != lineages[1] || lineages[1] != lineages[2] {
		t.Errorf("lineage changed across reopen: %q", lineages)
	}
	other := openStore(t, statePath(t))
	if m, _ := other.Meta(); m.Lineage == lineages[0] {
		t.Errorf("two new states share lineage %q", m.Lineage)
	}
}

func TestSerialBumps(t *testing.T) {
	s := openStore(t, statePath(t))
	a, b := `gitkit_checkout.kit["a"]`, `gitkit_checkout.kit["b"]`
	steps := []struct {
		name  string
		do    func() error
		bump  uint64
		isErr error
	}{
		{"create", func() error { return s.PutResource(testResource(a, "1")) }, 1, nil},
		{"update", func() error { return s.PutResource(testResource(a, "2")) }, 1, nil},
		{"intent", func() error { return s.PutIntent(&Intent{Address: a, Action: "update"}) }, 0, nil},
		{"clear intent", func() error { return s.DeleteIntent(a) }, 0, nil},
		{"move", func() error { return s.MoveResource(a, b) }, 1, nil},
		{"move missing", func() error { return s.MoveResource(a, b) }, 0, ErrResourceNotFound},
		{"delete", func() error { return s.DeleteResource(b) }, 1, nil},
		{"delete missing", func() error { return s.DeleteResource(b) }, 0, ErrResourceNotFound},
		{"invalid", func() error { return s.PutResource(&Resource{Address: a}) }, 0, ErrInvalid},
	}
	var serial uint64
	for _, st := range steps {
		err := st.do()
		if !errors.Is(err, st.isErr) || (st.isErr == nil) != (err == nil) {
			t.Fatalf("%s: err %v, want %v", st.name, err, st.isErr)
		}
		m, err := s.Meta()
		if err != nil {
			t.Fatal(err)
		}
		if m.Serial != serial+st.bump {
			t.Errorf("%s: serial %d, want %d", st.name, m.Serial, serial+st.bump)
		}
		serial = m.Serial
	}
}

func TestPutGetDeleteMove(t *testing.T) {
	s := openStore(t, statePath(t))
	addrs := []string{`kmod_module.nvidia_drm["spark-02"]`, `gitkit_checkout.kit["b"]`, `gitkit_checkout.kit["a"]`}
	for _, a := range addrs {
		r := testResource(a, a)
		before := *r
		if err := s.PutResource(r); err != nil {
			t.Fatal(err)
		}
		if !r.UpdatedAt.IsZero() || r.Address != before.Address {
			t.Errorf("PutResource modified the caller's record")
		}
	}
	got, err := s.Resources()
	if err != nil {
		t.Fatal(err)
	}
	var gotAddrs []string
	for _, r := range got {
		gotAddrs = append(gotAddrs, r.Address)
	}
	want := slices.Sorted(slices.Values(addrs))
	if !slices.Equal(gotAddrs, want) {
		t.Errorf("Resources() addresses %q, want sorted %q", gotAddrs, want)
	}

	a := `gitkit_checkout.kit["a"]`
	r, err := s.Resource(a)
	if err != nil {
		t.Fatal(err)
	}
	exp := testResource(a, a)
	if r.Type != exp.Type || r.Provider != exp.Provider || r.SchemaVersion != exp.SchemaVersion ||
		!bytes.Equal(r.Private, exp.Private) || !slices.Equal(r.Dependencies, exp.Dependencies) ||
		!jsonEqual(r.Value, exp.Value) || !jsonEqual(r.Node, exp.Node) || r.Status != StatusReady {
		t.Errorf("round trip:\n got %+v\nwant %+v", r, exp)
	}
	if time.Since(r.UpdatedAt) > time.Minute || r.UpdatedAt.IsZero() {
		t.Errorf("UpdatedAt = %v, want set by the store", r.UpdatedAt)
	}

	tainted := testResource(a, "t")
	tainted.Status = StatusTainted
	if err := s.PutResource(tainted); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Resource(a); r.Status != StatusTainted {
		t.Errorf("status %q, want tainted", r.Status)
	}

	// Move: record follows, old address gone, target must be free.
	c := `gitkit_checkout.kit["c"]`
	if err := s.MoveResource(a, c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resource(a); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("after move, old address: err %v, want ErrResourceNotFound", err)
	}
	moved, err := s.Resource(c)
	if err != nil || moved.Address != c || moved.Status != StatusTainted {
		t.Errorf("after move: %+v, %v", moved, err)
	}
	if err := s.MoveResource(c, `gitkit_checkout.kit["b"]`); !errors.Is(err, ErrResourceExists) {
		t.Errorf("move onto an existing address: %v, want ErrResourceExists", err)
	}

	if err := s.DeleteResource(c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resource(c); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("after delete: %v, want ErrResourceNotFound", err)
	}
	if got, _ := s.Resources(); len(got) != 2 {
		t.Errorf("%d resources left, want 2", len(got))
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

func TestInvalidInput(t *testing.T) {
	s := openStore(t, statePath(t))
	ok := testResource(`a.b`, "x")
	with := func(f func(r *Resource)) *Resource { r := *ok; f(&r); return &r }
	cases := []struct {
		name string
		err  error
	}{
		{"nil resource", s.PutResource(nil)},
		{"empty address", s.PutResource(with(func(r *Resource) { r.Address = "" }))},
		{"NUL in address", s.PutResource(with(func(r *Resource) { r.Address = "a.b\x00c" }))},
		{"no type", s.PutResource(with(func(r *Resource) { r.Type = "" }))},
		{"bad status", s.PutResource(with(func(r *Resource) { r.Status = "deposed" }))},
		{"bad value json", s.PutResource(with(func(r *Resource) { r.Value = json.RawMessage("{nope") }))},
		{"nil intent", s.PutIntent(nil)},
		{"intent without action", s.PutIntent(&Intent{Address: "a.b"})},
		{"move onto itself", s.MoveResource("a.b", "a.b")},
		{"history of empty address", func() error { _, err := s.History(""); return err }()},
	}
	for _, c := range cases {
		if !errors.Is(c.err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", c.name, c.err)
		}
	}
	if m, _ := s.Meta(); m.Serial != 0 {
		t.Errorf("invalid writes bumped serial to %d", m.Serial)
	}
}

func TestHistory(t *testing.T) {
	s := openStore(t, statePath(t))
	a := `hubstage_manifest.model["spark-01"]`
	const n = HistoryLimit + 5
	for i := 1; i <= n; i++ {
		if err := s.PutResource(testResource(a, fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	// A neighbour whose address extends a's must not leak into a's history.
	if err := s.PutResource(testResource(a+"x", "other")); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != HistoryLimit {
		t.Fatalf("%d history entries, want the last %d", len(h), HistoryLimit)
	}
	for i, e := range h {
		// Entry i (newest first) is the change at serial n-i, which replaced version n-i-1.
		wantSerial := uint64(n - i)
		if e.Serial != wantSerial || e.Action != HistoryUpdate || e.Address != a {
			t.Errorf("entry %d: serial %d action %s addr %s, want serial %d update", i, e.Serial, e.Action, e.Address, wantSerial)
		}
		if e.Prior == nil || !jsonEqual(e.Prior.Value, testResource(a, fmt.Sprint(n-i-1)).Value) {
			t.Errorf("entry %d: prior %v, want version %d", i, e.Prior, n-i-1)
		}
	}

	// Create, delete and move leave tombstones and the records, in order.
	b, c := "sparkform_data.b", "sparkform_data.c"
	for _, err := range []error{s.PutResource(testResource(b, "1")), s.MoveResource(b, c), s.DeleteResource(c)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	hb, _ := s.History(b)
	hc, _ := s.History(c)
	if len(hb) != 2 || hb[0].Action != HistoryMoveOut || hb[0].Peer != c || hb[0].Prior == nil ||
		hb[1].Action != HistoryCreate || hb[1].Prior != nil {
		t.Errorf("history of %s: %s", b, describe(hb))
	}
	if len(hc) != 2 || hc[0].Action != HistoryDelete || hc[0].Prior == nil || hc[0].Prior.Address != c ||
		hc[1].Action != HistoryMoveIn || hc[1].Peer != b || hc[1].Prior != nil {
		t.Errorf("history of %s: %s", c, describe(hc))
	}

	// Undo the delete from history: put the prior record back.
	if err := s.PutResource(hc[0].Prior); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Resource(c); err != nil || !jsonEqual(r.Value, testResource(b, "1").Value) {
		t.Errorf("undo from history: %v %v", r, err)
	}
}

func describe(h []*HistoryEntry) string {
	var b bytes.Buffer
	for _, e := range h {
		fmt.Fprintf(&b, "[%d %s peer=%q prior=%v] ", e.Serial, e.Action, e.Peer, e.Prior != nil)
	}
	return b.String()
}

func TestJournalRoundTrip(t *testing.T) {
	s := openStore(t, statePath(t))
	a, b := `docker_container.vllm["spark-01"]`, `docker_container.vllm["spark-02"]`
	planned := testResource(a, "planned")
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.PutIntent(&Intent{Address: b, Action: "delete"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIntent(&Intent{Address: a, Action: "create", Resource: planned, Started: started, PID: 42}); err != nil {
		t.Fatal(err)
	}
	in, err := s.Intents()
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 2 || in[0].Address != a || in[1].Address != b {
		t.Fatalf("intents %+v, want %s then %s", in, a, b)
	}
	if in[0].Action != "create" || in[0].PID != 42 || !in[0].Started.Equal(started) ||
		in[0].Resource == nil || !jsonEqual(in[0].Resource.Value, planned.Value) {
		t.Errorf("intent round trip: %+v", in[0])
	}
	if in[1].PID != os.Getpid() || time.Since(in[1].Started) > time.Minute || in[1].Resource != nil {
		t.Errorf("defaults: %+v, want this pid and now", in[1])
	}
	for _, addr := range []string{a, b, b} { // the second delete is a no-op
		if err := s.DeleteIntent(addr); err != nil {
			t.Fatal(err)
		}
	}
	if in, _ := s.Intents(); len(in) != 0 {
		t.Errorf("%d intents left", len(in))
	}
}

func TestReadOnly(t *testing.T) {
	path := statePath(t)
	if _, err := OpenReadOnly(path); !errors.Is(err, ErrNoState) {
		t.Fatalf("OpenReadOnly on no state: %v, want ErrNoState", err)
	}
	w := openStore(t, path)
	if err := w.PutResource(testResource("a.b", "1")); err != nil {
		t.Fatal(err)
	}
	// The writer still holds its lock: a reader is not blocked by it.
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := r.Resources(); err != nil || len(got) != 1 {
		t.Fatalf("reader: %d resources, %v", len(got), err)
	}
	for name, err := range map[string]error{
		"put":          r.PutResource(testResource("a.c", "1")),
		"delete":       r.DeleteResource("a.b"),
		"move":         r.MoveResource("a.b", "a.c"),
		"intent":       r.PutIntent(&Intent{Address: "a.b", Action: "x"}),
		"clear intent": r.DeleteIntent("a.b"),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only store: %v, want ErrReadOnly", name, err)
		}
	}
	// Writes by the writer are visible to the open reader on its next call.
	if err := w.PutResource(testResource("a.c", "1")); err != nil {
		t.Fatal(err)
	}
	snap, err := r.Snapshot()
	if err != nil || len(snap.Resources) != 2 || snap.Meta.Serial != 2 {
		t.Errorf("snapshot after a write: %+v %v", snap, err)
	}
}

func TestClosedStore(t *testing.T) {
	s := openStore(t, statePath(t))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.PutResource(testResource("a.b", "1")); !errors.Is(err, ErrClosed) {
		t.Errorf("put after close: %v", err)
	}
	if _, err := s.Resources(); !errors.Is(err, ErrClosed) {
		t.Errorf("read after close: %v", err)
	}
}

func TestNotAStateFile(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, bytes.Repeat([]byte("not bbolt "), 1000), 0o600)
	if _, err := Open(junk, Options{}); !errors.Is(err, ErrFormat) {
		t.Errorf("Open(junk): %v, want ErrFormat", err)
	}
	if _, err := OpenReadOnly(junk); !errors.Is(err, ErrFormat) {
		t.Errorf("OpenReadOnly(junk): %v, want ErrFormat", err)
	}

	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("users")); return err })
	db.Close()
	if _, err := Open(other, Options{}); !errors.Is(err, ErrFormat) {
		t.Errorf("Open(foreign bbolt): %v, want ErrFormat", err)
	}

	// A newer format version is refused with advice.
	path := statePath(t)
	s := openStore(t, path)
	s.Close()
	db, _ = bolt.Open(path, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyVersion, u64(FormatVersion+1)) })
	db.Close()
	if _, err := OpenReadOnly(path); !errors.Is(err, ErrFormat) {
		t.Errorf("newer format: %v, want ErrFormat", err)
	}
}

// Concurrent writers in one process: the second waits, then fails naming
// the holder; and it succeeds when the first releases within the timeout.
func TestLockGoroutines(t *testing.T) {
	path := statePath(t)
	first := openStore(t, path)
	start := time.Now()
	_, err := Open(path, Options{LockTimeout: 200 * time.Millisecond, Command: "second"})
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want *LockedError", err)
	}
	host, _ := os.Hostname()
	if le.Holder == nil || le.Holder.PID != os.Getpid() || le.Holder.Host != host || le.Holder.Command != "test "+t.Name() {
		t.Errorf("holder %+v, want this process and command %q", le.Holder, "test "+t.Name())
	}
	if waited := time.Since(start); waited < 200*time.Millisecond || le.Waited < 200*time.Millisecond {
		t.Errorf("gave up after %v (reported %v), want the full timeout", waited, le.Waited)
	}

	go func() { time.Sleep(100 * time.Millisecond); first.Close() }()
	second, err := Open(path, Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("Open after release: %v", err)
	}
	second.Close()
}

// Many goroutines writing through one store share commits.
func TestGroupCommit(t *testing.T) {
	s := openStore(t, statePath(t))
	const workers, each = 10, 100
	var wg sync.WaitGroup
	errs := make(chan error, 3*workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				addr := fmt.Sprintf("sparkform_data.r[%d]", w*each+i)
				errs <- s.PutIntent(&Intent{Address: addr, Action: "create"})
				errs <- s.PutResource(testResource(addr, "v"))
				errs <- s.DeleteIntent(addr)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Resources) != workers*each || snap.Meta.Serial != workers*each || len(snap.Intents) != 0 {
		t.Errorf("%d resources, serial %d, %d intents; want %d, %d, 0", len(snap.Resources), snap.Meta.Serial, len(snap.Intents), workers*each, workers*each)
	}
	writes := uint64(3 * workers * each)
	commits := s.commits.Load()
	t.Logf("%d writes in %d commits", writes, commits)
	if commits >= writes/2 {
		t.Errorf("%d commits for %d concurrent writes: not grouped", commits, writes)
	}
}

// One failing op in a batch does not fail or lose the others.
func TestBatchIsolatesFailingOp(t *testing.T) {
	s := openStore(t, statePath(t))
	put := func(a string) opFunc {
		fn, err := putResourceOp(testResource(a, "v"))
		if err != nil {
			t.Fatal(err)
		}
		return fn
	}
	batch := []*op{
		{fn: put("a.one")},
		{fn: deleteResourceOp("a.missing")},
		{fn: put("a.two")},
	}
	errs := runOps(s, batch)
	for i, want := range []error{nil, ErrResourceNotFound, nil} {
		if err := errs[i]; !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("op %d: %v, want %v", i, err, want)
		}
	}
	if got, _ := s.Resources(); len(got) != 2 {
		t.Errorf("%d resources, want 2", len(got))
	}
	if m, _ := s.Meta(); m.Serial != 2 {
		t.Errorf("serial %d, want 2", m.Serial)
	}
}

func TestComplete(t *testing.T) {
	s := openStore(t, statePath(t))
	a := `kmod_module.nvidia_drm["spark-01"]`
	steps := []struct {
		name      string
		result    *Resource
		wantErr   error
		inState   bool
		serialInc uint64
	}{
		{"create", testResource(a, "1"), nil, true, 1},
		{"update", testResource(a, "2"), nil, true, 1},
		{"delete", nil, nil, false, 1},
		{"delete again (already gone)", nil, nil, false, 0},
		{"record for another address", testResource("a.other", "x"), ErrInvalid, false, 0},
	}
	var serial uint64
	for _, st := range steps {
		if err := s.PutIntent(&Intent{Address: a, Action: st.name}); err != nil {
			t.Fatal(err)
		}
		before := s.commits.Load()
		err := s.Complete(a, st.result)
		if !errors.Is(err, st.wantErr) || (st.wantErr == nil) != (err == nil) {
			t.Fatalf("%s: %v, want %v", st.name, err, st.wantErr)
		}
		snap, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if st.wantErr != nil {
			if len(snap.Intents) != 1 {
				t.Errorf("%s: a failed Complete cleared the intent", st.name)
			}
			continue
		}
		if got := s.commits.Load() - before; got != 1 {
			t.Errorf("%s: %d commits, want 1", st.name, got)
		}
		if len(snap.Intents) != 0 {
			t.Errorf("%s: intent left: %+v", st.name, snap.Intents[0])
		}
		if (len(snap.Resources) == 1) != st.inState {
			t.Errorf("%s: %d resources, want in state = %v", st.name, len(snap.Resources), st.inState)
		}
		if snap.Meta.Serial != serial+st.serialInc {
			t.Errorf("%s: serial %d, want %d", st.name, snap.Meta.Serial, serial+st.serialInc)
		}
		serial = snap.Meta.Serial
	}
}
