package config

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestFlattenAllocationGrowthLinear: bringing in the instances of a module
// called with for_each over K keys allocates in proportion to K. The
// value of module.m (an object of K instances) was once written out as
// HCL text and parsed again, and hclsyntax parses a large object
// constructor in more than linear time and memory (about 16x the bytes
// for 10x the keys).
func TestFlattenAllocationGrowthLinear(t *testing.T) {
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

// TestFlattenInstanceCostBelowParsedCopy: a module instance keeps less
// than one parsed copy of its module. Every instance once re-parsed the
// module's folder (its references were rewritten in place), so K
// instances kept K syntax trees: the main retained heap of the bench's
// module shape (1,000 instances of a 10-resource module).
func TestFlattenInstanceCostBelowParsedCopy(t *testing.T) {
	var mod strings.Builder
	mod.WriteString("variable \"seed\" {}\n\nnode \"n\" {\n  transport = \"local\"\n}\n")
	prev := "var.seed"
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&mod, "\nresource \"sparkform_data\" \"r%d\" {\n  node  = node.n\n  input = {\n    from = %s\n    name = \"r%d-${var.seed}\"\n    tags = [\"a\", \"b\"]\n  }\n}\n", i, prev, i)
		prev = fmt.Sprintf("sparkform_data.r%d.id", i)
	}
	mod.WriteString("\noutput \"last\" {\n  value = sparkform_data.r9.id\n}\n")
	dir := writeTree(t, map[string]string{
		"main.sf.hcl":     "variable \"items\" {}\n\nmodule \"m\" {\n  source   = \"./mod\"\n  for_each = var.items\n  seed     = each.value\n}\n",
		"mod/main.sf.hcl": mod.String(),
	})
	before := liveHeap()
	parsed, diags := LoadDir(filepath.Join(dir, "mod"))
	copyBytes := liveHeap() - before
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	runtime.KeepAlive(parsed)

	root, diags := LoadDir(dir)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	const k = 500
	items := map[string]cty.Value{}
	for i := 0; i < k; i++ {
		items[fmt.Sprint("k", i)] = cty.StringVal(fmt.Sprint("seed-", i))
	}
	vars := map[string]cty.Value{"items": cty.MapVal(items)}
	before = liveHeap()
	flat, d := Flatten(root, vars)
	perInstance := (liveHeap() - before) / k
	if d.HasErrors() {
		t.Fatal(d.Error())
	}
	if len(flat.Resources) != 10*k {
		t.Fatalf("%d resources, want %d", len(flat.Resources), 10*k)
	}
	runtime.KeepAlive(flat)
	t.Logf("one parsed copy of the module: %d B; kept per module instance: %d B", copyBytes, perInstance)
	if perInstance >= copyBytes {
		t.Errorf("a module instance keeps %d B, a parsed copy of its module is %d B: instances should share the module's syntax", perInstance, copyBytes)
	}
}
