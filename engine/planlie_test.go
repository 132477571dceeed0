package engine

import (
	"context"
	"os"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
)

// A saved plan cannot lie (issue 31, section 3): drift read from a plan
// file deletes or rewrites a state record only when the refresh at apply
// finds the same; a change apply cannot carry out is refused, not dropped.

// TestSavedPlanDriftIsConfirmed: drift entries crafted into a plan file
// (forget an instance that is still on its node, rewrite its value, name
// an instance state does not hold) are refused before anything is stored
// or changed; real drift, still true at apply, is stored.
func TestSavedPlanDriftIsConfirmed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drift func(b *bed) *plans.Drift
		want  string
	}{
		{"forget an instance still on its node", func(b *bed) *plans.Drift {
			v := b.value(thA)
			return &plans.Drift{Addr: thA, Type: testThing, Before: v, After: cty.NullVal(v.Type())}
		}, thA + " is still on its node"},
		{"forget with a made-up prior", func(b *bed) *plans.Drift {
			return &plans.Drift{Addr: thA, Type: testThing, Before: cty.StringVal("x"), After: cty.NullVal(cty.String)}
		}, "not the value state holds"},
		{"rewrite a value", func(b *bed) *plans.Drift {
			v := b.value(thA)
			m := v.AsValueMap()
			m["value"] = cty.StringVal("forged")
			return &plans.Drift{Addr: thA, Type: testThing, Before: v, After: cty.ObjectVal(m)}
		}, `value was "forged", is now "v1"`},
		{"an instance state does not hold", func(b *bed) *plans.Drift {
			v := b.value(thA)
			return &plans.Drift{Addr: "sftest_thing.zz", Type: testThing, Before: v, After: v}
		}, "sftest_thing.zz, which state does not hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBed(t)
			r := b.cfg("chain_a_d")
			r.converge()
			p := r.plan(PlanOptions{})
			p.Drift = append(p.Drift, tc.drift(b))
			b.tp.resetLog()
			_, diags := r.applyE(context.Background(), p)
			if !hasErrorContaining(diags, "Saved plan no longer matches the nodes") || !hasErrorContaining(diags, tc.want) {
				t.Fatalf("apply of the plan with crafted drift: %s", diagString(diags))
			}
			if got := b.addrs(); len(got) != 2 {
				t.Errorf("state after the refused plan: %v, want a and d", got)
			}
			if got := b.attr(thA, "value"); got != "v1" {
				t.Errorf("a's value in state = %q, want v1", got)
			}
			if ops := b.tp.ops(); len(ops) != 0 {
				t.Errorf("the refused plan changed the node: %q", ops)
			}
		})
	}

	// Real drift is stored, in a refresh-only plan as in a normal one.
	t.Run("real drift", func(t *testing.T) {
		b := newBed(t)
		r := b.cfg("chain_a_d")
		r.converge()
		if err := os.Remove(b.tp.objPath(b.attr(thD, "id"))); err != nil {
			t.Fatal(err)
		}
		r.apply(r.plan(PlanOptions{Mode: plans.RefreshOnlyMode}))
		if got := b.addrs(); len(got) != 1 || got[0] != thA {
			t.Errorf("state after the refresh-only apply: %v, want a only", got)
		}
	})
	// Drift that is no longer true at apply is refused.
	t.Run("drift undone since", func(t *testing.T) {
		b := newBed(t)
		r := b.cfg("chain_a_d")
		r.converge()
		id := b.attr(thD, "id")
		writeObj(t, b.tp, id, "edited")
		p := r.plan(PlanOptions{Mode: plans.RefreshOnlyMode})
		if len(p.Drift) != 1 {
			t.Fatalf("drift = %v, want d's", p.Drift)
		}
		writeObj(t, b.tp, id, "v1")
		_, diags := r.applyE(context.Background(), p)
		if !hasErrorContaining(diags, "Saved plan no longer matches the nodes") {
			t.Fatalf("apply of the outdated refresh-only plan: %s", diagString(diags))
		}
		if got := b.attr(thD, "value"); got != "v1" {
			t.Errorf("d's value in state = %q, want v1", got)
		}
	})
}

// TestSavedPlanChangesAreCarriedOut: a change apply cannot carry out (of
// an instance state does not hold, of a resource the configuration does
// not have, of an instance the configuration does not make) is an error,
// never a silent skip with success.
func TestSavedPlanChangesAreCarriedOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(b *bed, p *plans.Plan)
		want string
	}{
		{"delete of an instance state does not hold", func(b *bed, p *plans.Plan) {
			v := b.value(thA)
			p.Changes = append(p.Changes, &plans.ResourceChange{Addr: "sftest_thing.zz", Resource: "sftest_thing.zz", Type: testThing, Provider: "sftest",
				Node: p.Changes[0].Node, PriorNode: p.Changes[0].Node, Action: plans.Delete, Before: v, After: cty.NullVal(v.Type())})
		}, "sftest_thing.zz, which state does not hold"},
		{"create of a resource not in the configuration", func(b *bed, p *plans.Plan) {
			v := b.value(thA)
			p.Changes = append(p.Changes, &plans.ResourceChange{Addr: "sftest_thing.zz", Resource: "sftest_thing.zz", Type: testThing, Provider: "sftest",
				Node: p.Changes[0].Node, Action: plans.Create, Before: cty.NullVal(v.Type()), After: v})
		}, "sftest_thing.zz is not in the configuration"},
		{"create of an instance the configuration does not make", func(b *bed, p *plans.Plan) {
			v := b.value(thA)
			p.Changes = append(p.Changes, &plans.ResourceChange{Addr: `sftest_thing.a["zz"]`, Resource: "sftest_thing.a", Type: testThing, Provider: "sftest",
				Node: p.Changes[0].Node, Action: plans.Create, Before: cty.NullVal(v.Type()), After: v})
		}, `sftest_thing.a["zz"], but its create was not carried out`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBed(t)
			r := b.cfg("chain_a_d")
			r.converge()
			p := r.plan(PlanOptions{})
			tc.mut(b, p)
			_, diags := r.applyE(context.Background(), p)
			if !hasErrorContaining(diags, tc.want) {
				t.Fatalf("apply: %s, want an error saying %q", diagString(diags), tc.want)
			}
			if got := b.addrs(); len(got) != 2 {
				t.Errorf("state after the refused plan: %v, want a and d", got)
			}
		})
	}
}
