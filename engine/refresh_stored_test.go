package engine

import (
	"context"
	"testing"

	"github.com/sparkform/sparkform/engine/plans"
)

// A refresh that finds an object unchanged keeps the object loadState
// made, with the record bytes it was decoded from (which went to the
// provider as they are); an object that changed on its node is a new
// one that carries no old bytes, so its drift is seen and its record is
// the new value. Both sparkform_data (dynamic attributes) and sftest
// (none) objects.
func TestRefreshKeepsUnchangedObjects(t *testing.T) {
	for _, fixture := range []string{"chain_a_d", "data"} {
		t.Run(fixture, func(t *testing.T) {
			b := newBed(t)
			r := b.cfg(fixture)
			r.converge()
			changed := ""
			if fixture == "chain_a_d" {
				changed = thD
				writeObj(t, b.tp, b.attr(thD, "id"), "edited")
			}
			objs, diags := r.e.loadState()
			if diags.HasErrors() {
				t.Fatal(diagString(diags))
			}
			before := map[string]*stateObject{}
			for addr, in := range objs {
				if in.stored == nil {
					t.Errorf("%s: loaded without its stored bytes", addr)
				}
				before[addr] = in
			}
			refreshed, drift, _, diags := r.e.refresh(context.Background(), objs)
			if diags.HasErrors() {
				t.Fatal(diagString(diags))
			}
			if len(refreshed) != len(before) {
				t.Fatalf("%d objects refreshed; want %d", len(refreshed), len(before))
			}
			for addr, in := range before {
				got := refreshed[addr]
				if addr != changed {
					if got != in {
						t.Errorf("%s: unchanged, but refresh made a new object", addr)
					}
					continue
				}
				if got == in || got.stored != nil {
					t.Errorf("%s: changed on its node, but refresh kept the object or its old bytes", addr)
				}
				rec, err := got.record()
				if err != nil {
					t.Fatal(err)
				}
				v, err := ResourceValue(rec)
				if err != nil {
					t.Fatal(err)
				}
				if s := v.GetAttr("value").AsString(); s != "edited" {
					t.Errorf("%s: record holds value %q; want edited", addr, s)
				}
			}
			wantDrift := 0
			if changed != "" {
				wantDrift = 1
			}
			if len(drift) != wantDrift || wantDrift == 1 && drift[0].Addr != changed {
				t.Errorf("drift %+v; want %d, of %q", drift, wantDrift, changed)
			}
			// The plan over it sees the same: an update of the changed
			// one, nothing for the rest.
			p := r.plan(PlanOptions{})
			for _, c := range p.Changes {
				want := plans.NoOp
				if c.Addr == changed {
					want = plans.Update
				}
				if c.Action != want {
					t.Errorf("%s planned %s; want %s", c.Addr, c.Action, want)
				}
			}
		})
	}
}
