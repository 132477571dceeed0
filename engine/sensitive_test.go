package engine

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/engine/plans"
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

// TestSensitiveVariablePaths: a sensitive variable marks its value, and
// the change of every instance that holds it, and the state record kept
// from that change (through a plan file), names where by path: a map's
// other keys, a list's other elements stay visible.
func TestSensitiveVariablePaths(t *testing.T) {
	b := newBed(t)
	r := b.cfg("sensitive_vars")
	p := r.plan(PlanOptions{})
	want := map[string][]string{
		"sparkform_data.env":            {"input.args[1]", "input.env.TOKEN", "output.args[1]", "output.env.TOKEN"},
		"sparkform_data.ref":            {"input.copied", "output.copied"},
		"sparkform_data.mod":            {"input", "output"},
		"sparkform_data.clear":          nil,
		"module.m.sparkform_data.inner": {"input.l", "input.t", "output.l", "output.t"},
	}
	for addr, w := range want {
		c := p.Change(addr)
		if c == nil {
			t.Fatalf("no change for %s", addr)
		}
		if !slices.Equal(c.SensitiveAttrs, w) {
			t.Errorf("plan: %s hides %q, want %q", addr, c.SensitiveAttrs, w)
		}
	}
	if o := p.Outputs["tok"]; o == nil || !o.Sensitive {
		t.Errorf("output tok: %+v, want sensitive", o)
	}
	r.apply(p)
	for addr, w := range want {
		if got := b.record(addr).SensitiveAttrs; !slices.Equal(got, w) {
			t.Errorf("state: %s keeps %q, want %q", addr, got, w)
		}
	}
	// Values in state are plain: the marks are only the paths.
	if got := b.attr("sparkform_data.clear", "input"); got != "hunter2" {
		t.Errorf("clear input = %q", got)
	}
}

// TestModuleOutputSensitive: a module output that holds a sensitive
// value must be declared sensitive, as a root output must.
func TestModuleOutputSensitive(t *testing.T) {
	b := newBed(t)
	r := b.cfg("sensitive_vars_badout")
	_, diags := r.planE(PlanOptions{})
	if !diags.HasErrors() || !strings.Contains(diagString(diags), "Output refers to sensitive values") {
		t.Fatalf("plan: %s, want the sensitive output error", diagString(diags))
	}
	if strings.Contains(diagString(diags), "hunter2") || strings.Contains(diagString(diags), "HUNTER2") {
		t.Errorf("the error shows the value: %s", diagString(diags))
	}
}

// TestSensitiveDrift: drift found at refresh carries the sensitive paths
// state keeps for the object, in a normal plan and in a refresh-only one
// (which has no change to take them from), through a plan file.
func TestSensitiveDrift(t *testing.T) {
	b := newBed(t)
	r := b.cfg("sensitive_drift")
	r.converge()
	writeObj(t, b.tp, b.attr("sftest_thing.d", "id"), "edited-secret")
	for _, mode := range []plans.Mode{plans.NormalMode, plans.RefreshOnlyMode} {
		p := r.plan(PlanOptions{Mode: mode})
		p.ConfigDigest = strings.Repeat("0", 64) // the CLI sets it (cmd/sparkform configDigest)
		f := filepath.Join(b.dir, "drift.bin")
		if err := plans.WriteFile(f, p); err != nil {
			t.Fatal(err)
		}
		p, err := plans.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Drift) != 1 || !slices.Equal(p.Drift[0].SensitiveAttrs, []string{"value"}) {
			t.Errorf("%s: drift %+v, want sftest_thing.d hiding value", mode, p.Drift)
		}
	}
}
