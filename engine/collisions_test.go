package engine

import (
	"strings"
	"testing"

	"github.com/sparkform/sparkform/engine/plans"
)

// TestCollisionsRefusedAtPlan: two instances that would manage the same
// object on one node (the provider's schema names the identifying
// attributes) are refused at plan, across modules, naming both addresses
// with a hint; different values, and values unknown until apply, pass.
func TestCollisionsRefusedAtPlan(t *testing.T) {
	b := newBed(t)
	_, diags := b.cfg("collide", "mod_owns=kit").planE(PlanOptions{})
	if !diags.HasErrors() {
		t.Fatal("a collision was planned")
	}
	var found bool
	for _, d := range diags {
		if d.Summary != "Two instances manage the same object" {
			continue
		}
		found = true
		for _, want := range []string{"module.second.sftest_thing.mine and sftest_thing.root", `owns = "kit"`, "node.local", "Hint:"} {
			if !strings.Contains(d.Detail, want) {
				t.Errorf("detail lacks %q:\n%s", want, d.Detail)
			}
		}
	}
	if !found {
		t.Fatalf("no collision diagnostic: %s", diagString(diags))
	}
	if ops := b.tp.ops(); len(ops) != 0 {
		t.Errorf("a refused plan ran operations: %v", ops)
	}

	// Distinct identities plan and apply; the one known only at apply
	// (owns = id of another) is not compared.
	r := b.cfg("collide")
	p := r.plan(PlanOptions{})
	if got := actions(p); len(got) != 3 || got["module.second.sftest_thing.unknown"] != plans.Create {
		t.Fatalf("plan = %v", got)
	}
	r.apply(p)
	// Now the root claims what the module instance owns: refused before
	// anything changes.
	if _, diags := b.cfg("collide", "root_owns=other").planE(PlanOptions{}); !hasErrorContaining(diags, "sftest_thing.root") {
		t.Errorf("collision with an existing instance: %s", diagString(diags))
	}
}

// TestCollisionsFoldSpellings: values the schema's IdentityFold takes as
// one object (dash_underscore: '-' and '_', as kernel module names) are a
// collision too, and the message shows both spellings; a fold does not
// join values that differ otherwise. Before, "my-kit" and "my_kit" were
// compared as written and both planned.
func TestCollisionsFoldSpellings(t *testing.T) {
	b := newBed(t)
	_, diags := b.cfg("collide", "root_owns=my-kit", "mod_owns=my_kit").planE(PlanOptions{})
	var found bool
	for _, d := range diags {
		if d.Summary == "Two instances manage the same object" {
			found = true
			for _, want := range []string{"module.second.sftest_thing.mine and sftest_thing.root", `owns = "my-kit"`, `owns = "my_kit"`} {
				if !strings.Contains(d.Detail, want) {
					t.Errorf("detail lacks %q:\n%s", want, d.Detail)
				}
			}
		}
	}
	if !found {
		t.Fatalf("my-kit and my_kit planned side by side: %s", diagString(diags))
	}
	if _, diags := b.cfg("collide", "root_owns=my-kit", "mod_owns=my.kit").planE(PlanOptions{}); diags.HasErrors() {
		t.Errorf("my-kit and my.kit refused: %s", diagString(diags))
	}
}
