package engine

import (
	"slices"
	"testing"
)

// TestSensitiveAttrsKeptInState: what a change hides is kept in the
// instance's state record (the config's sensitive(), the attributes
// sensitive with it, and a reference to one), and an apply that changes
// nothing writes it into a record that lacks it (state from before it
// was kept).
func TestSensitiveAttrsKeptInState(t *testing.T) {
	b := newBed(t)
	r := b.cfg("sensitive")
	r.converge()
	want := map[string][]string{
		"sparkform_data.a":     {"input", "output"},
		"sparkform_data.b":     {"input", "output"},
		"sparkform_data.plain": nil,
	}
	check := func(when string) {
		t.Helper()
		for addr, w := range want {
			if got := b.record(addr).SensitiveAttrs; !slices.Equal(got, w) {
				t.Errorf("%s: %s keeps %v, want %v", when, addr, got, w)
			}
		}
	}
	check("after the apply")

	for _, addr := range []string{"sparkform_data.a", "sparkform_data.b"} {
		rec := b.record(addr)
		rec.SensitiveAttrs = nil
		if err := b.st.PutResource(rec); err != nil {
			t.Fatal(err)
		}
	}
	p := r.plan(PlanOptions{})
	if p.HasChanges() {
		t.Fatalf("the plan has changes: %v", actions(p))
	}
	r.apply(p)
	check("after a no-change apply over records without them")
}
