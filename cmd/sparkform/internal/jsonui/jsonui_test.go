package jsonui

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
)

func TestResource(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want map[string]any
	}{
		{`gitkit_checkout.kit["a"]`, map[string]any{"addr": `gitkit_checkout.kit["a"]`, "module": "", "resource": `gitkit_checkout.kit["a"]`,
			"resource_type": "gitkit_checkout", "resource_name": "kit", "resource_key": "a", "implied_provider": "gitkit", "node": `node.n["a"]`}},
		{`kmod_module.drm[0]`, map[string]any{"addr": `kmod_module.drm[0]`, "module": "", "resource": `kmod_module.drm[0]`,
			"resource_type": "kmod_module", "resource_name": "drm", "resource_key": float64(0), "implied_provider": "gitkit", "node": `node.n["a"]`}},
		{`module.serve["b"].docker_container.c`, map[string]any{"addr": `module.serve["b"].docker_container.c`, "module": `module.serve["b"]`,
			"resource": "docker_container.c", "resource_type": "docker_container", "resource_name": "c", "resource_key": nil,
			"implied_provider": "gitkit", "node": `node.n["a"]`}},
	} {
		b, _ := json.Marshal(Resource(tc.addr, "gitkit", `node.n["a"]`))
		var got map[string]any
		json.Unmarshal(b, &got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Resource(%s) = %v\nwant %v", tc.addr, got, tc.want)
		}
	}
}

func TestObjectID(t *testing.T) {
	obj := func(attrs map[string]cty.Value) cty.Value { return cty.ObjectVal(attrs) }
	for _, tc := range []struct {
		name      string
		obj       cty.Value
		sensitive []string
		key, val  string
	}{
		{"id", obj(map[string]cty.Value{"id": cty.StringVal("abc"), "name": cty.StringVal("n")}), nil, "id", "abc"},
		{"name when no id", obj(map[string]cty.Value{"name": cty.StringVal("n")}), nil, "name", "n"},
		{"name when the id is sensitive", obj(map[string]cty.Value{"id": cty.StringVal("s3cret"), "name": cty.StringVal("n")}), []string{"id"}, "name", "n"},
		{"unknown id", obj(map[string]cty.Value{"id": cty.UnknownVal(cty.String)}), nil, "", ""},
		{"marked id", obj(map[string]cty.Value{"id": cty.StringVal("s3cret").Mark("sensitive")}), nil, "", ""},
		{"empty id", obj(map[string]cty.Value{"id": cty.StringVal("")}), nil, "", ""},
		{"number id", obj(map[string]cty.Value{"id": cty.NumberIntVal(3)}), nil, "", ""},
		{"neither", obj(map[string]cty.Value{"path": cty.StringVal("/x")}), nil, "", ""},
		{"null object (deleted)", cty.NullVal(cty.Object(map[string]cty.Type{"id": cty.String})), nil, "", ""},
		{"no object", cty.NilVal, nil, "", ""},
	} {
		if k, v := ObjectID(tc.obj, tc.sensitive); k != tc.key || v != tc.val {
			t.Errorf("%s: objectID = %q, %q; want %q, %q", tc.name, k, v, tc.key, tc.val)
		}
	}
}

// TestReason: sparkform's reasons in Terraform's words, where it has
// them; the texts are the engine's (engine/plan_instance.go, plan_normal.go).
func TestReason(t *testing.T) {
	for _, tc := range []struct {
		c    plans.ResourceChange
		want string
	}{
		{plans.ResourceChange{Addr: "a.b", Action: plans.DeleteThenCreate, Reason: "tainted: an earlier apply did not finish creating it"}, "tainted"},
		{plans.ResourceChange{Addr: "a.b", Action: plans.CreateThenDelete, Reason: "replacement requested with -replace"}, "requested"},
		{plans.ResourceChange{Addr: "a.b", Action: plans.DeleteThenCreate, RequiresReplace: []cty.Path{cty.GetAttrPath("x")}}, "cannot_update"},
		{plans.ResourceChange{Addr: "a.b", Action: plans.DeleteThenCreate, Reason: "it moves from node.a to node.b"}, ""},
		{plans.ResourceChange{Addr: "a.b", Action: plans.Delete, Reason: "no longer in the configuration"}, "delete_because_no_resource_config"},
		{plans.ResourceChange{Addr: `a.b["k"]`, Action: plans.Delete, Reason: "its key is no longer produced by for_each/count"}, "delete_because_each_key"},
		{plans.ResourceChange{Addr: "a.b[2]", Action: plans.Delete, Reason: "its key is no longer produced by for_each/count"}, "delete_because_count_index"},
		{plans.ResourceChange{Addr: "a.b", Action: plans.Delete, Reason: "its key is no longer produced by for_each/count"}, "delete_because_wrong_repetition"},
		{plans.ResourceChange{Addr: "a.b", Action: plans.Update}, ""},
	} {
		if got := Reason(&tc.c); got != tc.want {
			t.Errorf("Reason(%s %s %q) = %q, want %q", tc.c.Addr, tc.c.Action, tc.c.Reason, got, tc.want)
		}
	}
}

func TestValueStatement(t *testing.T) {
	for _, tc := range []struct {
		v    cty.Value
		want string
	}{
		{cty.StringVal(`a"b`), `is "a\"b"`},
		{cty.NumberIntVal(42), "is 42"},
		{cty.NumberFloatVal(1.5), "is 1.5"},
		{cty.True, "is true"},
		{cty.NullVal(cty.String), "is null"},
		{cty.UnknownVal(cty.String), "is a string, known only after apply"},
		{cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), "is list of string with 2 elements"},
		{cty.MapVal(map[string]cty.Value{"a": cty.NumberIntVal(1)}), "is map of number with 1 element"},
		{cty.TupleVal([]cty.Value{cty.True}), "is tuple with 1 element"},
		{cty.ObjectVal(map[string]cty.Value{"a": cty.True, "b": cty.True}), "is object with 2 attributes"},
	} {
		if got := valueStatement(tc.v); got != tc.want {
			t.Errorf("valueStatement(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
