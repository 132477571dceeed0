package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestLoadKeepsNoBodyCopy: a loaded resource block keeps its syntax and
// its Resource, not also a copy of its body with the meta-arguments hidden
// (PartialContent's remain: a Body and two maps, ~0.6 KB per block, ~6 MB
// of the bench's 10,000-block shape, live for the whole run). Resource.Config
// is the block's own body.
func TestLoadKeepsNoBodyCopy(t *testing.T) {
	const n = 2000
	var src strings.Builder
	src.WriteString("node \"local\" {\n  transport = \"local\"\n}\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&src, "\nresource \"sparkform_data\" \"r%d\" {\n  node  = node.local\n  input = \"seed-%d\"\n}\n", i, i)
	}
	dir := writeTree(t, map[string]string{"main.sf.hcl": src.String()})
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	mod, diags := LoadDir(dir)
	perBlock := (heap() - before) / n
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	runtime.KeepAlive(mod)
	// 3,105 B with the copy, 2,417 B without (go1.26, amd64).
	if perBlock > 2750 {
		t.Errorf("a resource block keeps %d B after loading, want <= 2750 (no second copy of its body)", perBlock)
	}
	for _, r := range mod.Resources {
		if attrs, _ := withoutMeta(r.Config).JustAttributes(); len(attrs) != 1 || attrs["input"] == nil {
			t.Fatalf("%s: the schema sees %v, want input alone", r.Addr, attrs)
		}
	}
}
