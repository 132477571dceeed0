package realpart_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/realpart"
)

// recorder stands in for the test a helper ends: Fatalf and Skipf stop
// the calling goroutine as the real ones do, and say how it ended.
type recorder struct {
	testing.TB
	ended, msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended, r.msg = "fail", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.ended, r.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Logf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

// run calls helper on a recorder in its own goroutine, as a test would.
func run(t *testing.T, helper func(testing.TB)) *recorder {
	r := &recorder{TB: t, ended: "returned"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		helper(r)
	}()
	<-done
	return r
}

func TestMissingPartFailsUnderCIAndSkipsElsewhere(t *testing.T) {
	missing := errors.New("no sshd here")
	cases := []struct {
		name   string
		ci     string
		helper func(testing.TB)
		want   string // fail, skip or returned
	}{
		{"Missing under CI", "true", func(t testing.TB) { realpart.Missing(t, "sshd (%v)", missing) }, "fail"},
		{"Missing without CI", "", func(t testing.TB) { realpart.Missing(t, "sshd (%v)", missing) }, "skip"},
		{"Need under CI (any value)", "1", func(t testing.TB) { realpart.Need(t, "sshd", missing) }, "fail"},
		{"Need without CI", "", func(t testing.TB) { realpart.Need(t, "sshd", missing) }, "skip"},
		{"Need, part here", "true", func(t testing.TB) { realpart.Need(t, "sshd", nil) }, "returned"},
		{"Optional under CI", "true", func(t testing.TB) {
			if realpart.Optional(t, "the sshd node", missing) {
				t.Fatalf("Optional returned true for a missing part")
			}
		}, "fail"},
		{"Optional without CI", "", func(t testing.TB) {
			if realpart.Optional(t, "the sshd node", missing) {
				t.Fatalf("Optional returned true for a missing part")
			}
		}, "returned"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			if got := realpart.Strict(); got != (tc.ci != "") {
				t.Fatalf("Strict() with CI=%q = %v", tc.ci, got)
			}
			r := run(t, tc.helper)
			if r.ended != tc.want {
				t.Fatalf("with CI=%q the helper ended the test with %q (%s), want %q", tc.ci, r.ended, r.msg, tc.want)
			}
			if tc.want != "returned" || tc.name == "Optional without CI" {
				if !strings.Contains(r.msg, "no sshd here") {
					t.Errorf("the reason is not in %q", r.msg)
				}
			}
		})
	}
}
