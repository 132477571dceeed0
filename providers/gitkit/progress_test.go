package gitkit

import (
	"testing"

	"github.com/sparkform/sparkform/providers/sdk"
)

func TestParseGitProgress(t *testing.T) {
	for _, tc := range []struct {
		line string
		want sdk.Progress
		ok   bool
	}{
		{"remote: Counting objects:  45% (450/1000)", sdk.Progress{Message: "fetching: counting objects", Current: 450, Total: 1000, Unit: sdk.UnitObjects}, true},
		{"Receiving objects:  45% (450/1000), 1.20 MiB | 500.00 KiB/s", sdk.Progress{Message: "fetching: receiving objects, 1.20 MiB | 500.00 KiB/s", Current: 450, Total: 1000, Unit: sdk.UnitObjects}, true},
		{"Receiving objects: 100% (1000/1000), 3.10 GiB | 12.00 MiB/s, done.", sdk.Progress{Message: "fetching: receiving objects, 3.10 GiB | 12.00 MiB/s", Current: 1000, Total: 1000, Unit: sdk.UnitObjects}, true},
		{"Resolving deltas: 100% (5/5), done.", sdk.Progress{Message: "fetching: resolving deltas", Current: 5, Total: 5, Unit: sdk.UnitObjects}, true},
		{"remote: Compressing objects: 100% (3/3), done.", sdk.Progress{Message: "fetching: compressing objects", Current: 3, Total: 3, Unit: sdk.UnitObjects}, true},
		{"remote: Enumerating objects: 5, done.", sdk.Progress{}, false},
		{"fatal: couldn't find remote ref", sdk.Progress{}, false},
	} {
		got, ok := parseGitProgress(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseGitProgress(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestGitProgressThrottle(t *testing.T) {
	var th gitProgressThrottle
	n := 0
	for i := int64(0); i <= 1000; i++ {
		if th.due(sdk.Progress{Message: "fetching: receiving objects, 1 MiB", Current: i, Total: 1000}) {
			n++
		}
	}
	// the first and the last of a phase, and nothing between within 250 ms
	if n < 2 || n > 4 {
		t.Errorf("%d of 1001 lines passed the throttle, want 2..4", n)
	}
}
