package sdk

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestConsistentWithPlan(t *testing.T) {
	obj := func(m map[string]cty.Value) cty.Value { return cty.ObjectVal(m) }
	reviewed := obj(map[string]cty.Value{
		"path":   cty.StringVal("/srv/kit"),
		"digest": cty.UnknownVal(cty.String),
		"env":    cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}),
		"files":  cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
		"note":   cty.NullVal(cty.String),
	})
	tests := []struct {
		name    string
		planned cty.Value
		want    string // "" = consistent
	}{
		{"same, unknown now known", obj(map[string]cty.Value{
			"path": cty.StringVal("/srv/kit"), "digest": cty.StringVal("sha256:x"),
			"env": cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}), "files": cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
			"note": cty.NullVal(cty.String)}), ""},
		{"known string changed", obj(map[string]cty.Value{
			"path": cty.StringVal("/srv/other"), "digest": cty.UnknownVal(cty.String),
			"env": cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}), "files": cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
			"note": cty.NullVal(cty.String)}), "path"},
		{"map value changed", obj(map[string]cty.Value{
			"path": cty.StringVal("/srv/kit"), "digest": cty.UnknownVal(cty.String),
			"env": cty.MapVal(map[string]cty.Value{"A": cty.StringVal("2")}), "files": cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
			"note": cty.NullVal(cty.String)}), `env["A"]`},
		{"list grew", obj(map[string]cty.Value{
			"path": cty.StringVal("/srv/kit"), "digest": cty.UnknownVal(cty.String),
			"env": cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}), "files": cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b"), cty.StringVal("c")}),
			"note": cty.NullVal(cty.String)}), "files"},
		{"null became a value", obj(map[string]cty.Value{
			"path": cty.StringVal("/srv/kit"), "digest": cty.UnknownVal(cty.String),
			"env": cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}), "files": cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
			"note": cty.StringVal("x")}), "note"},
		{"known value became unknown", obj(map[string]cty.Value{
			"path": cty.UnknownVal(cty.String), "digest": cty.UnknownVal(cty.String),
			"env": cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}), "files": cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
			"note": cty.NullVal(cty.String)}), "path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, ok := ConsistentWithPlan(reviewed, tt.planned)
			if ok != (tt.want == "") {
				t.Fatalf("consistent = %v at %q; want difference at %q", ok, DescribePath(path), tt.want)
			}
			if !ok && DescribePath(path) != tt.want {
				t.Errorf("difference at %q; want %q", DescribePath(path), tt.want)
			}
		})
	}
}
