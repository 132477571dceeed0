package realpart

import (
	"fmt"
	"os"
	"testing"
)

// Strict reports whether a missing part fails the test (CI is set)
// instead of skipping it.
func Strict() bool { return os.Getenv("CI") != "" }

// Missing ends t because the part described by format is missing: a
// failure under CI, a skip elsewhere.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	if Strict() {
		t.Fatalf("CI is set and a real part is missing: %s", what)
	}
	t.Skipf("skipped, a real part is missing: %s", what)
}

// Need returns when err is nil; otherwise it ends t as Missing does,
// naming what (with how to install it, where that helps) and err.
func Need(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		Missing(t, "%s: %v", what, err)
	}
}

// Optional is for a part the test can run without (an extra sshd node
// beside the local one): it returns true when err is nil; otherwise it
// fails t under CI, and elsewhere logs why the part is left out and
// returns false.
func Optional(t testing.TB, what string, err error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	if Strict() {
		t.Fatalf("CI is set and a real part is missing: %s: %v", what, err)
	}
	t.Logf("%s left out, it is missing: %v", what, err)
	return false
}
