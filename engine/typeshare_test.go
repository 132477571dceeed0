package engine

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/sparkform/sparkform/internal/heaptest"
	"github.com/zclconf/go-cty/cty"
)

// TestTypeShare: a shared value is the value it was (RawEquals, unknowns
// and nested values included), and many values of one type keep one type
// between them: each kept its own, ~300 B, as much as its attributes.
func TestTypeShare(t *testing.T) {
	mk := func(i int) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{
			"id":     cty.StringVal("x"),
			"input":  cty.UnknownVal(cty.String).RefineNotNull(),
			"output": cty.NullVal(cty.DynamicPseudoType),
			"nested": cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(int64(i))}),
		})
	}
	var ts typeShare
	for i := range 3 {
		v := mk(i)
		if got := ts.share("t", v); !got.RawEquals(v) {
			t.Fatalf("shared %#v, want %#v", got, v)
		}
	}
	// What is not shared comes back as it was.
	other := cty.ObjectVal(map[string]cty.Value{"id": cty.NumberIntVal(1)}) // another type of t
	marked := mk(9).Mark("sensitive")
	for _, v := range []cty.Value{cty.NilVal, cty.StringVal("s"), other, marked, cty.NullVal(mk(0).Type()), cty.UnknownVal(mk(0).Type())} {
		if got := ts.share("t", v); got != cty.NilVal && !got.RawEquals(v) || got == cty.NilVal && v != cty.NilVal {
			t.Errorf("shared %#v, want it as it was", v)
		}
	}
	for i := range maxSharedTypes + 3 { // types past the bound are not kept
		ts.share("many", cty.ObjectVal(map[string]cty.Value{fmt.Sprintf("a%d", i): cty.True}))
	}
	if n := len(ts.kinds["many"]); n > maxSharedTypes {
		t.Errorf("%d types kept for one kind, want at most %d", n, maxSharedTypes)
	}

	const n = 5000
	kept := func(share bool) int64 {
		var ts typeShare
		vals := make([]cty.Value, n)
		per := heaptest.Added(n, func() {
			for i := range vals {
				vals[i] = mk(i)
				if share {
					vals[i] = ts.share("t", vals[i])
				}
			}
		})
		runtime.KeepAlive(vals)
		return per
	}
	own, shared := kept(false), kept(true)
	t.Logf("a value keeps %d B with a type of its own, %d B with its type shared", own, shared)
	// go1.26, amd64: 1,496 B and 792 B.
	if shared > own*3/4 {
		t.Errorf("a shared value keeps %d B, want at most 3/4 of the %d B it keeps alone", shared, own)
	}
}
