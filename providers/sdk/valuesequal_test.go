package sdk

import (
	"fmt"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// oldValuesEqual is ValuesEqual as it was (cty's Equals on the whole
// value): the walk must answer the same on every pair.
func oldValuesEqual(a, b cty.Value) bool {
	if !a.IsWhollyKnown() || !b.IsWhollyKnown() {
		return false
	}
	if a.IsNull() || b.IsNull() {
		return a.IsNull() && b.IsNull()
	}
	return a.Equals(b).True()
}

func TestValuesEqualAgreesWithCty(t *testing.T) {
	obj := func(files ...string) cty.Value {
		l := cty.ListValEmpty(cty.String)
		if len(files) > 0 {
			vs := make([]cty.Value, len(files))
			for i, f := range files {
				vs[i] = cty.StringVal(f)
			}
			l = cty.ListVal(vs)
		}
		return cty.ObjectVal(map[string]cty.Value{"files": l, "n": cty.NumberIntVal(int64(len(files))), "m": cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")})})
	}
	vals := []cty.Value{
		cty.NullVal(cty.String), cty.NullVal(cty.Number), cty.UnknownVal(cty.String), cty.DynamicVal,
		cty.StringVal("a"), cty.StringVal("b"), cty.NumberIntVal(1), cty.NumberFloatVal(1.0), cty.NumberFloatVal(1.5), cty.True, cty.False,
		obj(), obj("a"), obj("a", "b"), obj("a", "c"), obj("b", "a"),
		cty.ObjectVal(map[string]cty.Value{"files": cty.ListVal([]cty.Value{cty.StringVal("a"), cty.UnknownVal(cty.String)})}),
		cty.ObjectVal(map[string]cty.Value{"x": cty.NullVal(cty.String)}), cty.ObjectVal(map[string]cty.Value{"x": cty.StringVal("")}),
		cty.ObjectVal(map[string]cty.Value{"x": cty.NullVal(cty.DynamicPseudoType)}),
		cty.ObjectVal(map[string]cty.Value{"x": cty.DynamicVal}),
		cty.SetVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), cty.SetVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a")}),
		cty.SetVal([]cty.Value{cty.StringVal("a"), cty.UnknownVal(cty.String)}),
		cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")}), cty.MapVal(map[string]cty.Value{"j": cty.StringVal("v")}),
		cty.MapVal(map[string]cty.Value{"k": cty.UnknownVal(cty.String)}),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1)}), cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(2)}),
		cty.ListVal([]cty.Value{cty.NullVal(cty.String)}), cty.ListVal([]cty.Value{cty.StringVal("x")}),
	}
	for i, a := range vals {
		for j, b := range vals {
			if got, want := ValuesEqual(a, b), oldValuesEqual(a, b); got != want {
				t.Errorf("ValuesEqual(%d %#v, %d %#v) = %v, cty says %v", i, a, j, b, got, want)
			}
		}
	}
}

// BenchmarkValuesEqual: two equal objects with a 1,000-element list of
// objects (docker_container's bind_files), as a no-op plan compares them.
func BenchmarkValuesEqual(b *testing.B) {
	mk := func() cty.Value {
		vs := make([]cty.Value, 1000)
		for i := range vs {
			vs[i] = cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal(fmt.Sprintf("/hub/blobs/b%d", i)), "target": cty.StringVal(fmt.Sprintf("/model/f%d", i)), "read_only": cty.True})
		}
		return cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("c"), "bind_files": cty.ListVal(vs)})
	}
	x, y := mk(), mk()
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			if !ValuesEqual(x, y) {
				b.Fatal("not equal")
			}
		}
	})
	b.Run("cty", func(b *testing.B) {
		for b.Loop() {
			if !oldValuesEqual(x, y) {
				b.Fatal("not equal")
			}
		}
	})
}
