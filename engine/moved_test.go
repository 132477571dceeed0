package engine

import (
	"slices"
	"testing"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
)

// TestMovedAddressKeysWithHash: a moved block of a resource moves its
// instances whose keys hold '#' too, and leaves a deposed object where it
// is. Before, any '#' in an address kept it from moving: the plan then
// destroyed those instances and created them again under the new name.
func TestMovedAddressKeysWithHash(t *testing.T) {
	from := addrs.Resource{Type: "sparkform_data", Name: "a"}
	to := addrs.Resource{Type: "sparkform_data", Name: "b"}
	mv := &config.Moved{From: addrs.Target{Resource: &from}, To: addrs.Target{Resource: &to}}
	for _, tc := range []struct {
		addr, want string
		ok         bool
	}{
		{`sparkform_data.a["llama#2"]`, `sparkform_data.b["llama#2"]`, true},
		{`sparkform_data.a["#deposed"]`, `sparkform_data.b["#deposed"]`, true},
		{`sparkform_data.a[3]`, `sparkform_data.b[3]`, true},
		{`sparkform_data.a`, `sparkform_data.b`, true},
		{`sparkform_data.a["x"]#deposed`, ``, false},
		{`sparkform_data.ab["x#y"]`, ``, false},
	} {
		got, ok := movedAddress(tc.addr, mv, targetString(mv.From), targetString(mv.To))
		if got != tc.want || ok != tc.ok {
			t.Errorf("movedAddress(%s) = %q, %v; want %q, %v", tc.addr, got, ok, tc.want, tc.ok)
		}
	}
}

// TestMovedBlocksPlannedNotStored: a plan carries moved blocks out in
// memory only (it used to rename state before planning: even `plan`
// wrote state); the plan lists the moves and compares the moved objects
// with their new blocks, so nothing is re-created; the apply of the plan
// (through the plan file) stores the moves first. A move onto an address
// state holds is an error naming both, before anything changes.
func TestMovedBlocksPlannedNotStored(t *testing.T) {
	b := newBed(t)
	b.cfg("moved_before").converge()
	ids := map[string]string{"0": b.attr("sparkform_data.a[0]", "id"), "1": b.attr("sparkform_data.a[1]", "id")}
	meta, err := b.st.Meta()
	if err != nil {
		t.Fatal(err)
	}

	after := b.cfg("moved_after")
	p := after.plan(PlanOptions{})
	want := []plans.Move{{From: "sparkform_data.a[0]", To: "sparkform_data.b[0]"}, {From: "sparkform_data.a[1]", To: "sparkform_data.b[1]"}}
	if !slices.Equal(p.Moves, want) {
		t.Fatalf("moves = %v, want %v", p.Moves, want)
	}
	if got := actions(p); len(got) != 1 || got["sparkform_data.b[1]"] == plans.Create || got["sparkform_data.b[1]"] == "" {
		t.Errorf("actions = %v: want only b[1] changed in place or replaced, nothing created for the moves", got)
	}
	if !p.HasChanges() {
		t.Error("a plan with moves has changes to apply")
	}
	now, err := b.st.Meta()
	if err != nil {
		t.Fatal(err)
	}
	if now.Serial != meta.Serial || !slices.Equal(b.addrs(), []string{"sparkform_data.a[0]", "sparkform_data.a[1]", "sparkform_data.c"}) {
		t.Fatalf("plan wrote state: serial %d -> %d, addresses %v", meta.Serial, now.Serial, b.addrs())
	}

	after.apply(p)
	if got := b.addrs(); !slices.Equal(got, []string{"sparkform_data.b[0]", "sparkform_data.b[1]", "sparkform_data.c"}) {
		t.Fatalf("after apply: %v", got)
	}
	if got := b.attr("sparkform_data.b[0]", "id"); got != ids["0"] {
		t.Errorf("b[0] was re-created: id %s, was %s", got, ids["0"])
	}
	if got := b.attr("sparkform_data.b[1]", "input"); got != "changed" {
		t.Errorf("b[1] input = %q", got)
	}
	if p := after.plan(PlanOptions{}); p.HasChanges() || len(p.Moves) > 0 {
		t.Errorf("second plan: moves %v, actions %v", p.Moves, actions(p))
	}

	b2 := newBed(t)
	b2.cfg("moved_both").converge()
	_, diags := b2.cfg("moved_collide").planE(PlanOptions{})
	if !hasErrorContaining(diags, "sparkform_data.b is already in the state, so sparkform_data.a cannot move there") {
		t.Errorf("collision: %s", diagString(diags))
	}
	if got := b2.addrs(); !slices.Equal(got, []string{"sparkform_data.a", "sparkform_data.b"}) {
		t.Errorf("a refused move changed state: %v", got)
	}
}
