package sdk

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestHasMarks: HasMarks agrees with cty's ContainsMarked.
func TestHasMarks(t *testing.T) {
	secret := cty.StringVal("s").Mark("sensitive")
	for _, c := range []struct {
		v    cty.Value
		want bool
	}{
		{cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x")}), false},
		{cty.ObjectVal(map[string]cty.Value{"a": cty.ObjectVal(map[string]cty.Value{"p": secret})}), true},
		{cty.ObjectVal(map[string]cty.Value{"m": cty.MapVal(map[string]cty.Value{"k": secret})}), true},
		{cty.ObjectVal(map[string]cty.Value{"l": cty.ListVal([]cty.Value{cty.StringVal("x"), secret})}), true},
		{cty.ObjectVal(map[string]cty.Value{"t": cty.TupleVal([]cty.Value{cty.NullVal(cty.String)})}), false},
		{secret, true},
		{cty.NilVal, false},
	} {
		if got := HasMarks(c.v); got != c.want || (c.v != cty.NilVal && got != c.v.ContainsMarked()) {
			t.Errorf("HasMarks(%#v) = %v, want %v", c.v, got, c.want)
		}
	}
}
