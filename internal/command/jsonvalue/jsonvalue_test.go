package jsonvalue

import (
	"encoding/json"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestSensitive: a JSON document has null where a value is sensitive
// and Terraform's mask says where (true there; objects and arrays of the
// parts that hold one).
func TestSensitive(t *testing.T) {
	s := cty.StringVal
	v := cty.ObjectVal(map[string]cty.Value{
		"input": cty.ObjectVal(map[string]cty.Value{
			"env":  cty.MapVal(map[string]cty.Value{"TOKEN": s("hunter2"), "X": s("1")}),
			"args": cty.ListVal([]cty.Value{s("--serve"), s("hunter2")}),
		}),
		"id":     cty.UnknownVal(cty.String),
		"secret": s("hunter2"),
		"plain":  s("shown"),
	})
	for _, tc := range []struct {
		name      string
		paths     []string
		val, mask string
	}{
		{"none", nil,
			`{"id":null,"input":{"args":["--serve","hunter2"],"env":{"TOKEN":"hunter2","X":"1"}},"plain":"shown","secret":"hunter2"}`, `{}`},
		{"paths", []string{`input.env["TOKEN"]`, "input.args[1]", "secret"},
			`{"id":null,"input":{"args":["--serve",null],"env":{"TOKEN":null,"X":"1"}},"plain":"shown","secret":null}`,
			`{"input":{"args":[false,true],"env":{"TOKEN":true}},"secret":true}`},
		{"whole attribute", []string{"input"},
			`{"id":null,"input":null,"plain":"shown","secret":"hunter2"}`, `{"input":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			val, _, mask := Sensitive(v, tc.paths)
			for what, got := range map[string]any{tc.val: val, tc.mask: mask} {
				b, err := json.Marshal(got)
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != what {
					t.Errorf("got %s, want %s", b, what)
				}
			}
		})
	}
	// Not an object (an output): a mask of one value.
	if _, _, m := Sensitive(s("x"), nil); m != false {
		t.Errorf("mask of a plain string = %v", m)
	}
}
