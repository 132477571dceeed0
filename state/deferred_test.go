package state

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Tests of the deferred Complete (commit.go): it is queued, not waited
// for; it is durable once a later write returns, or Flush or Close does;
// a crash before that leaves its intent; its error comes back later.

// killChild is kill -9 of a child writer.
func killChild(c *child) {
	c.cmd.Process.Signal(syscall.SIGKILL)
	c.cmd.Wait()
}

// A writer killed right after an intent that was queued behind a
// Complete: that Complete is durable (the next provider call never starts
// before the result it may depend on is stored).
func TestCompleteDurableBeforeNextIntent(t *testing.T) {
	path := statePath(t)
	c := startChild(t, "complete-then-intent", path)
	c.expect(t, "locked")
	c.expect(t, "intent a.y")
	killChild(c)

	s := openStore(t, path)
	r, err := s.Resource("a.x")
	if err != nil || !jsonEqual(r.Value, testResource("a.x", "applied").Value) {
		t.Errorf("a.x after the kill: %+v %v, want its result stored", r, err)
	}
	in, err := s.Intents()
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 1 || in[0].Address != "a.y" {
		t.Errorf("intents after the kill: %+v, want a.y's alone (a.x's cleared with its result)", in)
	}
}

// A writer killed with a Complete queued and not yet committed: the
// intent is still in the journal (what recovery refreshes), the result is
// not half-stored, and the file is sound.
func TestCompleteLostLeavesIntent(t *testing.T) {
	path := statePath(t)
	c := startChild(t, "complete-lost", path)
	c.expect(t, "locked")
	c.expect(t, "paused")
	killChild(c)

	s := openStore(t, path)
	if _, err := s.Resource("a.x"); !errors.Is(err, ErrResourceNotFound) {
		t.Errorf("a.x after the kill: %v, want not in state (its Complete was never committed)", err)
	}
	in, err := s.Intents()
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 1 || in[0].Address != "a.x" || in[0].Action != "create" || in[0].Resource == nil ||
		!jsonEqual(in[0].Resource.Value, testResource("a.x", "planned").Value) {
		t.Errorf("intents after the kill: %+v, want a.x's create", in)
	}
}

// Close commits every queued Complete; reads see them at once; Flush with
// nothing queued writes nothing.
func TestCompleteFlushedOnClose(t *testing.T) {
	path := statePath(t)
	checkOnCleanup(t, path)
	s, err := Open(path, Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		a := fmt.Sprintf("a.x[%d]", i)
		must(t, s.PutIntent(&Intent{Address: a, Action: "create"}))
		must(t, s.Complete(a, testResource(a, fmt.Sprint(i))))
	}
	if r, err := s.Resource("a.x[7]"); err != nil || !jsonEqual(r.Value, testResource("a.x[7]", "7").Value) {
		t.Errorf("read after a queued Complete: %+v %v, want the writer's own result", r, err)
	}
	must(t, s.Flush())
	commits := s.commits.Load()
	must(t, s.Flush())
	if got := s.commits.Load(); got != commits {
		t.Errorf("Flush with nothing queued made %d commits", got-commits)
	}
	for i := range n {
		a := fmt.Sprintf("a.y[%d]", i)
		must(t, s.PutIntent(&Intent{Address: a, Action: "create"}))
		must(t, s.Complete(a, testResource(a, "y")))
	}
	must(t, s.Close())

	r := openStore(t, path)
	snap, err := r.Snapshot()
	must(t, err)
	if len(snap.Resources) != 2*n || len(snap.Intents) != 0 || snap.Meta.Serial != 2*n {
		t.Errorf("after Close: %d resources, %d intents, serial %d; want %d, 0, %d", len(snap.Resources), len(snap.Intents), snap.Meta.Serial, 2*n, 2*n)
	}
}

// A deferred write that fails: the writes queued with it are committed
// without it, its intent stays, the next PutIntent refuses (and journals
// nothing), and Flush and Close report it naming the address.
func TestDeferredErrorPropagates(t *testing.T) {
	path := statePath(t)
	checkOnCleanup(t, path)
	s, err := Open(path, Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk says no")
	must(t, s.PutIntent(&Intent{Address: "a.bad", Action: "create"}))
	must(t, s.PutIntent(&Intent{Address: "a.ok", Action: "create"}))
	// Complete's own op with a failure injected: what a bbolt Put that
	// fails inside the transaction looks like to the commit loop.
	must(t, s.submitDeferred("a.bad", 0, func(*bolt.Tx, *commitCtx) error { return boom }))
	must(t, s.Complete("a.ok", testResource("a.ok", "done")))
	if err := s.PutIntent(&Intent{Address: "a.next", Action: "create"}); !errors.Is(err, boom) || !strings.Contains(err.Error(), "a.bad") {
		t.Errorf("PutIntent after a failed Complete: %v, want the failure naming a.bad", err)
	}
	if err := s.Flush(); !errors.Is(err, boom) {
		t.Errorf("Flush: %v, want the failure", err)
	}
	if err := s.Close(); !errors.Is(err, boom) {
		t.Errorf("Close: %v, want the failure", err)
	}

	r := openStore(t, path)
	snap, err := r.Snapshot()
	must(t, err)
	if len(snap.Resources) != 1 || snap.Resources[0].Address != "a.ok" {
		t.Errorf("resources %v, want a.ok's result (committed without the failed write)", snap.Resources)
	}
	if len(snap.Intents) != 1 || snap.Intents[0].Address != "a.bad" {
		t.Errorf("intents %v, want a.bad's alone (a.next never journaled)", snap.Intents)
	}
}

// A commit that fails as a whole (the lock broken by a forced unlock):
// Flush reports it for the queued Complete.
func TestDeferredCommitFailure(t *testing.T) {
	path := statePath(t)
	checkOnCleanup(t, path)
	s, err := Open(path, Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.PutIntent(&Intent{Address: "a.x", Action: "create"}))
	if _, err := ForceUnlock(path, UnlockOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete("a.x", testResource("a.x", "done")); err != nil {
		t.Fatalf("Complete is queued, its error comes later: %v", err)
	}
	if err := s.Flush(); !errors.Is(err, ErrLockLost) || !strings.Contains(err.Error(), "a.x") {
		t.Errorf("Flush after the lock was broken: %v, want ErrLockLost for a.x", err)
	}
	if err := s.PutIntent(&Intent{Address: "a.y", Action: "create"}); !errors.Is(err, ErrLockLost) {
		t.Errorf("PutIntent: %v, want ErrLockLost", err)
	}
	if err := s.Close(); !errors.Is(err, ErrLockLost) {
		t.Errorf("Close: %v, want ErrLockLost", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Completes queued alone wait for more (up to deferLinger) and share one
// commit; a write someone waits for (Flush, PutIntent) ends the wait and
// is committed with them. Before, each Complete that found the loop idle
// was committed at once, alone. The linger is set far longer than the
// test, so that only the waited write can end it.
func TestDeferredCompletesShareCommit(t *testing.T) {
	s := lingeringStore(t)
	for _, end := range []struct {
		name  string
		write func(i int) error
	}{
		{"Flush", func(int) error { return s.Flush() }},
		{"PutIntent", func(i int) error { return s.PutIntent(&Intent{Address: fmt.Sprintf("b.x[%d]", i), Action: "create"}) }},
	} {
		commits := s.commits.Load()
		for i := range 3 {
			a := fmt.Sprintf("a.%s[%d]", end.name, i)
			must(t, s.Complete(a, testResource(a, "done")))
			time.Sleep(50 * time.Millisecond) // the loop has long seen the first
		}
		start := time.Now()
		must(t, end.write(0))
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s waited %v: it did not end the Completes' wait", end.name, d)
		}
		if got := s.commits.Load() - commits; got != 1 {
			t.Errorf("3 Completes then %s made %d commits, want 1", end.name, got)
		}
		for i := range 3 {
			if _, err := s.Resource(fmt.Sprintf("a.%s[%d]", end.name, i)); err != nil {
				t.Errorf("after %s: %v", end.name, err)
			}
		}
	}
}

// A batch takes no more writes once it holds maxBatchBytes of records:
// five queued Completes of 5 MiB each commit as four (20 MiB, the fourth
// joining at 15) and then one, not as one transaction of 25 MiB.
func TestDeferredBatchBytes(t *testing.T) {
	s := lingeringStore(t)
	big := strings.Repeat("x", 5<<19) // input and output: a 5 MiB value
	commits := s.commits.Load()
	for i := range 5 {
		a := fmt.Sprintf("a.big[%d]", i)
		must(t, s.Complete(a, testResource(a, big)))
	}
	// The first four fill a batch, committed at once; the fifth waits for
	// more until Flush.
	deadline := time.Now().Add(10 * time.Second)
	for s.commits.Load()-commits < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	must(t, s.Flush())
	if got := s.commits.Load() - commits; got != 2 {
		t.Errorf("5 Completes of 5 MiB made %d commits, want 2 (a full batch, then the rest at Flush)", got)
	}
	for i := range 5 {
		if _, err := s.Resource(fmt.Sprintf("a.big[%d]", i)); err != nil {
			t.Error(err)
		}
	}
}

// lingeringStore is a new store whose Completes queued alone wait a
// minute for more (deferLinger), longer than any test: only a full batch
// or a write someone waits for ends the wait.
func lingeringStore(t *testing.T) *BoltStore {
	t.Helper()
	old := deferLinger
	deferLinger = time.Minute
	path := statePath(t)
	checkOnCleanup(t, path)
	s, err := Open(path, Options{Command: "test"})
	if err != nil {
		deferLinger = old
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		deferLinger = old
	})
	return s
}
