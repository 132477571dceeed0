package testbed

import (
	"errors"
	"testing"

	"github.com/sparkform/sparkform/internal/realpart"
)

// StartT starts a bed of n nodes under t.TempDir() and stops it when the
// test ends. When the bed cannot run here the test is skipped, or fails
// when CI=true (a CI run must never silently skip real parts).
func StartT(t testing.TB, n int) *Bed {
	t.Helper()
	realpart.Need(t, "the sshd test bed", Available())
	b, err := Start(t.TempDir(), n)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			realpart.Missing(t, "the sshd test bed: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("testbed stop: %v", err)
		}
	})
	return b
}

// StartBehindJumpsT is StartBehindJumps under t.TempDir(), stopped when
// the test ends; skipped (or failed under CI=true) when it cannot run.
func StartBehindJumpsT(t testing.TB, jumps, n int) *Bed {
	t.Helper()
	realpart.Need(t, "the sshd test bed", Available())
	b, err := StartBehindJumps(t.TempDir(), jumps, n)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			realpart.Missing(t, "the sshd test bed: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("testbed stop: %v", err)
		}
	})
	return b
}
