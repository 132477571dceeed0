package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func openLockFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A waiter blocked in flock gets the lock when the holder lets go, and
// one that gave up (ErrBusy) takes nothing with it: its late lock is
// dropped, so the file can be locked exclusively again. A writer's poll
// gives up after its wait too.
func TestFlockWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	holder := openLockFile(t, path)
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := flockWait(openLockFile(t, path), syscall.LOCK_SH, 50*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("flockWait on a held file: %v, want ErrBusy", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("gave up after %v, want at least the 50ms wait", waited)
	}

	start = time.Now()
	if err := flockPoll(openLockFile(t, path), syscall.LOCK_EX, 50*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Fatalf("flockPoll on a held file: %v, want ErrBusy", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("flockPoll gave up after %v, want at least the 50ms wait", waited)
	}

	got := make(chan error, 1)
	waiter := openLockFile(t, path)
	go func() { got <- flockWait(waiter, syscall.LOCK_SH, time.Minute) }()
	select {
	case err := <-got:
		t.Fatalf("flockWait returned %v while the file was held", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("flockWait after the holder let go: %v", err)
	}
	if err := syscall.Flock(int(waiter.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}

	// The waiter that gave up got its shared lock when the holder let go,
	// and closed its file: an exclusive lock is free again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned wait still holds the file: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// A read that cannot get in within readerWait fails with ErrBusy and says
// what to do.
func TestReadBusy(t *testing.T) {
	path := statePath(t)
	s := openStore(t, path)
	if err := s.PutResource(testResource("a.b", "v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	// A commit that hangs: the bbolt file's flock held exclusively.
	hung := openLockFile(t, path)
	if err := syscall.Flock(int(hung.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer func(w time.Duration) { readerWait = w }(readerWait)
	readerWait = 100 * time.Millisecond

	_, err := OpenReadOnly(path)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "try again") {
		t.Fatalf("read of a file locked by a hung commit: %v, want ErrBusy saying to try again", err)
	}
	syscall.Flock(int(hung.Fd()), syscall.LOCK_UN)
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("read after the commit let go: %v", err)
	}
	if _, err := r.Resource("a.b"); err != nil {
		t.Errorf("read after the commit let go: %v", err)
	}
	r.Close()
}
