package jsonplan

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/internal/tfjsoncheck"
	"github.com/sparkform/sparkform/providers/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func obj(m map[string]cty.Value) cty.Value { return cty.ObjectVal(m) }

var s = cty.StringVal

// everyKind is a plan with every kind of change the format describes:
// create (for_each, with unknowns), update (count, sensitive), delete
// (no longer in config, count index gone), replace both ways (forced by an
// attribute, tainted, by request), a deposed object, a move (moved
// block), a module instance inside another, drift, and outputs that are
// new, changed, removed, unchanged and sensitive.
func everyKind() *plans.Plan {
	n1 := &sdk.Node{Name: `node.spark["spark-01"]`, Transport: "local"}
	n2 := &sdk.Node{Name: `node.spark["spark-02"]`, Transport: "local"}
	ctr := func(image string, env cty.Value) cty.Value {
		return obj(map[string]cty.Value{"name": s("serve"), "image": s(image), "env": env, "id": s("c0ffee")})
	}
	env := cty.MapVal(map[string]cty.Value{"TOKEN": s("hunter2"), "MODE": s("serve")})
	p := &plans.Plan{
		FormatVersion: plans.FormatVersion, Lineage: "3f1c", Serial: 7, Mode: plans.NormalMode,
		Created:   time.Date(2026, 12, 6, 11, 0, 0, 0, time.UTC),
		Variables: map[string]cty.Value{"image": s("busybox:1"), "token": s("hunter2")},
		Moves:     []plans.Move{{From: "sparkform_data.old", To: "sparkform_data.new"}},
		Notes:     []string{"an interrupted apply was found"},
	}
	p.Changes = []*plans.ResourceChange{
		{Addr: `docker_container.serve["spark-01"]`, Resource: "docker_container.serve", Type: "docker_container", Provider: "docker", Node: n1,
			Action: plans.Create, Before: cty.NullVal(ctr("x", env).Type()),
			After:          obj(map[string]cty.Value{"name": s("serve"), "image": s("busybox:1"), "env": env, "id": cty.UnknownVal(cty.String)}),
			SensitiveAttrs: []string{`env["TOKEN"]`}, Dependencies: []string{"docker_image.bb"}},
		{Addr: `docker_container.serve["spark-02"]`, Resource: "docker_container.serve", Type: "docker_container", Provider: "docker", Node: n2, PriorNode: n2,
			Action: plans.DeleteThenCreate, Before: ctr("busybox:0", env), After: obj(map[string]cty.Value{"name": s("serve"), "image": s("busybox:1"), "env": env, "id": cty.UnknownVal(cty.String)}),
			RequiresReplace: []cty.Path{cty.GetAttrPath("image")}, SensitiveAttrs: []string{`env["TOKEN"]`}},
		{Addr: "module.recipe[\"a\"].module.rank[0].sparkform_data.cfg[1]", Resource: "module.recipe[\"a\"].module.rank[0].sparkform_data.cfg", Type: "sparkform_data", Provider: "sparkform",
			Action: plans.Update, Before: obj(map[string]cty.Value{"input": s("a")}), After: obj(map[string]cty.Value{"input": s("b")})},
		{Addr: "sparkform_data.gone", Resource: "sparkform_data.gone", Type: "sparkform_data", Provider: "sparkform",
			Action: plans.Delete, Reason: "no longer in the configuration", Before: obj(map[string]cty.Value{"input": s("x")}), After: cty.NullVal(cty.Object(map[string]cty.Type{"input": cty.String}))},
		{Addr: "sparkform_data.idx[2]", Resource: "sparkform_data.idx", Type: "sparkform_data", Provider: "sparkform",
			Action: plans.Delete, Reason: "its key is no longer produced by for_each/count", Before: obj(map[string]cty.Value{"input": s("x")}), After: cty.NullVal(cty.Object(map[string]cty.Type{"input": cty.String}))},
		{Addr: "sparkform_data.new", Resource: "sparkform_data.new", Type: "sparkform_data", Provider: "sparkform",
			Action: plans.NoOp, Before: obj(map[string]cty.Value{"input": s("kept")}), After: obj(map[string]cty.Value{"input": s("kept")})},
		{Addr: "sparkform_data.tainted", Resource: "sparkform_data.tainted", Type: "sparkform_data", Provider: "sparkform",
			Action: plans.CreateThenDelete, Reason: "tainted: an earlier apply did not finish creating it",
			Before: obj(map[string]cty.Value{"input": s("t")}), After: obj(map[string]cty.Value{"input": s("t")})},
		{Addr: "sparkform_data.asked", Resource: "sparkform_data.asked", Type: "sparkform_data", Provider: "sparkform",
			Action: plans.DeleteThenCreate, Reason: "replacement requested with -replace",
			Before: obj(map[string]cty.Value{"input": s("r")}), After: obj(map[string]cty.Value{"input": s("r")})},
		{Addr: "sparkform_data.cbd#deposed", Resource: "sparkform_data.cbd", Type: "sparkform_data", Provider: "sparkform",
			Action: plans.Delete, Reason: "a deposed object left by an earlier create_before_destroy",
			Before: obj(map[string]cty.Value{"input": s("old")}), After: cty.NullVal(cty.Object(map[string]cty.Type{"input": cty.String}))},
	}
	p.Drift = []*plans.Drift{
		{Addr: "sparkform_data.new", Type: "sparkform_data", Before: obj(map[string]cty.Value{"input": s("was")}), After: obj(map[string]cty.Value{"input": s("kept")})},
	}
	p.Outputs = map[string]*plans.OutputChange{
		"added":   {Before: cty.NilVal, After: s("new")},
		"changed": {Before: s("a"), After: cty.UnknownVal(cty.String)},
		"removed": {Before: s("x"), After: cty.NullVal(cty.String)},
		"same":    {Before: s("x"), After: s("x")},
		"secret":  {Before: s("hunter2"), After: s("swordfish"), Sensitive: true},
	}
	return p
}

func TestMarshalGolden(t *testing.T) {
	doc, err := Marshal(everyKind(), Options{Version: "0.1.0-test", SensitiveVariable: func(n string) bool { return n == "token" }})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	for _, secret := range []string{"hunter2", "swordfish"} {
		if bytes.Contains(got, []byte(secret)) {
			t.Errorf("the document prints the sensitive value %q", secret)
		}
	}
	// A client written for Terraform reads it, with every change whole.
	p, err := tfjsoncheck.Plan(got)
	if err != nil {
		t.Fatalf("terraform-json: %v", err)
	}
	byAddr := map[string]int{}
	for i, rc := range p.ResourceChanges {
		byAddr[rc.Address+"/"+rc.DeposedKey] = i
	}
	for _, want := range []struct {
		addr, deposed, mod, name, reason, prev string
		index                                  any
		actions                                string
	}{
		{`docker_container.serve["spark-01"]`, "", "", "serve", "", "", "spark-01", "create"},
		{`docker_container.serve["spark-02"]`, "", "", "serve", "replace_because_cannot_update", "", "spark-02", "delete,create"},
		{`module.recipe["a"].module.rank[0].sparkform_data.cfg[1]`, "", `module.recipe["a"].module.rank[0]`, "cfg", "", "", json.Number("1"), "update"},
		{"sparkform_data.gone", "", "", "gone", "delete_because_no_resource_config", "", nil, "delete"},
		{"sparkform_data.idx[2]", "", "", "idx", "delete_because_count_index", "", json.Number("2"), "delete"},
		{"sparkform_data.new", "", "", "new", "", "sparkform_data.old", nil, "no-op"},
		{"sparkform_data.tainted", "", "", "tainted", "replace_because_tainted", "", nil, "create,delete"},
		{"sparkform_data.asked", "", "", "asked", "replace_by_request", "", nil, "delete,create"},
		{"sparkform_data.cbd", "00000000", "", "cbd", "", "", nil, "delete"},
	} {
		i, ok := byAddr[want.addr+"/"+want.deposed]
		if !ok {
			t.Errorf("no change of %s", want.addr)
			continue
		}
		rc := p.ResourceChanges[i]
		var acts []string
		for _, a := range rc.Change.Actions {
			acts = append(acts, string(a))
		}
		if rc.ModuleAddress != want.mod || rc.Name != want.name || string(rc.ActionReason) != want.reason ||
			rc.PreviousAddress != want.prev || rc.Index != want.index || strings.Join(acts, ",") != want.actions {
			t.Errorf("%s: module %q name %q reason %q previous %q index %#v actions %v; want %+v",
				want.addr, rc.ModuleAddress, rc.Name, rc.ActionReason, rc.PreviousAddress, rc.Index, acts, want)
		}
	}
	// A new output is created, a gone one deleted.
	for name, want := range map[string]string{"added": "create", "changed": "update", "removed": "delete", "same": "no-op", "secret": "update"} {
		if got := p.OutputChanges[name].Actions; len(got) != 1 || string(got[0]) != want {
			t.Errorf("output %s: actions %v, want %s", name, got, want)
		}
	}
	if rp := p.ResourceChanges[byAddr[`docker_container.serve["spark-02"]/`]].Change.ReplacePaths; len(rp) != 1 {
		t.Errorf("replace_paths %v", rp)
	}

	golden := filepath.Join("testdata", "every_kind.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the document differs from %s (go test -run TestMarshalGolden -update to accept):\n%s", golden, got)
	}
}

// TestNoConfigHidesVariables: without the configuration, which variables
// are sensitive is not known, so none has its value written.
func TestNoConfigHidesVariables(t *testing.T) {
	doc, err := Marshal(everyKind(), Options{Version: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for n, v := range doc.Variables {
		if v.Value != nil {
			t.Errorf("variable %s written: %v", n, v.Value)
		}
	}
	if doc.Configuration != nil {
		t.Error("a configuration without one given")
	}
}

// BenchmarkMarshal10k is the plan document of 10,000 instances in a
// module instance, each drifted: a large plan, as the seed's 10,000-file
// snapshots make (go test -bench Marshal ./internal/command/jsonplan).
func BenchmarkMarshal10k(b *testing.B) {
	p := &plans.Plan{Lineage: "l", Mode: plans.NormalMode, Created: time.Unix(0, 0)}
	for i := range 10000 {
		addr := fmt.Sprintf(`module.m["a"].sparkform_data.x[%d]`, i)
		before := obj(map[string]cty.Value{"input": s(fmt.Sprint(i)), "id": s("i")})
		after := obj(map[string]cty.Value{"input": s(fmt.Sprint(i + 1)), "id": s("i")})
		p.Changes = append(p.Changes, &plans.ResourceChange{Addr: addr, Resource: `module.m["a"].sparkform_data.x`, Type: "sparkform_data",
			Provider: "sparkform", Action: plans.Update, Before: before, After: after})
		p.Drift = append(p.Drift, &plans.Drift{Addr: addr, Type: "sparkform_data", Before: before, After: before})
	}
	b.ReportAllocs()
	for b.Loop() {
		doc, err := Marshal(p, Options{Version: "x"})
		if err != nil {
			b.Fatal(err)
		}
		if err := json.NewEncoder(io.Discard).Encode(doc); err != nil {
			b.Fatal(err)
		}
	}
}
