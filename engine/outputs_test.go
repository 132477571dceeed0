package engine

import (
	"context"
	"testing"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestOutputsKeptByRefusedAndRefreshOnlyApply: an apply that is refused
// (a stale saved plan) or only refreshes returns the stored outputs, so
// nothing that saves its result can wipe them; a complete destroy
// returns none.
func TestOutputsKeptByRefusedAndRefreshOnlyApply(t *testing.T) {
	b := newBed(t)
	r := b.cfg("data")
	r.converge()
	stored := r.e.priorOutputs()
	if len(stored) != 2 {
		t.Fatalf("stored outputs = %v, want x_id and each_inputs", stored)
	}
	same := func(what string, res *ApplyResult) {
		t.Helper()
		if len(res.Outputs) != len(stored) {
			t.Errorf("%s: outputs %v, want %v", what, res.Outputs, stored)
		}
		for name, v := range stored {
			if got, ok := res.Outputs[name]; !ok || !sdk.ValuesEqual(got, v) {
				t.Errorf("%s: output %s = %#v, want %#v", what, name, got, v)
			}
		}
	}

	stale := r.plan(PlanOptions{})
	r.apply(r.plan(PlanOptions{Replace: mustInstances(dataCount0)})) // the state moves on
	stored = r.e.priorOutputs()
	res, diags := r.applyE(context.Background(), stale)
	if !hasErrorContaining(diags, "stale") {
		t.Fatalf("stale plan applied: %s", diagString(diags))
	}
	same("refused stale plan", res)

	same("refresh-only apply", r.apply(r.plan(PlanOptions{Mode: plans.RefreshOnlyMode})))

	if res := r.apply(r.plan(PlanOptions{Mode: plans.DestroyMode})); len(res.Outputs) != 0 {
		t.Errorf("outputs after a complete destroy: %v, want none", res.Outputs)
	}
}

// TestSavedPlanRefusedWhenANodeMovedOn: a saved plan whose instances
// changed on the node after it was made is refused before its first
// change, naming instance and attribute; nothing is applied.
func TestSavedPlanRefusedWhenANodeMovedOn(t *testing.T) {
	b := newBed(t)
	r := b.cfg("chain_a_d")
	r.converge()
	p := r.plan(PlanOptions{Replace: mustInstances(thA)})
	writeObj(t, b.tp, b.attr(thD, "id"), "edited")
	b.tp.resetLog()
	_, diags := r.applyE(context.Background(), p)
	if !hasErrorContaining(diags, "Saved plan no longer matches the nodes") ||
		!hasErrorContaining(diags, thD+" changed on") || !hasErrorContaining(diags, `value was "v1", is now "edited"`) {
		t.Fatalf("apply of the outdated plan: %s", diagString(diags))
	}
	if ops := b.tp.ops(); len(ops) != 0 {
		t.Errorf("the refused plan changed the node: %q", ops)
	}
	if got := b.attr(thD, "value"); got != "v1" {
		t.Errorf("state of d = %q, want v1 (the refused plan stores nothing)", got)
	}
}
