package engine

import (
	"context"
	"testing"
	"time"

	"github.com/sparkform/sparkform/engine/plans"
)

// TestDestroyPlanEvaluatesNodesAlone: a destroy plan evaluates the node
// blocks (and the locals they use) to point state's objects at the nodes
// as configured now, and decodes no resource body for it. Before, it built
// the whole configuration graph, every resource body decoded and its
// references parsed, to read the nodes alone (~0.2 CPU s of a
// 10,000-block destroy).
func TestDestroyPlanEvaluatesNodesAlone(t *testing.T) {
	b := newBed(t)
	b.cfg("destroy_nodes", "timeout=20s").converge()

	r := b.cfg("destroy_nodes", "timeout=40s")
	cg, ev, diags := r.e.planConfig(context.Background(), PlanOptions{Mode: plans.DestroyMode, Variables: r.vars})
	if diags.HasErrors() {
		t.Fatalf("destroy's configuration: %s", diagString(diags))
	}
	if n := ev.nodeInstances()["node.local"]; n.Timeout != 40*time.Second {
		t.Errorf("node local evaluated as %+v; want timeout 40s", n)
	}
	if decoded := cg.decoders.Len(); decoded != 0 {
		t.Errorf("the destroy plan decoded %d resource bodies; want none", decoded)
	}

	p := r.plan(PlanOptions{Mode: plans.DestroyMode})
	if len(p.Changes) != 3 {
		t.Fatalf("destroy plan has %d changes; want 3", len(p.Changes))
	}
	for _, c := range p.Changes {
		if c.Action != plans.Delete || c.Node.Timeout != 40*time.Second {
			t.Errorf("%s: %s on a node with timeout %s; want delete, 40s (the node as configured now)", c.Addr, c.Action, c.Node.Timeout)
		}
	}
	r.apply(p)
	if got := b.addrs(); len(got) != 0 {
		t.Errorf("state after destroy holds %v", got)
	}
}
