package engine

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
)

// TestModuleFailureHoldsBackOnlyItsNode: the graph is one graph of
// instances across module instances, so a create that fails on one node
// of one module instance holds back only what depends on it there: the
// same module's other node and the other module instance go on.
func TestModuleFailureHoldsBackOnlyItsNode(t *testing.T) {
	const (
		failed  = `module.stack["s1"].sftest_thing.first["n2"]`
		blocked = `module.stack["s1"].sftest_thing.second["n2"]`
	)
	b := newBed(t)
	r := b.cfg("modules", `fail={"s1/n2"="create"}`)
	p := r.plan(PlanOptions{})
	if n := len(p.Changes); n != 8 {
		t.Fatalf("plan has %d changes, want 8: %v", n, actions(p))
	}
	if c := p.Change(blocked); c == nil || c.Action != plans.Create {
		t.Fatalf("plan lacks %s: %v", blocked, actions(p))
	}
	_, diags := r.applyE(context.Background(), p)
	if !hasErrorContaining(diags, failed) {
		t.Fatalf("apply does not name %s: %s", failed, diagString(diags))
	}
	for _, o := range b.tp.ops() {
		if strings.HasSuffix(o, " "+blocked) {
			t.Errorf("%s was tried although %s failed: %q", blocked, failed, b.tp.ops())
		}
	}
	want := []string{
		`module.stack["s1"].sftest_thing.first["n1"]`,
		`module.stack["s1"].sftest_thing.second["n1"]`,
		`module.stack["s2"].sftest_thing.first["n1"]`,
		`module.stack["s2"].sftest_thing.first["n2"]`,
		`module.stack["s2"].sftest_thing.second["n1"]`,
		`module.stack["s2"].sftest_thing.second["n2"]`,
	}
	if got := b.addrs(); !reflect.DeepEqual(got, want) {
		t.Errorf("state = %v\nwant %v", got, want)
	}
	// Fixed, the next plan finishes exactly the held-back pair.
	r = b.cfg("modules")
	p = r.plan(PlanOptions{})
	if got := actions(p); !reflect.DeepEqual(got, map[string]plans.Action{failed: plans.Create, blocked: plans.Create}) {
		t.Fatalf("plan after the failure = %v", got)
	}
	r.apply(p)
	if p := r.plan(PlanOptions{}); p.HasChanges() {
		t.Errorf("not converged: %v", actions(p))
	}
	// A targeted destroy of one module instance leaves the other.
	p = r.plan(PlanOptions{Mode: plans.DestroyMode, Targets: mustTargets(`module.stack["s1"]`)})
	for a, act := range actions(p) {
		if act != plans.Delete || !strings.HasPrefix(a, `module.stack["s1"].`) {
			t.Errorf("targeted destroy plans %s %s", act, a)
		}
	}
	r.apply(p)
	if got := b.addrs(); len(got) != 4 || !strings.HasPrefix(got[0], `module.stack["s2"]`) {
		t.Errorf("after destroying module.stack[\"s1\"]: %v", got)
	}
}

// TestModuleInputTakesOneInstance: a module input that names one instance
// of a root resource (base[each.key]) waits for that instance only, so a
// failed base["s2"] holds back module.stack["s2"] and not module.stack["s1"].
func TestModuleInputTakesOneInstance(t *testing.T) {
	b := newBed(t)
	r := b.cfg("modules_input", `fail={"s2"="create"}`)
	_, diags := r.applyE(context.Background(), r.plan(PlanOptions{}))
	if !hasErrorContaining(diags, `sftest_thing.base["s2"]`) {
		t.Fatalf("apply does not name the failed base: %s", diagString(diags))
	}
	got := strings.Join(b.addrs(), "\n")
	for _, want := range []string{`module.stack["s1"].sftest_thing.first["n1"]`, `module.stack["s1"].sftest_thing.second["n2"]`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s was held back by another stack's failure; state:\n%s", want, got)
		}
	}
	if strings.Contains(got, `module.stack["s2"]`) {
		t.Errorf("module.stack[\"s2\"] went ahead without its base:\n%s", got)
	}
}

// TestModuleFolderLoadedOnce: calls of one module folder share one loaded
// Module (it was parsed once per call: 1,000 module blocks on one folder
// parsed it 1,000 times), and each instance still takes its own
// arguments and keeps its own names.
func TestModuleFolderLoadedOnce(t *testing.T) {
	b := newBed(t)
	r := b.cfg("sharedmod")
	raw, diags := config.LoadDir(filepath.Join("testdata", "sharedmod"))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if raw.Children["a"] != raw.Children["b"] || raw.Children["a"] != raw.Children["c"] {
		t.Error("calls of one folder got modules of their own")
	}
	res := r.converge()
	want := cty.TupleVal([]cty.Value{cty.StringVal("x!"), cty.StringVal("y!"), cty.StringVal("k1-x!!"), cty.StringVal("k2-x!!")})
	if got := res.Outputs["all"]; !got.RawEquals(want) {
		t.Errorf("outputs %#v, want %#v", got, want)
	}
	for addr, input := range map[string]string{
		"module.a.sparkform_data.r": "x", "module.b.sparkform_data.r": "y",
		`module.c["k1"].sparkform_data.r`: "k1-x!", `module.c["k2"].sparkform_data.s`: "k2-x!!",
	} {
		if got := b.attr(addr, "input"); got != input {
			t.Errorf("%s input %q, want %q", addr, got, input)
		}
	}
}
