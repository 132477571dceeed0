package engine

import (
	"sort"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/engine/plans"
)

// released lists the resources whose body is let go.
func released(r *run) string {
	var out []string
	for key, res := range r.e.Module.Resources {
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

// Walks let go of each block's syntax tree when done with it, and a later
// walk on the same engine parses it again and plans the same.
func TestWalksReleaseBodies(t *testing.T) {
	const all = "sftest_thing.a sftest_thing.b sftest_thing.c sftest_thing.d"
	b := newBed(t)
	r := b.cfg("chain")

	p := r.plan(PlanOptions{})
	if got := released(r); got != "" {
		t.Fatalf("a plan of creates released %q: the apply evaluates them again", got)
	}
	r.apply(p)
	if got := released(r); got != all {
		t.Fatalf("after apply released %q, want %q", got, all)
	}
	// b and c read the ids of a and b through the bodies parsed again: a
	// wrong body would plan an update.
	p = r.plan(PlanOptions{})
	if p.HasChanges() {
		t.Fatalf("plan after apply, bodies parsed again: %v", actions(p))
	}
	if got := released(r); got != all {
		t.Fatalf("a plan of no-ops released %q, want %q", got, all)
	}
	// Its apply settles every instance without parsing a body again.
	r.apply(p)
	if got := released(r); got != all {
		t.Fatalf("the apply of no-ops parsed bodies again: released %q, want %q", got, all)
	}

	// value changes: d and a update (a's id stays), and the plan keeps the
	// bodies the apply evaluates.
	r2 := b.cfg("chain", "value=v2")
	p = r2.plan(PlanOptions{})
	want := map[string]plans.Action{"sftest_thing.a": plans.Update, "sftest_thing.d": plans.Update}
	if got := actions(p); len(got) != len(want) || got["sftest_thing.a"] != plans.Update || got["sftest_thing.d"] != plans.Update {
		t.Fatalf("plan v2: %v, want %v", got, want)
	}
	if got := released(r2); got != "sftest_thing.b sftest_thing.c" {
		t.Fatalf("plan v2 released %q, want the no-ops b and c", got)
	}
	r2.apply(p)
	if got := str(b, "sftest_thing.d", "value"); got != "v2" {
		t.Fatalf("d = %q after apply v2", got)
	}

	// A destroy reads no body; a plan after it on the same engine creates
	// everything again from the bodies parsed again.
	r2.apply(r2.plan(PlanOptions{Mode: plans.DestroyMode}))
	if got := released(r2); got != all {
		t.Fatalf("after destroy released %q, want %q", got, all)
	}
	if n := len(b.addrs()); n != 0 {
		t.Fatalf("%d instances left after destroy", n)
	}
	r2.converge()
	if got := str(b, "sftest_thing.d", "value"); got != "v2" {
		t.Fatalf("d = %q after the bodies were parsed again", got)
	}
	if got, want := str(b, "sftest_thing.c", "value"), str(b, "sftest_thing.b", "id")+"-c"; got != want {
		t.Fatalf("c = %q, want %q", got, want)
	}
}
