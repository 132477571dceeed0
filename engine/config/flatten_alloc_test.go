package config

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/realpart"
)

// TestFlattenAllocationGrowthLinear: bringing in the instances of a module
// called with for_each over K keys allocates in proportion to K. The
// value of module.m (an object of K instances) was once written out as
// HCL text and parsed again, and hclsyntax parses a large object
// constructor in more than linear time and memory (about 16x the bytes
// for 10x the keys).
func TestFlattenAllocationGrowthLinear(t *testing.T) {
	// -short may leave it out on a laptop; under CI it always runs.
	if testing.Short() && !realpart.Strict() {
		t.Skip("flattens thousands of module instances")
	}
	dir := writeTree(t, map[string]string{
		"main.sf.hcl":     "variable \"items\" {}\n\nmodule \"m\" {\n  source   = \"./mod\"\n  for_each = var.items\n}\n",
		"mod/main.sf.hcl": "output \"o\" {\n  value = 1\n}\n",
	})
	root, diags := LoadDir(dir)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	items := func(k int) map[string]cty.Value {
		m := map[string]cty.Value{}
		for i := 0; i < k; i++ {
			m[fmt.Sprint("k", i)] = cty.StringVal(fmt.Sprint("seed-", i))
		}
		return map[string]cty.Value{"items": cty.MapVal(m)}
	}
	lo := 100
	var b [2]uint64
	for i, k := range []int{lo, 10 * lo} {
		vars := items(k)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		flat, d := Flatten(root, vars)
		runtime.ReadMemStats(&after)
		if d.HasErrors() {
			t.Fatal(d.Error())
		}
		if got := len(flat.Locals); got < k {
			t.Fatalf("%d keys: %d locals", k, got)
		}
		b[i] = after.TotalAlloc - before.TotalAlloc
	}
	ratio := float64(b[1]) / float64(b[0])
	t.Logf("Flatten, for_each over %d -> %d keys: %.1f MB -> %.1f MB allocated, %.2fx", lo, 10*lo, float64(b[0])/1e6, float64(b[1])/1e6, ratio)
	if ratio > 10.5 {
		t.Errorf("Flatten allocation grows %.2fx from %d to %d module instances, want <= 10.5x", ratio, lo, 10*lo)
	}
}
