package main

import (
	"runtime"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
)

// nested is a value depth levels deep, objects and lists in turn, with a
// string at the bottom: what a deeply nested sparkform_data input plans to.
func nested(depth int) cty.Value {
	v := cty.StringVal("leaf")
	for i := range depth {
		if i%2 == 0 {
			v = cty.ObjectVal(map[string]cty.Value{"a": v, "n": cty.NumberIntVal(int64(i))})
		} else {
			v = cty.TupleVal([]cty.Value{v})
		}
	}
	return v
}

type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// renderCost renders a plan creating one instance whose input is nested
// depth levels deep and returns the bytes allocated per byte written.
func renderCost(t *testing.T, depth int) float64 {
	after := cty.ObjectVal(map[string]cty.Value{"input": nested(depth), "output": cty.UnknownVal(cty.DynamicPseudoType)})
	p := &plans.Plan{Mode: plans.NormalMode, Changes: []*plans.ResourceChange{{
		Addr: "sparkform_data.deep", Resource: "sparkform_data.deep", Type: "sparkform_data",
		Action: plans.Create, Before: cty.NullVal(after.Type()), After: after,
	}}}
	w := &countingWriter{}
	var before, after2 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	(&renderer{w: w}).plan(p)
	runtime.ReadMemStats(&after2)
	if w.n == 0 {
		t.Fatal("nothing rendered")
	}
	return float64(after2.TotalAlloc-before.TotalAlloc) / float64(w.n)
}

// TestRenderCostLinearInOutput (issue 11, point 6): the text of a value
// nested d levels deep is O(d²) bytes (each level indents its lines), and
// rendering it must cost a bounded number of allocated bytes per byte of
// output at any depth. Rendering each level into a string that its parent
// copied made it O(d³): at depth 1,600 a plan took 19 s. Measured in
// bytes allocated, not time, so the test is exact on a loaded machine.
func TestRenderCostLinearInOutput(t *testing.T) {
	shallow, deep := renderCost(t, 100), renderCost(t, 800)
	t.Logf("allocated bytes per output byte: depth 100: %.1f, depth 800: %.1f", shallow, deep)
	if deep > 2*shallow+4 {
		t.Fatalf("rendering cost per output byte grows with depth (%.1f at 100, %.1f at 800): super-quadratic rendering", shallow, deep)
	}
}

func BenchmarkRenderDepth1600(b *testing.B) {
	after := cty.ObjectVal(map[string]cty.Value{"input": nested(1600), "output": cty.UnknownVal(cty.DynamicPseudoType)})
	p := &plans.Plan{Mode: plans.NormalMode, Changes: []*plans.ResourceChange{{
		Addr: "sparkform_data.deep", Resource: "sparkform_data.deep", Type: "sparkform_data",
		Action: plans.Create, Before: cty.NullVal(after.Type()), After: after,
	}}}
	for b.Loop() {
		(&renderer{w: &countingWriter{}}).plan(p)
	}
}
