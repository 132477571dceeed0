package sdk

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestProposedNewShortcut: ProposedNew returns prior itself exactly when
// building the proposal would give a value RawEqual to prior, and
// otherwise what building gives.
func TestProposedNewShortcut(t *testing.T) {
	b := &Block{
		Attributes: map[string]*Attribute{
			"input": {Type: cty.DynamicPseudoType, Optional: true},
			"tag":   {Type: cty.String, Optional: true, Computed: true},
			"id":    {Type: cty.String, Computed: true},
		},
		BlockTypes: map[string]*NestedBlock{
			"mount": {Nesting: NestingList, Block: Block{Attributes: map[string]*Attribute{"path": {Type: cty.String, Required: true}}}},
		},
	}
	mounts := cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/m")})})
	noMounts := cty.ListValEmpty(mounts.Type().ElementType())
	object := func(input, tag, id, mount cty.Value) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"input": input, "tag": tag, "id": id, "mount": mount})
	}
	config := func(input, tag, mount cty.Value) cty.Value {
		return object(input, tag, cty.NullVal(cty.String), mount)
	}
	a, one := cty.StringVal("a"), cty.NumberIntVal(1)
	nullStr := cty.NullVal(cty.String)
	prior := object(a, cty.StringVal("t"), cty.StringVal("x1"), mounts)
	for _, tc := range []struct {
		name          string
		prior, config cty.Value
		wantPrior     bool
	}{
		{"unchanged, computed taken from prior", prior, config(a, nullStr, mounts), true},
		{"unchanged, optional+computed set", prior, config(a, cty.StringVal("t"), mounts), true},
		{"input changed", prior, config(cty.StringVal("b"), nullStr, mounts), false},
		{"input's type changed", object(cty.StringVal("1"), cty.StringVal("t"), cty.StringVal("x1"), mounts), config(one, nullStr, mounts), false},
		{"optional+computed changed", prior, config(a, cty.StringVal("u"), mounts), false},
		{"block changed", prior, config(a, nullStr, noMounts), false},
		{"config sensitive", prior, config(a.Mark("sensitive"), nullStr, mounts), false},
		{"config unknown inside", prior, config(cty.UnknownVal(cty.String), nullStr, mounts), false},
		{"no prior", cty.NullVal(prior.Type()), config(a, nullStr, mounts), false},
		{"prior unknown", cty.UnknownVal(prior.Type()), config(a, nullStr, mounts), false},
		{"prior has an attribute the schema dropped", cty.ObjectVal(map[string]cty.Value{
			"input": a, "tag": cty.StringVal("t"), "id": cty.StringVal("x1"), "mount": mounts, "old": a}),
			config(a, nullStr, mounts), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ProposedNew(b, tc.prior, tc.config)
			built := buildProposed(b, tc.prior, tc.config)
			if !got.RawEquals(built) {
				t.Fatalf("ProposedNew = %#v, building gives %#v", got, built)
			}
			if is := proposesPrior(b, tc.prior, tc.config); is != tc.wantPrior {
				t.Errorf("shortcut taken = %v, want %v", is, tc.wantPrior)
			}
			if tc.wantPrior && !built.RawEquals(tc.prior) {
				t.Errorf("the shortcut's case builds %#v, not prior", built)
			}
		})
	}
}
