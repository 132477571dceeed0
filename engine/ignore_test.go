package engine

import (
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

func TestApplyIgnoreChangesNested(t *testing.T) {
	b := &sdk.Block{Attributes: map[string]*sdk.Attribute{
		"image": {Type: cty.String, Optional: true},
		"env":   {Type: cty.Map(cty.String), Optional: true},
		"id":    {Type: cty.String, Computed: true},
	}}
	obj := func(image string, env map[string]string) cty.Value {
		m := map[string]cty.Value{}
		for k, v := range env {
			m[k] = cty.StringVal(v)
		}
		return cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal(image), "env": cty.MapVal(m), "id": cty.NullVal(cty.String)})
	}
	prior := obj("a", map[string]string{"TMPDIR": "/old", "X": "1"})
	cfg := obj("b", map[string]string{"TMPDIR": "/new", "X": "2"})
	trav := func(src string) hcl.Traversal {
		tr, d := hclsyntax.ParseTraversalAbs([]byte(src), "t", hcl.InitialPos)
		if d.HasErrors() {
			t.Fatal(d)
		}
		// config hands ignore_changes items over as relative traversals.
		rel := hcl.Traversal{hcl.TraverseAttr{Name: tr.RootName()}}
		return append(rel, tr[1:]...)
	}
	tests := []struct {
		name  string
		paths []hcl.Traversal
		want  cty.Value
	}{
		{"nothing ignored", nil, cfg},
		{"one map element", []hcl.Traversal{trav(`env["TMPDIR"]`)}, obj("b", map[string]string{"TMPDIR": "/old", "X": "2"})},
		{"a whole attribute", []hcl.Traversal{trav(`image`)}, obj("a", map[string]string{"TMPDIR": "/new", "X": "2"})},
		{"both", []hcl.Traversal{trav(`image`), trav(`env["X"]`)}, obj("a", map[string]string{"TMPDIR": "/new", "X": "1"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := applyIgnoreChanges(cfg, prior, false, tt.paths, b)
			if !got.RawEquals(tt.want) {
				t.Errorf("got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

// TestMarkSensitive: the named top-level attributes of an instance's value
// are marked for the references to it; nothing else is, and values it
// cannot mark attribute by attribute are left as they are.
func TestMarkSensitive(t *testing.T) {
	obj := cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("hunter2"), "id": cty.StringVal("x1"),
		"tags": cty.MapVal(map[string]cty.Value{"a": cty.StringVal("b")})})
	marked := func(v cty.Value, attr string) bool { return v.GetAttr(attr).HasMark(config.SensitiveMark) }
	for _, tc := range []struct {
		name  string
		v     cty.Value
		attrs []string
		want  []string // attributes marked after
	}{
		{"one attribute", obj, []string{"input"}, []string{"input"}},
		{"two, one not in the type", obj, []string{"input", "nope", "tags"}, []string{"input", "tags"}},
		{"none named", obj, nil, nil},
		{"already marked", MarkSensitive(obj, []string{"input"}), []string{"input"}, []string{"input"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MarkSensitive(tc.v, tc.attrs)
			for _, a := range []string{"input", "id", "tags"} {
				if want := slices.Contains(tc.want, a); marked(got, a) != want {
					t.Errorf("%s marked = %v, want %v", a, marked(got, a), want)
				}
			}
			if plain, _ := got.UnmarkDeep(); !plain.RawEquals(obj) {
				t.Errorf("the value changed: %#v", plain)
			}
		})
	}
	ty := obj.Type()
	for _, v := range []cty.Value{cty.NilVal, cty.NullVal(ty), cty.UnknownVal(ty), cty.DynamicVal, cty.StringVal("s"), obj.Mark(config.SensitiveMark)} {
		if got := MarkSensitive(v, []string{"input"}); !got.RawEquals(v) && v != cty.NilVal {
			t.Errorf("MarkSensitive(%#v) = %#v, want it unchanged", v, got)
		}
	}
}

// TestInstanceSensitive: the schema's sensitive attributes, the config's,
// and those sensitive with any of them.
func TestInstanceSensitive(t *testing.T) {
	b := &sdk.Block{Attributes: map[string]*sdk.Attribute{
		"input":  {Type: cty.String, Optional: true},
		"token":  {Type: cty.String, Optional: true, Sensitive: true},
		"output": {Type: cty.String, Computed: true, SensitiveWith: []string{"input"}},
		"hash":   {Type: cty.String, Computed: true, SensitiveWith: []string{"token", "input"}},
		"id":     {Type: cty.String, Computed: true},
	}}
	for _, tc := range []struct {
		config []string
		want   []string
	}{
		{nil, []string{"hash", "token"}},
		{[]string{"input"}, []string{"hash", "input", "output", "token"}},
		{[]string{"id"}, []string{"hash", "id", "token"}},
	} {
		if got := instanceSensitive(b, tc.config); !slices.Equal(got, tc.want) {
			t.Errorf("config %v: got %v, want %v", tc.config, got, tc.want)
		}
	}
	plain := &sdk.Block{Attributes: map[string]*sdk.Attribute{"output": {Type: cty.String, Computed: true, SensitiveWith: []string{"input"}}}}
	if got := instanceSensitive(plain, nil); got != nil {
		t.Errorf("nothing sensitive: got %v", got)
	}
}
