package jsonstate

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/internal/tfjsoncheck"
	"github.com/sparkform/sparkform/state"
)

func record(t *testing.T, addr, typ string, v cty.Value, sens ...string) *state.Resource {
	t.Helper()
	raw, err := engine.EncodeValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return &state.Resource{Address: addr, Type: typ, Provider: "sparkform", Value: raw, SensitiveAttrs: sens,
		Status: state.StatusReady, Node: json.RawMessage(`{"Name":"node.local","Transport":"local"}`)}
}

// TestFromState: the state document as terraform-json reads it, with
// every kind of record: root and nested module instances, count and
// for_each keys, a tainted and a deposed object, sensitive paths and
// sensitive outputs.
func TestFromState(t *testing.T) {
	s := cty.StringVal
	in := func(v string) cty.Value { return cty.ObjectVal(map[string]cty.Value{"input": s(v)}) }
	tainted := record(t, "sparkform_data.t", "sparkform_data", in("t"))
	tainted.Status = state.StatusTainted
	tainted.SchemaVersion = 2
	recs := []*state.Resource{
		record(t, `module.a["x"].module.b[0].sparkform_data.c[1]`, "sparkform_data", in("deep")),
		record(t, `module.a["x"].sparkform_data.d`, "sparkform_data", in("mid")),
		record(t, `sparkform_data.e["k"]`, "sparkform_data", cty.ObjectVal(map[string]cty.Value{
			"input": cty.MapVal(map[string]cty.Value{"TOKEN": s("hunter2"), "X": s("x")})}), `input["TOKEN"]`),
		record(t, "sparkform_data.cbd#deposed", "sparkform_data", in("old")),
		tainted,
	}
	secret, _ := engine.EncodeValue(s("hunter2"))
	plain, _ := engine.EncodeValue(cty.ListVal([]cty.Value{s("a")}))
	outs := map[string]state.Output{"secret": {Value: secret, Sensitive: true}, "plain": {Value: plain}}
	doc, err := FromState(state.Meta{Lineage: "l", Serial: 3}, recs, outs, "0.1.0-test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("hunter2")) {
		t.Fatalf("a sensitive value is written:\n%s", b)
	}
	st, err := tfjsoncheck.State(b)
	if err != nil {
		t.Fatalf("terraform-json: %v\n%s", err, b)
	}
	root := st.Values.RootModule
	if len(root.Resources) != 3 || len(root.ChildModules) != 1 {
		t.Fatalf("root module: %d resources, %d child modules:\n%s", len(root.Resources), len(root.ChildModules), b)
	}
	a := root.ChildModules[0]
	if a.Address != `module.a["x"]` || len(a.Resources) != 1 || len(a.ChildModules) != 1 ||
		a.ChildModules[0].Address != `module.a["x"].module.b[0]` || a.ChildModules[0].Resources[0].Index != json.Number("1") {
		t.Errorf("module tree:\n%s", b)
	}
	byAddr := map[string]int{}
	for i, r := range root.Resources {
		byAddr[r.Address] = i
	}
	if r := root.Resources[byAddr["sparkform_data.cbd"]]; r.DeposedKey != DeposedKey {
		t.Errorf("deposed object: %+v", r)
	}
	if r := root.Resources[byAddr["sparkform_data.t"]]; !r.Tainted || r.SchemaVersion != 2 {
		t.Errorf("tainted object: %+v", r)
	}
	if r := root.Resources[byAddr[`sparkform_data.e["k"]`]]; r.Index != "k" || string(r.SensitiveValues) != `{"input":{"TOKEN":true}}` {
		t.Errorf("sensitive object: index %v, sensitive_values %s", r.Index, r.SensitiveValues)
	}
	if o := st.Values.Outputs["secret"]; !o.Sensitive || o.Value != nil || o.Type != cty.String {
		t.Errorf("sensitive output: %+v", o)
	}
	if o := st.Values.Outputs["plain"]; o.Type != cty.List(cty.String) {
		t.Errorf("output type: %#v", o.Type)
	}
}

// TestEmpty: no state yet is a document with a version and no values.
func TestEmpty(t *testing.T) {
	b, _ := json.Marshal(Empty("x"))
	if string(b) != `{"format_version":"1.0","terraform_version":"x"}` {
		t.Errorf("%s", b)
	}
	if _, err := tfjsoncheck.State(b); err != nil {
		t.Error(err)
	}
}
