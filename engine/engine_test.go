package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

const (
	dataX      = "sparkform_data.x"
	dataEachA  = `sparkform_data.each["a"]`
	dataEachB  = `sparkform_data.each["b"]`
	dataCount0 = "sparkform_data.counted[0]"
	dataCount1 = "sparkform_data.counted[1]"
)

// TestLifecycleWithDataProvider drives the real sparkform_data provider
// through create, no-op, update, replace and the two kinds of orphan, one
// step after another on one state, checking each plan's actions, what
// references see, the outputs, and what state holds after each apply.
func TestLifecycleWithDataProvider(t *testing.T) {
	b := newBed(t)
	var firstID string
	steps := []struct {
		name    string
		fixture string
		vars    []string
		want    map[string]plans.Action
		reason  map[string]string // addr -> substring of the change's reason
		check   func(t *testing.T, p *plans.Plan, res *ApplyResult)
		state   []string
	}{{
		name: "create", fixture: "data",
		want: map[string]plans.Action{dataX: plans.Create, dataEachA: plans.Create, dataEachB: plans.Create,
			dataCount0: plans.Create, dataCount1: plans.Create},
		check: func(t *testing.T, p *plans.Plan, res *ApplyResult) {
			// x's id is chosen at apply: the reference is unknown in the
			// plan and resolved when each is applied.
			if in := p.Change(dataEachA).After.GetAttr("input"); in.IsKnown() {
				t.Errorf("planned each[a].input = %#v; want unknown (known after apply)", in)
			}
			if o := p.Outputs["x_id"]; o == nil || !o.Before.IsNull() || o.After.IsKnown() {
				t.Errorf("planned output x_id = %+v; want null -> unknown", o)
			}
			firstID = b.attr(dataX, "id")
			if got := b.attr(dataEachA, "input"); got != "a-"+firstID {
				t.Errorf("each[a].input = %q; want %q", got, "a-"+firstID)
			}
			if got := res.Outputs["x_id"]; !got.IsKnown() || got.AsString() != firstID {
				t.Errorf("apply output x_id = %#v; want %q", got, firstID)
			}
			want := cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("a-" + firstID), "b": cty.StringVal("b-" + firstID)})
			if got := res.Outputs["each_inputs"]; !got.RawEquals(want) {
				t.Errorf("apply output each_inputs = %#v; want %#v", got, want)
			}
		},
		state: []string{dataCount0, dataCount1, dataEachA, dataEachB, dataX},
	}, {
		name: "no-op", fixture: "data",
		want: map[string]plans.Action{},
	}, {
		name: "update in place", fixture: "data", vars: []string{`input=two`},
		want: map[string]plans.Action{dataX: plans.Update},
		check: func(t *testing.T, p *plans.Plan, _ *ApplyResult) {
			if got := b.attr(dataX, "id"); got != firstID {
				t.Errorf("update changed the id: %q -> %q", firstID, got)
			}
			if got := b.attr(dataX, "output"); got != "two" {
				t.Errorf("x.output = %q; want two", got)
			}
		},
	}, {
		name: "replace forces dependents to update", fixture: "data", vars: []string{`input=two`, `trigger=t2`},
		want: map[string]plans.Action{dataX: plans.DeleteThenCreate, dataEachA: plans.Update, dataEachB: plans.Update},
		check: func(t *testing.T, p *plans.Plan, res *ApplyResult) {
			c := p.Change(dataX)
			if len(c.RequiresReplace) != 1 || !c.RequiresReplace[0].Equals(cty.GetAttrPath("triggers_replace")) {
				t.Errorf("x requires replace = %#v; want triggers_replace", c.RequiresReplace)
			}
			if o := p.Outputs["x_id"]; o == nil || o.Before.AsString() != firstID || o.After.IsKnown() {
				t.Errorf("planned output x_id = %+v; want %q -> unknown", o, firstID)
			}
			newID := b.attr(dataX, "id")
			if newID == firstID {
				t.Errorf("replace kept the id %q", newID)
			}
			if got := b.attr(dataEachB, "input"); got != "b-"+newID {
				t.Errorf("each[b].input = %q; want %q", got, "b-"+newID)
			}
			if got := res.Outputs["x_id"].AsString(); got != newID {
				t.Errorf("output x_id = %q; want %q", got, newID)
			}
		},
	}, {
		name: "orphans: for_each key and count index removed", fixture: "data",
		vars:   []string{`input=two`, `trigger=t2`, `keys=["a"]`, `n=1`},
		want:   map[string]plans.Action{dataEachB: plans.Delete, dataCount1: plans.Delete},
		reason: map[string]string{dataEachB: "key is no longer produced", dataCount1: "key is no longer produced"},
		state:  []string{dataCount0, dataEachA, dataX},
	}, {
		name: "orphans: blocks removed", fixture: "data_x_only", vars: []string{`input=two`, `trigger=t2`},
		want:   map[string]plans.Action{dataEachA: plans.Delete, dataCount0: plans.Delete},
		reason: map[string]string{dataEachA: "no longer in the configuration", dataCount0: "no longer in the configuration"},
		state:  []string{dataX},
	}, {
		name: "destroy", fixture: "data_x_only", vars: []string{`input=two`, `trigger=t2`},
		want:  map[string]plans.Action{dataX: plans.Delete},
		state: []string{},
	}}
	for _, s := range steps {
		ok := t.Run(s.name, func(t *testing.T) {
			b.t = t
			r := b.cfg(s.fixture, s.vars...)
			opts := PlanOptions{}
			if s.name == "destroy" {
				opts.Mode = plans.DestroyMode
			}
			p := r.plan(opts)
			if got := actions(p); !reflect.DeepEqual(got, s.want) {
				t.Fatalf("plan actions = %v; want %v", got, s.want)
			}
			for addr, sub := range s.reason {
				if c := p.Change(addr); c == nil || !strings.Contains(c.Reason, sub) {
					t.Errorf("%s: reason %q; want it to say %q", addr, c.Reason, sub)
				}
			}
			res := r.apply(p)
			if s.check != nil {
				s.check(t, p, res)
			}
			if s.state != nil {
				if got := b.addrs(); !reflect.DeepEqual(got, s.state) {
					t.Errorf("state = %v; want %v", got, s.state)
				}
			}
			if in := b.intents(); len(in) != 0 {
				t.Errorf("journal not empty after apply: %v", in)
			}
			if opts.Mode != plans.DestroyMode {
				if p := r.plan(PlanOptions{}); p.HasChanges() {
					t.Errorf("second plan still has changes: %v", actions(p))
				}
			}
		})
		if !ok {
			return
		}
	}
}

const (
	thA = "sftest_thing.a"
	thB = "sftest_thing.b"
	thC = "sftest_thing.c"
	thD = "sftest_thing.d"
)

// TestTargets checks that -target plans the targets and what they depend
// on, and nothing else, for whole resources and single instances.
func TestTargets(t *testing.T) {
	cases := []struct {
		name    string
		fixture string
		targets []string
		want    map[string]plans.Action
	}{
		{"resource pulls in its dependencies", "chain", []string{thB},
			map[string]plans.Action{thA: plans.Create, thB: plans.Create}},
		{"resource without dependencies", "chain", []string{thD},
			map[string]plans.Action{thD: plans.Create}},
		{"two targets", "chain", []string{thA, thD},
			map[string]plans.Action{thA: plans.Create, thD: plans.Create}},
		{"instance of for_each", "data", []string{dataEachA},
			map[string]plans.Action{dataX: plans.Create, dataEachA: plans.Create}},
		{"instance of count", "data", []string{dataCount1},
			map[string]plans.Action{dataCount1: plans.Create}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBed(t)
			r := b.cfg(c.fixture)
			p := r.plan(PlanOptions{Targets: mustTargets(c.targets...)})
			if got := actions(p); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("targeted plan = %v; want %v", got, c.want)
			}
			r.apply(p)
			var want []string
			for a := range c.want {
				want = append(want, a)
			}
			sort.Strings(want)
			if got := b.addrs(); !reflect.DeepEqual(got, want) {
				t.Errorf("state after targeted apply = %v; want %v", got, want)
			}
			// The rest is still to do.
			if p := r.plan(PlanOptions{}); len(actions(p)) == 0 {
				t.Errorf("untargeted plan after targeted apply has no changes")
			}
		})
	}
}

// TestTargetedDestroyKeepsDependencies: like Terraform, a targeted
// destroy removes the target and what depends on it (per state), never
// what it depends on.
func TestTargetedDestroyKeepsDependencies(t *testing.T) {
	b := newBed(t)
	r := b.cfg("chain")
	r.converge()
	p := r.plan(PlanOptions{Mode: plans.DestroyMode, Targets: mustTargets(thB)})
	want := map[string]plans.Action{thB: plans.Delete, thC: plans.Delete}
	if got := actions(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("targeted destroy = %v; want %v", got, want)
	}
	r.apply(p)
	if got, want := b.addrs(), []string{thA, thD}; !reflect.DeepEqual(got, want) {
		t.Errorf("state = %v; want %v", got, want)
	}
}

// TestTargetedPlanReadsOnlyWhatItTouches: like Terraform, a targeted plan
// refreshes the targets and what they depend on (a targeted destroy: what
// depends on them), nothing else; state keeps its record of the rest,
// whose drift a plan without -target still finds.
func TestTargetedPlanReadsOnlyWhatItTouches(t *testing.T) {
	setup := func(t *testing.T) (*bed, *run) {
		b := newBed(t)
		r := b.cfg("chain")
		r.converge()
		for _, a := range []string{thA, thC, thD} {
			writeObj(t, b.tp, b.attr(a, "id"), "edited-"+a)
		}
		return b, r
	}
	drifted := func(p *plans.Plan) []string {
		var out []string
		for _, d := range p.Drift {
			out = append(out, d.Addr)
		}
		sort.Strings(out)
		return out
	}
	cases := []struct {
		name      string
		mode      plans.Mode
		wantDrift []string
	}{
		{"plan reads the target and what it needs", plans.NormalMode, []string{thA}},
		{"refresh-only reads the target and what it needs", plans.RefreshOnlyMode, []string{thA}},
		{"destroy reads the target and what depends on it", plans.DestroyMode, []string{thC}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, r := setup(t)
			p := r.plan(PlanOptions{Mode: c.mode, Targets: mustTargets(thB)})
			if got := drifted(p); !reflect.DeepEqual(got, c.wantDrift) {
				t.Fatalf("targeted plan's drift = %v; want %v (only what it touches is read)", got, c.wantDrift)
			}
			r.apply(p)
			if got := b.attr(thD, "value"); got != "v1" {
				t.Errorf("d.value in state = %q after a plan that does not touch d; want its record v1", got)
			}
			if got := drifted(r.plan(PlanOptions{Mode: plans.RefreshOnlyMode})); !slices.Contains(got, thD) {
				t.Errorf("untargeted plan's drift = %v; want it to find d's", got)
			}
		})
	}
}

// TestReplaceFlag: -replace replaces the instance and updates what reads
// its new id; nothing else changes.
func TestReplaceFlag(t *testing.T) {
	b := newBed(t)
	r := b.cfg("chain")
	r.converge()
	oldA := b.attr(thA, "id")
	p := r.plan(PlanOptions{Replace: mustInstances(thA)})
	want := map[string]plans.Action{thA: plans.DeleteThenCreate, thB: plans.Update}
	if got := actions(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("plan = %v; want %v", got, want)
	}
	if c := p.Change(thA); !strings.Contains(c.Reason, "-replace") {
		t.Errorf("reason %q does not mention -replace", c.Reason)
	}
	r.apply(p)
	newA := b.attr(thA, "id")
	if newA == oldA {
		t.Fatalf("a kept id %s", oldA)
	}
	if got := b.attr(thB, "value"); got != newA+"-b" {
		t.Errorf("b.value = %q; want %q", got, newA+"-b")
	}
	if _, err := os.Stat(b.tp.objPath(oldA)); !os.IsNotExist(err) {
		t.Errorf("old object %s still on the node (stat: %v)", oldA, err)
	}
	if p := r.plan(PlanOptions{}); p.HasChanges() {
		t.Errorf("changes after replace: %v", actions(p))
	}
	// A -replace that names nothing is a warning, not a silent no-op.
	p, diags := r.planE(PlanOptions{Replace: mustInstances(`sftest_thing.nosuch`)})
	if diags.HasErrors() || p.HasChanges() {
		t.Fatalf("plan with a -replace of nothing: %s %v", diagString(diags), actions(p))
	}
	if !strings.Contains(diagString(diags), "Nothing to replace at sftest_thing.nosuch") {
		t.Errorf("no warning for a -replace of nothing: %q", diagString(diags))
	}
}

// TestFailureStopsOnlyDependents: b fails to create; c (needs b) is never
// tried; a and the slow, independent d finish and are stored. State holds
// exactly what exists, and the next plan finishes the job.
func TestFailureStopsOnlyDependents(t *testing.T) {
	cases := []struct {
		name      string
		fail      string
		wantState []string
		tainted   bool
	}{
		{"create fails, nothing made", "create", []string{thA, thD}, false},
		{"create half-done, object kept tainted", "create-partial", []string{thA, thB, thD}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBed(t)
			r := b.cfg("chain", `fail={b="`+c.fail+`"}`, "sleep=200")
			_, diags := r.applyE(context.Background(), r.plan(PlanOptions{}))
			if !hasErrorContaining(diags, thB) {
				t.Fatalf("apply diagnostics do not name %s: %s", thB, diagString(diags))
			}
			if hasErrorContaining(diags, thC) || hasErrorContaining(diags, thD) {
				t.Errorf("diagnostics blame c or d: %s", diagString(diags))
			}
			ops := b.tp.ops()
			for _, o := range ops {
				if strings.HasSuffix(o, " "+thC) {
					t.Errorf("c was tried although b failed: %q", ops)
				}
			}
			index(t, ops, "create "+thD)
			if got := b.addrs(); !reflect.DeepEqual(got, c.wantState) {
				t.Errorf("state = %v; want %v", got, c.wantState)
			}
			if in := b.intents(); len(in) != 0 {
				t.Errorf("journal not empty: %v", in)
			}
			if c.tainted {
				if st := b.record(thB).Status; st != state.StatusTainted {
					t.Errorf("b status = %q; want tainted", st)
				}
			}
			// Fixed: the next plan replaces a tainted b (or creates it)
			// and creates c.
			r = b.cfg("chain", "sleep=200")
			p := r.plan(PlanOptions{})
			wantB := plans.Create
			if c.tainted {
				wantB = plans.DeleteThenCreate
				if ch := p.Change(thB); !strings.Contains(ch.Reason, "tainted") {
					t.Errorf("b reason = %q; want it to say tainted", ch.Reason)
				}
			}
			want := map[string]plans.Action{thB: wantB, thC: plans.Create}
			if got := actions(p); !reflect.DeepEqual(got, want) {
				t.Fatalf("plan after failure = %v; want %v", got, want)
			}
			r.apply(p)
			if p := r.plan(PlanOptions{}); p.HasChanges() {
				t.Errorf("not converged: %v", actions(p))
			}
			objs, _ := filepath.Glob(filepath.Join(b.tp.dir, "*.json"))
			if len(objs) != 4 {
				t.Errorf("%d objects on the node; want 4 (a, b, c, d): %v", len(objs), objs)
			}
		})
	}
}

// TestDeleteOrder: destroy and orphan deletes run in reverse dependency
// order (c, then b, then a), from the dependencies recorded in state.
func TestDeleteOrder(t *testing.T) {
	t.Run("destroy", func(t *testing.T) {
		b := newBed(t)
		r := b.cfg("chain")
		r.converge()
		b.tp.resetLog()
		r.apply(r.plan(PlanOptions{Mode: plans.DestroyMode}))
		ops := b.tp.ops()
		if !(index(t, ops, "delete "+thC) < index(t, ops, "delete "+thB) && index(t, ops, "delete "+thB) < index(t, ops, "delete "+thA)) {
			t.Errorf("delete order %q; want c before b before a", ops)
		}
		index(t, ops, "delete "+thD)
		if got := b.addrs(); len(got) != 0 {
			t.Errorf("state after destroy = %v", got)
		}
	})
	t.Run("orphans", func(t *testing.T) {
		b := newBed(t)
		b.cfg("chain").converge()
		b.tp.resetLog()
		r := b.cfg("chain_a_d")
		p := r.plan(PlanOptions{})
		want := map[string]plans.Action{thB: plans.Delete, thC: plans.Delete}
		if got := actions(p); !reflect.DeepEqual(got, want) {
			t.Fatalf("plan = %v; want %v", got, want)
		}
		r.apply(p)
		if ops := b.tp.ops(); !reflect.DeepEqual(ops, []string{"delete " + thC, "delete " + thB}) {
			t.Errorf("ops = %q; want c deleted before b", ops)
		}
	})
	t.Run("a failed delete keeps what depends on it", func(t *testing.T) {
		b := newBed(t)
		r := b.cfg("chain")
		r.converge()
		// c cannot be deleted (in use): b and a must stay, d goes.
		touch(t, filepath.Join(b.tp.dir, b.attr(thC, "id")+".inuse"))
		_, diags := r.applyE(context.Background(), r.plan(PlanOptions{Mode: plans.DestroyMode}))
		if !hasErrorContaining(diags, thC) {
			t.Fatalf("destroy diagnostics do not name c: %s", diagString(diags))
		}
		if got, want := b.addrs(), []string{thA, thB, thC}; !reflect.DeepEqual(got, want) {
			t.Errorf("state = %v; want %v", got, want)
		}
		if in := b.intents(); len(in) != 0 {
			t.Errorf("journal not empty: %v", in)
		}
	})
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReplaceOrdering: a plain replacement deletes before it creates; a
// create_before_destroy one creates first (the old object waits under a
// #deposed address), moves its users to the new id, then deletes.
func TestReplaceOrdering(t *testing.T) {
	b := newBed(t)
	b.cfg("replace").converge()
	oldCBD := b.attr("sftest_thing.cbd", "id")
	b.tp.resetLog()

	var mu sync.Mutex
	var deposedSeen []string
	b.tp.onApply = func(op, addr string) {
		if op == "create" && addr == "sftest_thing.cbd" {
			mu.Lock()
			deposedSeen = b.addrs()
			mu.Unlock()
		}
	}
	r := b.cfg("replace", "key=k2")
	p := r.plan(PlanOptions{})
	want := map[string]plans.Action{
		"sftest_thing.plain": plans.DeleteThenCreate, "sftest_thing.plain_user": plans.Update,
		"sftest_thing.cbd": plans.CreateThenDelete, "sftest_thing.cbd_user": plans.Update,
	}
	if got := actions(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("plan = %v; want %v", got, want)
	}
	r.apply(p)
	b.tp.onApply = nil
	ops := b.tp.ops()
	if !(index(t, ops, "delete sftest_thing.plain") < index(t, ops, "create sftest_thing.plain") &&
		index(t, ops, "create sftest_thing.plain") < index(t, ops, "update sftest_thing.plain_user")) {
		t.Errorf("plain replacement order %q; want delete, create, update user", ops)
	}
	if !(index(t, ops, "create sftest_thing.cbd") < index(t, ops, "update sftest_thing.cbd_user") &&
		index(t, ops, "update sftest_thing.cbd_user") < index(t, ops, "delete sftest_thing.cbd")) {
		t.Errorf("create_before_destroy order %q; want create, update user, delete", ops)
	}
	if !contains(deposedSeen, "sftest_thing.cbd#deposed") {
		t.Errorf("while the new cbd was created, state was %v; want the old one under sftest_thing.cbd#deposed", deposedSeen)
	}
	if got := b.addrs(); contains(got, "sftest_thing.cbd#deposed") {
		t.Errorf("deposed record left after a clean replace: %v", got)
	}
	if got := b.attr("sftest_thing.cbd_user", "value"); got != b.attr("sftest_thing.cbd", "id") || got == oldCBD {
		t.Errorf("cbd_user.value = %q; want the new id %q", got, b.attr("sftest_thing.cbd", "id"))
	}

	// The old object cannot be deleted: it stays in state as deposed, with
	// a clear error, and a later plan deletes it.
	oldCBD = b.attr("sftest_thing.cbd", "id")
	marker := filepath.Join(b.tp.dir, oldCBD+".inuse")
	touch(t, marker)
	r = b.cfg("replace", "key=k3")
	_, diags := r.applyE(context.Background(), r.plan(PlanOptions{}))
	if !hasErrorContaining(diags, "sftest_thing.cbd") {
		t.Fatalf("apply diagnostics do not name cbd: %s", diagString(diags))
	}
	if got := b.attr("sftest_thing.cbd#deposed", "id"); got != oldCBD {
		t.Errorf("deposed record holds %q; want the old object %q", got, oldCBD)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	p = r.plan(PlanOptions{})
	if got := actions(p); !reflect.DeepEqual(got, map[string]plans.Action{"sftest_thing.cbd#deposed": plans.Delete}) {
		t.Fatalf("plan = %v; want only the deposed object deleted", got)
	}
	if c := p.Change("sftest_thing.cbd#deposed"); !strings.Contains(c.Reason, "deposed") {
		t.Errorf("reason %q does not say deposed", c.Reason)
	}
	r.apply(p)
	if _, err := os.Stat(b.tp.objPath(oldCBD)); !os.IsNotExist(err) {
		t.Errorf("old object still on the node")
	}
	if p := r.plan(PlanOptions{}); p.HasChanges() {
		t.Errorf("not converged: %v", actions(p))
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestLifecycleGuards: prevent_destroy refuses plans that would destroy
// or replace; ignore_changes keeps the stored value.
func TestLifecycleGuards(t *testing.T) {
	b := newBed(t)
	b.cfg("guard").converge()

	cases := []struct {
		name    string
		vars    []string
		opts    PlanOptions
		wantErr string
		want    map[string]plans.Action
	}{
		{name: "replace refused", vars: []string{"key=k2"},
			wantErr: "sftest_thing.kept has lifecycle.prevent_destroy set, but the plan would replace it"},
		{name: "destroy refused", opts: PlanOptions{Mode: plans.DestroyMode},
			wantErr: "sftest_thing.kept has lifecycle.prevent_destroy set, but the plan would destroy it"},
		{name: "ignored attribute", vars: []string{"value=v2"}, want: map[string]plans.Action{}},
		{name: "target avoids the guarded one", vars: []string{"key=k2"}, opts: PlanOptions{Targets: mustTargets("sftest_thing.ignoring")},
			want: map[string]plans.Action{"sftest_thing.ignoring": plans.DeleteThenCreate}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b.t = t
			p, diags := b.cfg("guard", c.vars...).planE(c.opts)
			if c.wantErr != "" {
				if !hasErrorContaining(diags, c.wantErr) {
					t.Fatalf("diagnostics %q; want %q", diagString(diags), c.wantErr)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diagString(diags))
			}
			if got := actions(p); !reflect.DeepEqual(got, c.want) {
				t.Errorf("plan = %v; want %v", got, c.want)
			}
		})
	}
	if got := b.attr("sftest_thing.ignoring", "value"); got != "v1" {
		t.Errorf("ignoring.value = %q; want v1", got)
	}
}

// TestCycle: the error names every block of the cycle, in order.
func TestCycle(t *testing.T) {
	b := newBed(t)
	_, diags := b.cfg("cycle").planE(PlanOptions{})
	want := "local.a_id -> sftest_thing.a -> sftest_thing.b -> local.a_id"
	if !hasErrorContaining(diags, want) {
		t.Fatalf("diagnostics %q; want the cycle %q", diagString(diags), want)
	}
	if got := b.addrs(); len(got) != 0 {
		t.Errorf("state changed: %v", got)
	}
}

// writeIntent leaves a journal intent behind the way apply writes one
// before calling the provider, as a crash between the two would.
func (b *bed) writeIntent(addr, action string, value cty.Value) {
	b.t.Helper()
	in := &stateObject{Addr: addr, Resource: resourceOfInstance(addr), Type: testThing, Provider: "sftest",
		Value: value, Node: b.cfg("chain_a_d").nodeOf(b.t)}
	intent, err := newIntent(in, action)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := b.st.PutIntent(intent); err != nil {
		b.t.Fatal(err)
	}
}

// nodeOf is the local node as the fixtures declare it.
func (r *run) nodeOf(t *testing.T) sdk.Node {
	t.Helper()
	p := r.plan(PlanOptions{Targets: mustTargets(thA)})
	if c := p.Change(thA); c != nil && c.Node != nil {
		return *c.Node
	}
	t.Fatal("no change for a")
	return sdk.Node{}
}

func thingVal(id, value string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"id": cty.StringVal(id), "value": cty.StringVal(value), "key": cty.NullVal(cty.String),
		"fail": cty.StringVal(""), "sleep_ms": cty.NullVal(cty.Number), "owns": cty.NullVal(cty.String),
	})
}

// TestJournalRecovery: an intent left by a crash is reported by the next
// plan, the instance is refreshed from the node, state is made true to
// what is there, and the intent is cleared.
func TestJournalRecovery(t *testing.T) {
	cases := []struct {
		name string
		// setup returns the address, action and planned value of the
		// intent, after making the node look like the crash left it.
		setup       func(b *bed) (string, string, cty.Value)
		skipRefresh bool
		vars        []string
		wantNote    string
		wantAction  plans.Action
		wantState   func(t *testing.T, b *bed)
	}{{
		name: "update that reached the node",
		setup: func(b *bed) (string, string, cty.Value) {
			b.cfg("chain_a_d").converge()
			id := b.attr(thA, "id")
			writeObj(b.t, b.tp, id, "v2")
			return thA, "update", thingVal(id, "v2")
		},
		vars: []string{"value=v2"}, wantNote: "found on the node after the interrupted update", wantAction: plans.NoOp,
		wantState: func(t *testing.T, b *bed) {
			if got := b.attr(thA, "value"); got != "v2" {
				t.Errorf("a.value = %q; want v2 (what the node has)", got)
			}
		},
	}, {
		name: "update that reached the node, with -refresh=false",
		setup: func(b *bed) (string, string, cty.Value) {
			b.cfg("chain_a_d").converge()
			id := b.attr(thA, "id")
			writeObj(b.t, b.tp, id, "v2")
			return thA, "update", thingVal(id, "v2")
		},
		skipRefresh: true, vars: []string{"value=v2"},
		wantNote: "found on the node after the interrupted update", wantAction: plans.NoOp,
		wantState: func(t *testing.T, b *bed) {
			if got := b.attr(thA, "value"); got != "v2" {
				t.Errorf("a.value = %q; want v2", got)
			}
		},
	}, {
		name: "create that made the object",
		setup: func(b *bed) (string, string, cty.Value) {
			writeObj(b.t, b.tp, "t900", "v1")
			return thA, "create", thingVal("t900", "v1")
		},
		wantNote: "as tainted", wantAction: plans.DeleteThenCreate,
		wantState: func(t *testing.T, b *bed) {
			if st := b.record(thA).Status; st != state.StatusTainted {
				t.Errorf("a status = %q; want tainted", st)
			}
		},
	}, {
		// A delete cut short may still be landing on the node (a container
		// whose stop signal it had sent exits after the next apply read it
		// running): what is there is not known good, and is replaced.
		name: "delete that left the object",
		setup: func(b *bed) (string, string, cty.Value) {
			b.cfg("chain_a_d").converge()
			return thA, "delete", thingVal(b.attr(thA, "id"), "v1")
		},
		wantNote: "as tainted", wantAction: plans.DeleteThenCreate,
		wantState: func(t *testing.T, b *bed) {
			if st := b.record(thA).Status; st != state.StatusTainted {
				t.Errorf("a status = %q; want tainted", st)
			}
		},
	}, {
		name: "replace cut short in its delete",
		setup: func(b *bed) (string, string, cty.Value) {
			b.cfg("chain_a_d").converge()
			return thA, "delete-then-create", thingVal(b.attr(thA, "id"), "v1")
		},
		wantNote: "as tainted", wantAction: plans.DeleteThenCreate,
		wantState: func(t *testing.T, b *bed) {
			if st := b.record(thA).Status; st != state.StatusTainted {
				t.Errorf("a status = %q; want tainted", st)
			}
		},
	}, {
		name: "create that made nothing",
		setup: func(b *bed) (string, string, cty.Value) {
			return thA, "create", thingVal("t901", "v1")
		},
		wantNote: "nothing found on the node", wantAction: plans.Create,
		wantState: func(t *testing.T, b *bed) {
			if v := b.value(thA); v != cty.NilVal {
				t.Errorf("state has a: %#v", v)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBed(t)
			addr, action, val := c.setup(b)
			b.writeIntent(addr, action, val)
			b.hooks.notes = nil
			r := b.cfg("chain_a_d", c.vars...)
			p := r.plan(PlanOptions{SkipRefresh: c.skipRefresh})
			notes := strings.Join(p.Notes, "\n")
			if !strings.Contains(notes, addr+" was interrupted during "+action) || !strings.Contains(notes, c.wantNote) {
				t.Errorf("plan notes:\n%s\nwant the interruption of %s reported and %q", notes, addr, c.wantNote)
			}
			if len(b.hooks.notes) != len(p.Notes) {
				t.Errorf("hooks got %d notes, plan has %d", len(b.hooks.notes), len(p.Notes))
			}
			if in := b.intents(); len(in) != 0 {
				t.Errorf("intent not settled: %v", in)
			}
			c.wantState(t, b)
			if got := p.Change(addr).Action; got != c.wantAction {
				t.Errorf("%s planned %s; want %s", addr, got, c.wantAction)
			}
			r.apply(r.plan(PlanOptions{}))
			if p := r.plan(PlanOptions{}); p.HasChanges() || len(p.Notes) > 0 {
				t.Errorf("not settled: changes %v, notes %q", actions(p), p.Notes)
			}
		})
	}
}

// TestJournalRecoveryResumesCreate: a create interrupted after it made the
// object, of a type whose schema says it resumes creates (a hub snapshot
// fetched half way), is not tainted: the plan converges what the node has
// in place instead of deleting it and creating it again (which threw away
// a half-fetched model).
func TestJournalRecoveryResumesCreate(t *testing.T) {
	thingSchema.ResumesCreate = true
	t.Cleanup(func() { thingSchema.ResumesCreate = false })
	b := newBed(t)
	writeObj(t, b.tp, "t900", "half")
	b.writeIntent(thA, "create", thingVal("t900", "v1"))
	r := b.cfg("chain_a_d")
	p := r.plan(PlanOptions{})
	if got := p.Change(thA).Action; got == plans.DeleteThenCreate || got == plans.CreateThenDelete {
		t.Fatalf("%s planned %s: an interrupted create of a type that resumes was replaced", thA, got)
	}
	if st := b.record(thA).Status; st == state.StatusTainted {
		t.Errorf("a status = %q; want not tainted", st)
	}
	if notes := strings.Join(p.Notes, "\n"); strings.Contains(notes, "as tainted") {
		t.Errorf("notes say tainted:\n%s", notes)
	}
	b.tp.resetLog()
	r.apply(p)
	if got := b.attr(thA, "id"); got != "t900" {
		t.Errorf("a was re-created: id %s, want t900 kept", got)
	}
	if p := r.plan(PlanOptions{}); p.HasChanges() {
		t.Errorf("not settled: %v", actions(p))
	}
}

func writeObj(t *testing.T, tp *testProvider, id, value string) {
	t.Helper()
	if err := os.WriteFile(tp.objPath(id), []byte(`{"value":"`+value+`","key":null}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRefreshDrift: an object gone from the node is created again, one
// changed on the node is updated back; -refresh=false does not look;
// -refresh-only stores what the nodes have and changes nothing on them.
func TestRefreshDrift(t *testing.T) {
	setup := func(t *testing.T) (*bed, *run) {
		b := newBed(t)
		r := b.cfg("chain_a_d")
		r.converge()
		if err := os.Remove(b.tp.objPath(b.attr(thA, "id"))); err != nil {
			t.Fatal(err)
		}
		writeObj(t, b.tp, b.attr(thD, "id"), "edited")
		b.tp.resetLog()
		return b, r
	}
	t.Run("normal plan converges", func(t *testing.T) {
		b, r := setup(t)
		p := r.plan(PlanOptions{})
		want := map[string]plans.Action{thA: plans.Create, thD: plans.Update}
		if got := actions(p); !reflect.DeepEqual(got, want) {
			t.Fatalf("plan = %v; want %v", got, want)
		}
		if len(p.Drift) != 2 || p.Drift[0].Addr != thA || !p.Drift[0].After.IsNull() ||
			p.Drift[1].Addr != thD || p.Drift[1].After.GetAttr("value").AsString() != "edited" {
			t.Errorf("drift = %+v; want a gone and d edited", p.Drift)
		}
		r.apply(p)
		if got := b.attr(thD, "value"); got != "v1" {
			t.Errorf("d.value = %q after apply; want v1", got)
		}
		if p := r.plan(PlanOptions{}); p.HasChanges() || len(p.Drift) > 0 {
			t.Errorf("not converged: %v drift %v", actions(p), p.Drift)
		}
	})
	t.Run("refresh=false sees nothing", func(t *testing.T) {
		b, r := setup(t)
		p := r.plan(PlanOptions{SkipRefresh: true})
		if p.HasChanges() || len(p.Drift) > 0 {
			t.Errorf("plan without refresh = %v, drift %v; want no changes", actions(p), p.Drift)
		}
		if ops := b.tp.ops(); len(ops) != 0 {
			t.Errorf("provider applied %q", ops)
		}
	})
	t.Run("refresh-only stores the drift", func(t *testing.T) {
		b, r := setup(t)
		p := r.plan(PlanOptions{Mode: plans.RefreshOnlyMode})
		if len(p.Changes) != 0 || len(p.Drift) != 2 || !p.HasChanges() {
			t.Fatalf("refresh-only plan: changes %v, drift %d; want no changes and 2 drifts", actions(p), len(p.Drift))
		}
		r.apply(p)
		if ops := b.tp.ops(); len(ops) != 0 {
			t.Errorf("refresh-only apply changed the node: %q", ops)
		}
		if got, want := b.addrs(), []string{thD}; !reflect.DeepEqual(got, want) {
			t.Errorf("state = %v; want %v (a is gone)", got, want)
		}
		if got := b.attr(thD, "value"); got != "edited" {
			t.Errorf("d.value = %q; want edited (what the node has)", got)
		}
		p = r.plan(PlanOptions{})
		want := map[string]plans.Action{thA: plans.Create, thD: plans.Update}
		if got := actions(p); !reflect.DeepEqual(got, want) || len(p.Drift) != 0 {
			t.Errorf("plan after refresh-only = %v, drift %v; want %v and no drift", got, p.Drift, want)
		}
	})
}

// TestStalePlan: a plan made before the state moved on is refused and
// changes nothing; so is a plan made for another state.
func TestStalePlan(t *testing.T) {
	b := newBed(t)
	r := b.cfg("data_x_only")
	first := r.plan(PlanOptions{})
	second := r.plan(PlanOptions{})
	r.apply(first)
	id := b.attr(dataX, "id")
	_, diags := r.applyE(context.Background(), second)
	if !hasErrorContaining(diags, "stale") || !hasErrorContaining(diags, "run plan again") {
		t.Fatalf("applying a stale plan: %s; want it refused as stale", diagString(diags))
	}
	if got := b.attr(dataX, "id"); got != id || len(b.addrs()) != 1 {
		t.Errorf("state changed by a refused plan: %v, id %s -> %s", b.addrs(), id, got)
	}

	other := newBed(t)
	ro := other.cfg("data_x_only")
	_, diags = ro.applyE(context.Background(), r.plan(PlanOptions{Mode: plans.DestroyMode}))
	if !hasErrorContaining(diags, "lineage") {
		t.Fatalf("applying another state's plan: %s; want a lineage error", diagString(diags))
	}
	if got := other.addrs(); len(got) != 0 {
		t.Errorf("state changed: %v", got)
	}
}

// TestInterrupt: a cancelled context (Ctrl-C) stops scheduling; what
// finished is in state, nothing on the node is missing from state, and
// the journal is clean. The next plan does the rest.
func TestInterrupt(t *testing.T) {
	b := newBed(t)
	r := b.cfg("many")
	r.e.parallelism = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.hooks.postApply = func(string, error) { cancel() }
	_, diags := r.applyE(ctx, r.plan(PlanOptions{}))
	b.hooks.postApply = nil
	if !hasErrorContaining(diags, "interrupted") {
		t.Errorf("diagnostics %q; want the interruption reported", diagString(diags))
	}
	got := b.addrs()
	// Parallelism 1 and a cancel when the first finishes: nothing else
	// may start.
	if len(got) != 1 {
		t.Fatalf("state after interrupt = %v; want only the one that finished before the cancel (ops %q)", got, b.tp.ops())
	}
	objs, _ := filepath.Glob(filepath.Join(b.tp.dir, "*.json"))
	if len(objs) != len(got) {
		t.Errorf("%d objects on the node, %d in state: state must record everything made", len(objs), len(got))
	}
	for _, a := range got {
		if _, err := os.Stat(b.tp.objPath(b.attr(a, "id"))); err != nil {
			t.Errorf("%s in state but not on the node: %v", a, err)
		}
	}
	if in := b.intents(); len(in) != 0 {
		t.Errorf("journal not clean: %v", in)
	}
	p := r.plan(PlanOptions{})
	if n := len(actions(p)); n != 6-len(got) {
		t.Errorf("plan after interrupt has %d changes; want %d", n, 6-len(got))
	}
	r.apply(p)
	if got := b.addrs(); len(got) != 6 {
		t.Errorf("state = %v; want 6", got)
	}
}

// TestOrphanDeletedAfterItsFormerUserMovesAway: b used a; the new config
// has b stop using a and removes a. b must be updated before a is deleted
// (a container is reconfigured before the kit it mounted is removed).
func TestOrphanDeletedAfterItsFormerUserMovesAway(t *testing.T) {
	b := newBed(t)
	b.cfg("user").converge()
	b.tp.resetLog()
	r := b.cfg("user_moved")
	p := r.plan(PlanOptions{})
	want := map[string]plans.Action{thA: plans.Delete, thB: plans.Update}
	if got := actions(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("plan = %v; want %v", got, want)
	}
	r.apply(p)
	ops := b.tp.ops()
	if index(t, ops, "update "+thB) > index(t, ops, "delete "+thA) {
		t.Errorf("ops %q: a was deleted while b still used it", ops)
	}
}

// TestOutputsSurviveTargetedApply: outputs a targeted apply does not
// evaluate keep their values (the CLI stores ApplyResult.Outputs as the
// new set of outputs).
func TestOutputsSurviveTargetedApply(t *testing.T) {
	b := newBed(t)
	r := b.cfg("data")
	r.converge()
	id := b.attr(dataX, "id")
	p := r.plan(PlanOptions{Targets: mustTargets(dataCount0), Replace: mustInstances(dataCount0)})
	if got := actions(p); !reflect.DeepEqual(got, map[string]plans.Action{dataCount0: plans.DeleteThenCreate}) {
		t.Fatalf("plan = %v", got)
	}
	res := r.apply(p)
	if got := res.Outputs["x_id"]; got == cty.NilVal || !got.IsKnown() || got.AsString() != id {
		t.Errorf("apply result x_id = %#v; want %q kept", got, id)
	}
	outs := r.e.priorOutputs()
	if got := outs["x_id"]; got == cty.NilVal || got.AsString() != id {
		t.Errorf("stored x_id = %#v; want %q", got, id)
	}
	if p := r.plan(PlanOptions{}); p.HasChanges() {
		t.Errorf("plan after targeted apply has changes: %v, outputs %v", actions(p), p.Outputs)
	}
}

// TestJournalIntentWithoutRecord: an intent that carries no planned
// record (and has no state record) is reported and cleared, with or
// without refresh.
func TestJournalIntentWithoutRecord(t *testing.T) {
	for _, skip := range []bool{false, true} {
		t.Run(map[bool]string{false: "refresh", true: "refresh=false"}[skip], func(t *testing.T) {
			b := newBed(t)
			if err := b.st.PutIntent(&state.Intent{Address: thA, Action: "create"}); err != nil {
				t.Fatal(err)
			}
			r := b.cfg("chain_a_d")
			p, diags := r.planE(PlanOptions{SkipRefresh: skip})
			if diags.HasErrors() {
				t.Fatal(diagString(diags))
			}
			if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, thA+" was interrupted during create") {
				t.Errorf("notes %q do not report the intent", notes)
			}
			if in := b.intents(); len(in) != 0 {
				t.Errorf("intent not cleared: %v", in)
			}
			if got := p.Change(thA).Action; got != plans.Create {
				t.Errorf("a planned %s; want create", got)
			}
		})
	}
}

// TestReplaceWhoseDeleteFails: a plain replacement whose delete fails
// keeps the old object in state and creates nothing in its place; the
// independent create_before_destroy replacement still finishes.
func TestReplaceWhoseDeleteFails(t *testing.T) {
	b := newBed(t)
	b.cfg("replace").converge()
	oldPlain := b.attr("sftest_thing.plain", "id")
	oldCBD := b.attr("sftest_thing.cbd", "id")
	touch(t, filepath.Join(b.tp.dir, oldPlain+".inuse"))
	r := b.cfg("replace", "key=k2")
	_, diags := r.applyE(context.Background(), r.plan(PlanOptions{}))
	if !hasErrorContaining(diags, "sftest_thing.plain") {
		t.Fatalf("diagnostics do not name plain: %s", diagString(diags))
	}
	if got := b.attr("sftest_thing.plain", "id"); got != oldPlain {
		t.Errorf("plain id = %q; want the old %q kept", got, oldPlain)
	}
	if got := b.attr("sftest_thing.plain_user", "value"); got != oldPlain {
		t.Errorf("plain_user.value = %q; want %q unchanged", got, oldPlain)
	}
	newCBD := b.attr("sftest_thing.cbd", "id")
	if newCBD == oldCBD || b.attr("sftest_thing.cbd_user", "value") != newCBD {
		t.Errorf("cbd branch did not finish: cbd %s -> %s, user %s", oldCBD, newCBD, b.attr("sftest_thing.cbd_user", "value"))
	}
	if got := b.addrs(); len(got) != 4 {
		t.Errorf("state = %v; want 4 instances", got)
	}
	if in := b.intents(); len(in) != 0 {
		t.Errorf("journal not clean: %v", in)
	}
}

// TestFailureIsolatedPerInstance: a failure on one instance stops only the
// instances that take it (by key or whole); the same stack for the other
// key goes on and is stored.
func TestFailureIsolatedPerInstance(t *testing.T) {
	b := newBed(t)
	r := b.cfg("pernode", "fail=create")
	_, diags := r.applyE(context.Background(), r.plan(PlanOptions{}))
	if !hasErrorContaining(diags, `sftest_thing.kit["n1"]`) {
		t.Fatalf("diagnostics do not name the failed instance: %s", diagString(diags))
	}
	want := []string{`sftest_thing.kit["n2"]`, `sftest_thing.user["n2"]`}
	if got := b.addrs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("state = %v; want %v (n2's stack applied, n1's user and the whole-set user skipped)", got, want)
	}
	for _, o := range b.tp.ops() {
		if strings.Contains(o, `user["n1"]`) || strings.HasSuffix(o, "sftest_thing.all") {
			t.Errorf("%q ran although what it takes failed", o)
		}
	}
	r = b.cfg("pernode")
	p := r.plan(PlanOptions{})
	wantPlan := map[string]plans.Action{`sftest_thing.kit["n1"]`: plans.Create, `sftest_thing.user["n1"]`: plans.Create, "sftest_thing.all": plans.Create}
	if got := actions(p); !reflect.DeepEqual(got, wantPlan) {
		t.Fatalf("plan after the failure = %v; want %v", got, wantPlan)
	}
	r.apply(p)
	if p := r.plan(PlanOptions{}); p.HasChanges() {
		t.Errorf("not converged: %v", actions(p))
	}
}

// TestBatchWithOneFailure: instances applied together over one provider
// session, one of them failing, store exactly the ones that succeeded;
// the next apply creates only the failed one.
func TestBatchWithOneFailure(t *testing.T) {
	b := newBed(t)
	r := b.cfg("batchfail", "fail=create")
	r.e.parallelism = 30
	_, diags := r.applyE(context.Background(), r.plan(PlanOptions{}))
	if !hasErrorContaining(diags, `sftest_thing.many["k07"]`) {
		t.Fatalf("diagnostics do not name the failed instance: %s", diagString(diags))
	}
	var want []string
	for i := range 30 {
		if i != 7 {
			want = append(want, fmt.Sprintf(`sftest_thing.many["k%02d"]`, i))
		}
	}
	if got := b.addrs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("state = %v; want every instance but k07", got)
	}
	for _, a := range want {
		if got, w := b.attr(a, "value"), "v-"+strings.TrimSuffix(strings.TrimPrefix(a, `sftest_thing.many["`), `"]`); got != w {
			t.Errorf("%s stored value %q; want %q (results crossed)", a, got, w)
		}
	}
	if in := b.intents(); len(in) != 0 {
		t.Errorf("journal intents left: %v", in)
	}
	r = b.cfg("batchfail")
	p := r.plan(PlanOptions{})
	if got, w := actions(p), map[string]plans.Action{`sftest_thing.many["k07"]`: plans.Create}; !reflect.DeepEqual(got, w) {
		t.Fatalf("plan after the failure = %v; want %v", got, w)
	}
	r.apply(p)
}

// TestDeposedKeepsItsOwnTaint: when the old half of a
// create_before_destroy replacement cannot be deleted, the record kept
// under #deposed is the old object's, taint included. The destroy step
// took the taint (and hidden attributes) of the object now at the
// address: the new one, untainted.
func TestDeposedKeepsItsOwnTaint(t *testing.T) {
	b := newBed(t)
	b.cfg("cbd_fail").converge()
	rec := b.record("sftest_thing.cbd")
	rec.Status = state.StatusTainted
	if err := b.st.PutResource(rec); err != nil {
		t.Fatal(err)
	}
	r := b.cfg("cbd_fail")
	p := r.plan(PlanOptions{})
	if got := actions(p); got["sftest_thing.cbd"] != plans.CreateThenDelete {
		t.Fatalf("plan = %v; want the tainted object replaced, create first", got)
	}
	if _, diags := r.applyE(context.Background(), p); !diags.HasErrors() {
		t.Fatal("apply: the old half's delete did not fail")
	}
	if got := b.record("sftest_thing.cbd").Status; got == state.StatusTainted {
		t.Errorf("the new object is %q, want untainted", got)
	}
	if got := b.record("sftest_thing.cbd#deposed").Status; got != state.StatusTainted {
		t.Errorf("the deposed old object is %q, want %q (its own taint)", got, state.StatusTainted)
	}
}

// TestFailedCreateResumes: a create that fails half done (the object is
// made, then an error: a hub snapshot whose link was cut mid-transfer) of
// a type whose schema says it resumes creates is kept untainted: the next
// plan converges it in place instead of deleting what was made (a
// half-fetched model) and creating it again.
func TestFailedCreateResumes(t *testing.T) {
	thingSchema.ResumesCreate = true
	t.Cleanup(func() { thingSchema.ResumesCreate = false })
	b := newBed(t)
	r := b.cfg("chain", `fail={b="create-partial"}`)
	if _, diags := r.applyE(context.Background(), r.plan(PlanOptions{})); !hasErrorContaining(diags, thB) {
		t.Fatalf("apply diagnostics do not name %s: %s", thB, diagString(diags))
	}
	if st := b.record(thB).Status; st == state.StatusTainted {
		t.Errorf("b status = %q; want not tainted", st)
	}
	id := b.attr(thB, "id")
	r = b.cfg("chain")
	p := r.plan(PlanOptions{})
	if got := p.Change(thB).Action; got == plans.DeleteThenCreate || got == plans.CreateThenDelete {
		t.Fatalf("%s planned %s: a failed create of a type that resumes was replaced", thB, got)
	}
	r.apply(p)
	if got := b.attr(thB, "id"); got != id {
		t.Errorf("b was re-created: id %s, want %s kept", got, id)
	}
	if p := r.plan(PlanOptions{}); p.HasChanges() {
		t.Errorf("not converged: %v", actions(p))
	}
}
