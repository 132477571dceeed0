package faultpause

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPause: the first caller announces itself and waits until resumed;
// a second caller in the same folder does not pause; a gone parent ends
// the wait with true.
func TestPause(t *testing.T) {
	dir := t.TempDir()
	done := make(chan bool, 1)
	go func() { done <- Pause(dir, "42 create x\n", nil) }()
	waitFor(t, filepath.Join(dir, "paused"))
	if b, _ := os.ReadFile(filepath.Join(dir, "paused")); string(b) != "42 create x\n" {
		t.Errorf("paused holds %q", b)
	}
	if Pause(dir, "second\n", nil) {
		t.Error("a second pause in a claimed folder waited")
	}
	select {
	case <-done:
		t.Fatal("returned before resume")
	case <-time.After(100 * time.Millisecond):
	}
	if err := os.WriteFile(filepath.Join(dir, "resume"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if gone := <-done; gone {
		t.Error("resumed, yet reported gone")
	}

	dir2 := t.TempDir()
	calls := 0
	if !Pause(dir2, "x\n", func() bool { calls++; return calls > 2 }) {
		t.Error("gone() true did not end the pause with true")
	}
}

func waitFor(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}
