package engine

import (
	"context"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// A saved plan whose planned value does not fit the resource's schema (a
// crafted or foreign plan file, issue 11 point 4) is refused before any
// change, naming the instance.
func TestSavedPlanValuesFitTheSchema(t *testing.T) {
	b := newBed(t)
	r := b.cfg("chain_a_d")
	p := r.plan(PlanOptions{})
	if len(p.Changes) == 0 {
		t.Fatal("nothing planned")
	}
	c := p.Changes[0]
	c.After = cty.ObjectVal(map[string]cty.Value{"surprise": cty.True})
	b.tp.resetLog()
	_, diags := r.applyE(context.Background(), p)
	if !hasErrorContaining(diags, "Saved plan does not fit the schema") || !hasErrorContaining(diags, "planned value of "+c.Addr) {
		t.Fatalf("apply of the crafted plan: %s", diagString(diags))
	}
	if ops := b.tp.ops(); len(ops) != 0 {
		t.Errorf("the refused plan changed the node: %q", ops)
	}
}
