package nodebin_test

import (
	"io"
	"runtime"
	"testing"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/providers/node/nodebin"
)

// TestBinaryReadsInPlace: handing out a binary costs no copy of it. The
// node check uploads it to every node of a fleet at once; a copy per
// node (embed.FS.ReadFile) put the first plan of 32 nodes over its
// 200 MiB peak (bench/fleet.sh).
func TestBinaryReadsInPlace(t *testing.T) {
	if nodebin.ID() == "" {
		realpart.Missing(t, "the node helper is not built into this test binary (run `make nodebin`)")
	}
	for _, arch := range []string{"amd64", "arm64"} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r, size, ok := nodebin.Binary(arch)
		runtime.ReadMemStats(&after)
		if !ok {
			t.Fatalf("no %s binary", arch)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
			t.Errorf("%s: Binary allocated %d bytes for a %d-byte binary: it must read the embedded bytes in place", arch, got, size)
		}
		n, err := io.Copy(io.Discard, r)
		if err != nil || n != size || size < 1<<20 {
			t.Errorf("%s: read %d bytes (%v), size says %d", arch, n, err, size)
		}
	}
}
