// Package statetest is the conformance suite of state.Store: the same
// cases run against every backend (the local bbolt file in package state's
// tests, etcd in state/etcdstore's), so both keep one contract.
package statetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkform/sparkform/state"
)

// NewBackend returns a backend at a fresh, empty place (cleaned up by t).
type NewBackend func(t *testing.T) state.Backend

// Resource is a valid record for addr with value {"v": v}.
func Resource(addr, v string) *state.Resource {
	val, _ := json.Marshal(map[string]string{"v": v})
	return &state.Resource{Address: addr, Type: "sparkform_data", Provider: "sparkform",
		Node: json.RawMessage(`{"name":"n1"}`), Value: val, Private: []byte("p-" + v),
		Dependencies: []string{"sparkform_data.dep"}}
}

func valueOf(t *testing.T, r *state.Resource) string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal(r.Value, &m); err != nil {
		t.Fatalf("%s: value %s: %v", r.Address, r.Value, err)
	}
	return m["v"]
}

// Run runs every case.
func Run(t *testing.T, newBackend NewBackend) {
	cases := []struct {
		name string
		fn   func(*testing.T, state.Backend)
	}{
		{"Fresh", testFresh},
		{"PutGetList", testPutGetList},
		{"Delete", testDelete},
		{"Move", testMove},
		{"Journal", testJournal},
		{"History", testHistory},
		{"Outputs", testOutputs},
		{"ReadOnly", testReadOnly},
		{"Lock", testLock},
		{"LockWait", testLockWait},
		{"GroupCommit", testGroupCommit},
		{"SameAddressInOneBatch", testSameAddress},
		{"Reopen", testReopen},
		{"ReplaceAndExport", testReplace},
		{"ForceUnlock", testForceUnlock},
		{"Invalid", testInvalid},
		{"Closed", testClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newBackend(t)) })
	}
}

func open(t *testing.T, b state.Backend) state.Store {
	t.Helper()
	s, err := b.Open(state.Options{Command: "conformance " + t.Name()})
	if err != nil {
		t.Fatalf("open %s: %v", b, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func serial(t *testing.T, s state.Store) uint64 {
	t.Helper()
	m, err := s.Meta()
	must(t, err)
	return m.Serial
}

func testFresh(t *testing.T, b state.Backend) {
	if _, err := b.OpenReadOnly(); !errors.Is(err, state.ErrNoState) {
		t.Fatalf("read-only open of an empty place: %v, want ErrNoState", err)
	}
	s := open(t, b)
	m, err := s.Meta()
	must(t, err)
	if len(m.Lineage) != 36 || m.Serial != 0 || m.Version != state.FormatVersion {
		t.Fatalf("fresh meta %+v", m)
	}
	rs, err := s.Resources()
	must(t, err)
	in, err := s.Intents()
	must(t, err)
	outs, err := s.Outputs()
	must(t, err)
	if len(rs) != 0 || len(in) != 0 || len(outs) != 0 {
		t.Fatalf("fresh state not empty: %d resources, %d intents, %d outputs", len(rs), len(in), len(outs))
	}
}

func testPutGetList(t *testing.T, b state.Backend) {
	s := open(t, b)
	before := time.Now().Add(-time.Second)
	for _, a := range []string{`b.x["z"]`, `a.x`, `b.x["a"]`} {
		must(t, s.PutResource(Resource(a, a)))
	}
	rs, err := s.Resources()
	must(t, err)
	var got []string
	for _, r := range rs {
		got = append(got, r.Address)
		if r.Status != state.StatusReady || r.UpdatedAt.Before(before) || valueOf(t, r) != r.Address ||
			string(r.Private) != "p-"+r.Address || len(r.Dependencies) != 1 || string(r.Node) != `{"name":"n1"}` {
			t.Errorf("stored record %+v", r)
		}
	}
	if strings.Join(got, " ") != `a.x b.x["a"] b.x["z"]` {
		t.Errorf("Resources order %v, want sorted by address", got)
	}
	if serial(t, s) != 3 {
		t.Errorf("serial %d after 3 puts", serial(t, s))
	}
	r := Resource("a.x", "two")
	r.Status = state.StatusTainted
	must(t, s.PutResource(r))
	one, err := s.Resource("a.x")
	must(t, err)
	if valueOf(t, one) != "two" || one.Status != state.StatusTainted {
		t.Errorf("after replace: %+v", one)
	}
	if _, err := s.Resource("nope.x"); !errors.Is(err, state.ErrResourceNotFound) {
		t.Errorf("missing resource: %v", err)
	}
}

func testDelete(t *testing.T, b state.Backend) {
	s := open(t, b)
	must(t, s.PutResource(Resource("a.x", "1")))
	must(t, s.DeleteResource("a.x"))
	if err := s.DeleteResource("a.x"); !errors.Is(err, state.ErrResourceNotFound) {
		t.Errorf("second delete: %v, want ErrResourceNotFound", err)
	}
	if serial(t, s) != 2 {
		t.Errorf("serial %d, want 2 (a failed delete does not count)", serial(t, s))
	}
	rs, _ := s.Resources()
	if len(rs) != 0 {
		t.Errorf("resources after delete: %d", len(rs))
	}
}

func testMove(t *testing.T, b state.Backend) {
	s := open(t, b)
	must(t, s.PutResource(Resource("a.x", "1")))
	must(t, s.PutResource(Resource("a.y", "2")))
	if err := s.MoveResource("a.x", "a.y"); !errors.Is(err, state.ErrResourceExists) {
		t.Errorf("move onto a taken address: %v", err)
	}
	if err := s.MoveResource("a.none", "a.z"); !errors.Is(err, state.ErrResourceNotFound) {
		t.Errorf("move of a missing address: %v", err)
	}
	if err := s.MoveResource("a.x", "a.x"); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("move onto itself: %v", err)
	}
	if err := s.MoveResource("a.x", "b.x"); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("move to another type: %v, want ErrInvalid", err)
	}
	if _, err := s.Resource("a.x"); err != nil {
		t.Errorf("a refused move lost the record: %v", err)
	}
	must(t, s.MoveResource("a.x", "a.z"))
	r, err := s.Resource("a.z")
	must(t, err)
	if r.Address != "a.z" || valueOf(t, r) != "1" {
		t.Errorf("moved record %+v", r)
	}
	if _, err := s.Resource("a.x"); !errors.Is(err, state.ErrResourceNotFound) {
		t.Errorf("old address still there: %v", err)
	}
	out, _ := s.History("a.x")
	in, _ := s.History("a.z")
	if len(out) != 2 || out[0].Action != state.HistoryMoveOut || out[0].Peer != "a.z" || out[0].Prior == nil ||
		len(in) != 1 || in[0].Action != state.HistoryMoveIn || in[0].Prior != nil || in[0].Serial != out[0].Serial {
		t.Errorf("move history: out %+v in %+v", out, in)
	}
	if serial(t, s) != 3 {
		t.Errorf("serial %d, want 3", serial(t, s))
	}
}

func testJournal(t *testing.T, b state.Backend) {
	s := open(t, b)
	must(t, s.PutResource(Resource("a.gone", "1")))
	for _, a := range []string{"a.y", "a.x", "a.gone"} {
		must(t, s.PutIntent(&state.Intent{Address: a, Action: "create", Resource: Resource(a, "planned")}))
	}
	in, err := s.Intents()
	must(t, err)
	if len(in) != 3 || in[0].Address != "a.gone" || in[2].Address != "a.y" || in[0].PID != os.Getpid() ||
		in[0].Started.IsZero() || in[1].Resource == nil || valueOf(t, in[1].Resource) != "planned" {
		t.Fatalf("intents %+v", in)
	}
	if serial(t, s) != 1 {
		t.Errorf("journal writes bumped the serial to %d", serial(t, s))
	}
	must(t, s.Complete("a.x", Resource("a.x", "done")))
	must(t, s.Complete("a.gone", nil))
	must(t, s.Complete("a.never", nil)) // already gone: fine
	must(t, s.DeleteIntent("a.y"))
	must(t, s.DeleteIntent("a.y")) // absent: fine
	snap, err := s.Snapshot()
	must(t, err)
	if len(snap.Intents) != 0 || len(snap.Resources) != 1 || snap.Resources[0].Address != "a.x" || snap.Meta.Serial != 3 {
		t.Errorf("after Complete: %d intents, resources %v, serial %d", len(snap.Intents), snap.Resources, snap.Meta.Serial)
	}
	if err := s.Complete("a.x", Resource("a.other", "x")); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("Complete with another address: %v", err)
	}
}

func testHistory(t *testing.T, b state.Backend) {
	s := open(t, b)
	const n = state.HistoryLimit + 5
	for i := 0; i < n; i++ {
		must(t, s.PutResource(Resource("a.x", fmt.Sprint(i))))
	}
	must(t, s.DeleteResource("a.x"))
	h, err := s.History("a.x")
	must(t, err)
	if len(h) != state.HistoryLimit {
		t.Fatalf("%d history entries, want %d", len(h), state.HistoryLimit)
	}
	if h[0].Action != state.HistoryDelete || valueOf(t, h[0].Prior) != fmt.Sprint(n-1) || h[0].Serial != n+1 {
		t.Errorf("newest entry %+v", h[0])
	}
	if h[1].Action != state.HistoryUpdate || valueOf(t, h[1].Prior) != fmt.Sprint(n-2) || h[1].Serial != n {
		t.Errorf("second entry %+v", h[1])
	}
	for i := 1; i < len(h); i++ {
		if h[i].Serial >= h[i-1].Serial {
			t.Fatalf("history not newest first: %d then %d", h[i-1].Serial, h[i].Serial)
		}
	}
	must(t, s.PutResource(Resource("a.new", "1")))
	h, _ = s.History("a.new")
	if len(h) != 1 || h[0].Action != state.HistoryCreate || h[0].Prior != nil {
		t.Errorf("create history %+v", h)
	}
	if h, _ := s.History("a"); len(h) != 0 {
		t.Errorf("history of a prefix of other addresses: %+v", h)
	}
}

func testOutputs(t *testing.T, b state.Backend) {
	s := open(t, b)
	outs := map[string]state.Output{"a": {Value: json.RawMessage(`{"value":"x","type":"string"}`)}, "s": {Value: json.RawMessage(`1`), Sensitive: true}}
	must(t, s.PutOutputs(outs))
	got, err := s.Outputs()
	must(t, err)
	if len(got) != 2 || !got["s"].Sensitive || string(got["a"].Value) != string(outs["a"].Value) {
		t.Errorf("outputs %+v", got)
	}
	must(t, s.PutOutputs(map[string]state.Output{}))
	got, _ = s.Outputs()
	if len(got) != 0 {
		t.Errorf("outputs not cleared: %+v", got)
	}
}

func testReadOnly(t *testing.T, b state.Backend) {
	w := open(t, b)
	must(t, w.PutResource(Resource("a.x", "1")))
	// Readers get in while a writer holds the lock.
	r, err := b.OpenReadOnly()
	must(t, err)
	defer r.Close()
	rs, err := r.Resources()
	must(t, err)
	if len(rs) != 1 {
		t.Errorf("reader sees %d resources", len(rs))
	}
	must(t, w.PutResource(Resource("a.y", "2")))
	if rs, _ := r.Resources(); len(rs) != 2 {
		t.Errorf("reader does not see the writer's new record: %d", len(rs))
	}
	for name, err := range map[string]error{
		"PutResource":    r.PutResource(Resource("a.z", "1")),
		"DeleteResource": r.DeleteResource("a.x"),
		"PutIntent":      r.PutIntent(&state.Intent{Address: "a.x", Action: "update"}),
		"Complete":       r.Complete("a.x", nil),
		"PutOutputs":     r.PutOutputs(nil),
	} {
		if !errors.Is(err, state.ErrReadOnly) {
			t.Errorf("read-only %s: %v, want ErrReadOnly", name, err)
		}
	}
}

func testLock(t *testing.T, b state.Backend) {
	s := open(t, b)
	_ = s
	start := time.Now()
	_, err := b.Open(state.Options{Command: "second writer"})
	var le *state.LockedError
	if !errors.As(err, &le) || !errors.Is(err, state.ErrLocked) {
		t.Fatalf("second Open: %v, want a *LockedError", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("LockTimeout 0 waited %s", time.Since(start))
	}
	h := le.Holder
	host, _ := os.Hostname()
	if h == nil || h.PID != os.Getpid() || h.Host != host || !strings.HasPrefix(h.Command, "conformance ") || h.User == "" || h.Since.IsZero() {
		t.Errorf("holder %+v", h)
	}
	for _, want := range []string{"locked", fmt.Sprint(os.Getpid()), "force-unlock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("lock error %q lacks %q", err, want)
		}
	}
}

func testLockWait(t *testing.T, b state.Backend) {
	s, err := b.Open(state.Options{Command: "first"})
	must(t, err)
	go func() {
		time.Sleep(300 * time.Millisecond)
		s.Close()
	}()
	s2, err := b.Open(state.Options{Command: "second", LockTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("waiting Open: %v", err)
	}
	must(t, s2.PutResource(Resource("a.x", "1")))
	must(t, s2.Close())
}

func testGroupCommit(t *testing.T, b state.Backend) {
	s := open(t, b)
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := fmt.Sprintf("a.x[%d]", i)
			if err := s.PutIntent(&state.Intent{Address: a, Action: "create"}); err != nil {
				errs <- err
				return
			}
			errs <- s.Complete(a, Resource(a, fmt.Sprint(i)))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	snap, err := s.Snapshot()
	must(t, err)
	if len(snap.Resources) != n || len(snap.Intents) != 0 || snap.Meta.Serial != n {
		t.Errorf("after %d concurrent applies: %d resources, %d intents, serial %d", n, len(snap.Resources), len(snap.Intents), snap.Meta.Serial)
	}
	// One failing write in a batch fails alone.
	var wg2 sync.WaitGroup
	var bad, good error
	wg2.Add(2)
	go func() { defer wg2.Done(); bad = s.DeleteResource("a.missing") }()
	go func() { defer wg2.Done(); good = s.PutResource(Resource("a.ok", "1")) }()
	wg2.Wait()
	if !errors.Is(bad, state.ErrResourceNotFound) || good != nil {
		t.Errorf("mixed batch: bad=%v good=%v", bad, good)
	}
}

func testSameAddress(t *testing.T, b state.Backend) {
	s := open(t, b)
	var wg sync.WaitGroup
	const n = 50
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); must(t, s.PutResource(Resource("a.x", fmt.Sprint(i)))) }()
	}
	wg.Wait()
	h, err := s.History("a.x")
	must(t, err)
	if len(h) != state.HistoryLimit || serial(t, s) != n {
		t.Fatalf("%d history entries, serial %d", len(h), serial(t, s))
	}
	// Every entry's prior is the record written at the serial before it.
	cur, _ := s.Resource("a.x")
	seen := map[string]bool{valueOf(t, cur): true}
	for _, e := range h[:len(h)-1] {
		if e.Prior == nil {
			t.Fatalf("entry %d has no prior", e.Serial)
		}
		v := valueOf(t, e.Prior)
		if seen[v] {
			t.Fatalf("value %s appears twice in history: a lost update", v)
		}
		seen[v] = true
	}
}

func testReopen(t *testing.T, b state.Backend) {
	s, err := b.Open(state.Options{Command: "first"})
	must(t, err)
	m1, _ := s.Meta()
	must(t, s.PutResource(Resource("a.x", "1")))
	must(t, s.PutIntent(&state.Intent{Address: "a.y", Action: "create"}))
	must(t, s.Close())
	s2 := open(t, b)
	snap, err := s2.Snapshot()
	must(t, err)
	if snap.Meta.Lineage != m1.Lineage || snap.Meta.Serial != 1 || len(snap.Resources) != 1 || len(snap.Intents) != 1 {
		t.Errorf("reopened: %+v", snap)
	}
}

func testReplace(t *testing.T, b state.Backend) {
	s := open(t, b)
	for i := 0; i < 250; i++ { // more than one etcd transaction
		must(t, s.PutResource(Resource(fmt.Sprintf("old.x[%d]", i), "old")))
	}
	must(t, s.PutIntent(&state.Intent{Address: "old.x[0]", Action: "update"}))
	if _, err := state.Export(s); !errors.Is(err, state.ErrInvalid) {
		t.Errorf("export with a journal: %v", err)
	}
	must(t, s.DeleteIntent("old.x[0]"))
	p := &state.Portable{Version: state.PortableVersion, Lineage: "11111111-2222-4333-8444-555555555555", Serial: 77,
		Outputs: map[string]state.Output{"o": {Value: json.RawMessage(`"v"`)}}}
	for i := 0; i < 300; i++ {
		p.Resources = append(p.Resources, Resource(fmt.Sprintf("new.x[%03d]", i), fmt.Sprint(i)))
	}
	if err := state.CheckTarget(s, p, false); !errors.Is(err, state.ErrInvalid) || !strings.Contains(err.Error(), "another state") {
		t.Errorf("CheckTarget of another lineage: %v", err)
	}
	must(t, state.CheckTarget(s, p, true))
	must(t, s.Replace(p))
	got, err := state.Export(s)
	must(t, err)
	if got.Lineage != p.Lineage || got.Serial != 77 || len(got.Resources) != 300 || got.Resources[5].Address != "new.x[005]" || len(got.Outputs) != 1 {
		t.Fatalf("after Replace: lineage %s serial %d %d resources", got.Lineage, got.Serial, len(got.Resources))
	}
	if h, _ := s.History("old.x[1]"); len(h) != 0 {
		t.Errorf("history of the replaced state survived: %d entries", len(h))
	}
	must(t, state.CheckTarget(s, got, false)) // same lineage, same serial
	older := *got
	older.Serial = 5
	if err := state.CheckTarget(s, &older, false); err == nil {
		t.Errorf("CheckTarget accepted an older serial of the same lineage")
	}
	// Writes continue from the pushed serial.
	must(t, s.PutResource(Resource("new.y", "1")))
	if serial(t, s) != 78 {
		t.Errorf("serial after push and one put: %d, want 78", serial(t, s))
	}
}

func testForceUnlock(t *testing.T, b state.Backend) {
	if _, err := b.ForceUnlock(state.UnlockOptions{}); !errors.Is(err, state.ErrNotLocked) {
		t.Errorf("force-unlock with no holder: %v", err)
	}
	s := open(t, b)
	must(t, s.PutResource(Resource("a.x", "1")))
	alive, err := b.ForceUnlock(state.UnlockOptions{})
	if !errors.Is(err, state.ErrHolderAlive) {
		t.Errorf("force-unlock of a live holder on this host: %v, want ErrHolderAlive", err)
	}
	// A lock id that is not the current hold's clears nothing, even forced.
	if _, err := b.ForceUnlock(state.UnlockOptions{Force: true, ID: "000000000000"}); !errors.Is(err, state.ErrLockIDMismatch) {
		t.Errorf("force-unlock with another lock id: %v, want ErrLockIDMismatch", err)
	}
	must(t, s.PutResource(Resource("a.x", "1")))
	if alive == nil || len(alive.ID()) != 12 {
		t.Fatalf("the live holder %+v has no 12-digit lock id", alive)
	}
	h, err := b.ForceUnlock(state.UnlockOptions{Force: true, ID: alive.ID()})
	must(t, err)
	if h == nil || h.PID != os.Getpid() {
		t.Errorf("force-unlock returned holder %+v", h)
	}
	if err := s.PutResource(Resource("a.x", "2")); !errors.Is(err, state.ErrLockLost) {
		t.Errorf("old holder's write after a forced unlock: %v, want ErrLockLost", err)
	}
	s2 := open(t, b)
	r, err := s2.Resource("a.x")
	must(t, err)
	if valueOf(t, r) != "1" {
		t.Errorf("the broken holder's write landed: %s", r.Value)
	}
	must(t, s2.PutResource(Resource("a.x", "3")))
}

func testInvalid(t *testing.T, b state.Backend) {
	s := open(t, b)
	bad := Resource("a.x", "1")
	bad.Status = "weird"
	notype := Resource("a.x", "1")
	notype.Type = ""
	for name, err := range map[string]error{
		"empty address":  s.PutResource(Resource("", "1")),
		"NUL in address": s.PutResource(Resource("a.x\x00y", "1")),
		"bad status":     s.PutResource(bad),
		"no type":        s.PutResource(notype),
		"nil":            s.PutResource(nil),
		"intent no act":  s.PutIntent(&state.Intent{Address: "a.x"}),
		"history NUL":    func() error { _, err := s.History("a\x00"); return err }(),
	} {
		if !errors.Is(err, state.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if serial(t, s) != 0 {
		t.Errorf("refused writes bumped the serial")
	}
}

func testClosed(t *testing.T, b state.Backend) {
	s, err := b.Open(state.Options{})
	must(t, err)
	must(t, s.Close())
	must(t, s.Close()) // twice is fine
	if err := s.PutResource(Resource("a.x", "1")); !errors.Is(err, state.ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
	if _, err := s.Resources(); !errors.Is(err, state.ErrClosed) {
		t.Errorf("read after Close: %v", err)
	}
	// The lock was released.
	s2 := open(t, b)
	_ = s2
}
