package engine

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine/plans"
)

// released lists the resources whose body is let go.
func released(r *run) string {
	var out []string
	for key, res := range r.e.module.Resources {
		if res.Released() {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// str is a string attribute of addr's stored value.
func str(b *bed, addr, name string) string {
	v := b.value(addr)
	if v.IsNull() || !v.Type().HasAttribute(name) {
		return "<none>"
	}
	return v.GetAttr(name).AsString()
}

// A destroy lets go of every resource body and the configuration graph
// before it starts (it reads neither); a plan and apply after it on the
// same engine build the graph again, from the decoders the blocks kept,
// and plan the same.
func TestDestroyReleasesBodies(t *testing.T) {
	const all = "sftest_thing.a sftest_thing.b sftest_thing.c sftest_thing.d"
	b := newBed(t)
	r := b.cfg("chain", "value=v2")
	r.converge()
	if got := released(r); got != all {
		t.Fatalf("plan and apply released %q, want %q (every root block)", got, all)
	}
	firstC := str(b, "sftest_thing.c", "value")

	p := r.plan(PlanOptions{Mode: plans.DestroyMode})
	if got := released(r); got != all {
		t.Fatalf("a destroy plan released %q, want %q", got, all)
	}
	if r.e.graph != nil {
		t.Fatal("a destroy plan kept the configuration graph")
	}
	r.apply(p)
	if n := len(b.addrs()); n != 0 {
		t.Fatalf("%d instances left after destroy", n)
	}
	if got := released(r); got != all {
		t.Fatalf("the destroy's apply parsed bodies again: released %q, want %q", got, all)
	}

	// b and c read a's and b's ids through the decoders kept; d its
	// variable. Nothing was parsed again.
	r.converge()
	if got := released(r); got != all {
		t.Fatalf("released %q after a plan and apply, want %q", got, all)
	}
	if got := str(b, "sftest_thing.d", "value"); got != "v2" {
		t.Fatalf("d = %q after the bodies were parsed again, want v2", got)
	}
	if got, want := str(b, "sftest_thing.c", "value"), str(b, "sftest_thing.b", "id")+"-c"; got != want {
		t.Fatalf("c = %q, want %q", got, want)
	}
	if str(b, "sftest_thing.c", "value") == firstC {
		t.Fatalf("c kept the destroyed b's id: %q", firstC)
	}
}

// Every change of a plan on one node shares one *sdk.Node (176 bytes, two
// per change, 7 MB of a 10,000-instance plan when each had its own).
func TestPlanChangesShareNode(t *testing.T) {
	b := newBed(t)
	r := b.cfg("chain")
	check := func(what string, p *plans.Plan, prior bool) {
		t.Helper()
		if len(p.Changes) != 4 {
			t.Fatalf("%s: %d changes", what, len(p.Changes))
		}
		first := p.Changes[0].Node
		for _, c := range p.Changes {
			if c.Node == nil || c.Node != first || c.NodeName() != "node.local" {
				t.Fatalf("%s: %s on %p (%s), %s on %p", what, c.Addr, c.Node, c.NodeName(), p.Changes[0].Addr, first)
			}
			if prior != (c.PriorNode != nil) || (prior && c.PriorNode != first) {
				t.Fatalf("%s: %s prior node %p, want %v and %p", what, c.Addr, c.PriorNode, prior, first)
			}
		}
	}
	p := r.plan(PlanOptions{})
	check("creates", p, false)
	r.apply(p)
	check("no-ops", r.plan(PlanOptions{}), true)
	check("deletes", r.plan(PlanOptions{Mode: plans.DestroyMode}), true)
}

// A plan lets go of the root blocks' bodies before its walk, keeping
// their decoders; a module's block keeps its body (its instances share
// it). The apply parses none again and applies what the plan
// said; a provider diagnostic naming an attribute of a released block
// parses that block's body again to point at the attribute.
func TestPlanReleasesRootBodies(t *testing.T) {
	const want = "sftest_thing.a sftest_thing.b sftest_thing.c sftest_thing.counted"
	b := newBed(t)
	r := b.cfg("released")
	p := r.plan(PlanOptions{})
	if got := released(r); got != want {
		t.Fatalf("a plan released %q, want %q", got, want)
	}
	r.apply(p)
	if got := released(r); got != want {
		t.Fatalf("after apply released %q, want %q: a body was parsed again", got, want)
	}
	a := str(b, "sftest_thing.a", "id")
	for addr, value := range map[string]string{"sftest_thing.b": a + "-b", "sftest_thing.c": a + "-b",
		"sftest_thing.counted[1]": a + "-1", `module.m.sftest_thing.inner`: a + "-b-inner"} {
		if got := str(b, addr, "value"); got != value {
			t.Errorf("%s = %q, want %q", addr, got, value)
		}
	}
	if p := r.plan(PlanOptions{}); len(p.Changes) != 0 && !allNoOp(p) {
		t.Errorf("the plan after apply is not a no-op: %v", actions(p))
	}

	// c's update fails: the provider's diagnostic names c's fail argument.
	r = b.cfg("released", "fail=update")
	_, diags := r.applyE(context.Background(), r.plan(PlanOptions{}))
	var subject *hcl.Range
	for _, d := range diags {
		if d.Summary == "Test provider failure" {
			subject = d.Subject
		}
	}
	if subject == nil || subject.Start.Line != 27 || subject.Start.Column != 11 || !strings.HasSuffix(subject.Filename, "released/main.sf.hcl") {
		t.Fatalf("the failure points at %v, want c's fail argument (main.sf.hcl:27,11)\n%s", subject, diagString(diags))
	}
}

func allNoOp(p *plans.Plan) bool {
	for _, c := range p.Changes {
		if c.Action != plans.NoOp {
			return false
		}
	}
	return true
}
