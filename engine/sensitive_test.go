package engine

import (
	"context"
	"path/filepath"
	"regexp"
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

// TestRedactString: a sensitive string of minSecretLen characters or
// more is replaced wherever it occurs; a shorter one wherever it stands
// alone (not inside a longer word), so a message never repeats it as
// itself while ordinary words that merely contain it stay readable.
func TestRedactString(t *testing.T) {
	const h = "(sensitive value)"
	tests := []struct {
		name, msg string
		secrets   []string
		want      string
	}{
		{"long, inside a word", "token=xhunter2x", []string{"hunter2"}, "token=x" + h + "x"},
		{"short, as a field", "token=ab mode=x", []string{"ab"}, "token=" + h + " mode=x"},
		{"short, quoted", `value "ab" is bad`, []string{"ab"}, `value "` + h + `" is bad`},
		{"short, at both ends", "ab", []string{"ab"}, h},
		{"short, start and end", "ab:ab", []string{"ab"}, h + ":" + h},
		{"short, inside words", "about a lab cabin", []string{"ab"}, "about a lab cabin"},
		{"short, beside digits", "ab1 1ab _ab", []string{"ab"}, "ab1 1ab _ab"},
		{"one character", "exit 7; retry 7 times; 77", []string{"7"}, "exit " + h + "; retry " + h + " times; 77"},
		{"non-word characters", "pw=+-+ ok", []string{"+-+"}, "pw=" + h + " ok"},
		{"several", "a=hunter2 b=ab c=abc", []string{"hunter2", "ab"}, "a=" + h + " b=" + h + " c=abc"},
		{"a short one inside a long one", "k=xyz123", []string{"xyz123", "xy"}, "k=" + h},
		{"multi-byte", "pw=äö, ok", []string{"äö"}, "pw=" + h + ", ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redactString(tt.msg, tt.secrets); got != tt.want {
				t.Errorf("redactString(%q, %q) = %q, want %q", tt.msg, tt.secrets, got, tt.want)
			}
		})
	}
}

// TestSensitiveProviderMessages: a provider that repeats a sensitive
// value in its progress messages and in its errors has it redacted,
// whatever its length.
func TestSensitiveProviderMessages(t *testing.T) {
	for _, tok := range []string{"hunter2", "ab", "7"} {
		t.Run(tok, func(t *testing.T) {
			b := newBed(t)
			r := b.cfg("sensitive_messages", "tok="+tok)
			_, diags := r.applyE(context.Background(), r.plan(PlanOptions{}))
			msg := diagString(diags)
			if !strings.Contains(msg, "Test provider failure") || !strings.Contains(msg, "(value (sensitive value))") {
				t.Errorf("the error does not show the redacted value: %s", msg)
			}
			b.hooks.mu.Lock()
			progress := strings.Join(b.hooks.progress, "\n")
			b.hooks.mu.Unlock()
			if !strings.Contains(progress, "value = (sensitive value)") {
				t.Errorf("progress does not show the redacted value: %q", progress)
			}
			alone := regexp.MustCompile(`(^|[^\pL\pN_])` + regexp.QuoteMeta(tok) + `($|[^\pL\pN_])`)
			for what, s := range map[string]string{"error": msg, "progress": progress} {
				if alone.MatchString(s) {
					t.Errorf("%s repeats %q: %s", what, tok, s)
				}
			}
		})
	}
}

// TestSensitiveReadBatchMessages: an error or warning a provider gives
// for a whole read batch (no one instance's) is redacted of every
// instance's sensitive values; the plain ones still show.
func TestSensitiveReadBatchMessages(t *testing.T) {
	for _, tt := range []struct{ tok, fails string }{{"hunter2", "Read failed"}, {"ab", "Read failed"}, {"hunter2", "warning"}, {"ab", "warning"}} {
		t.Run(tt.tok+"/"+tt.fails, func(t *testing.T) {
			b := newBed(t)
			r := b.cfg("sensitive_read", "tok="+tt.tok)
			r.converge()
			b.tp.readFails.Store(&tt.fails)
			_, diags := r.planE(PlanOptions{})
			msg := diagString(diags)
			if !strings.Contains(msg, "(sensitive value)") || !strings.Contains(msg, "plain-value") {
				t.Errorf("the message does not show the values, redacted: %s", msg)
			}
			alone := regexp.MustCompile(`(^|[^\pL\pN_])` + regexp.QuoteMeta(tt.tok) + `($|[^\pL\pN_])`)
			if alone.MatchString(msg) {
				t.Errorf("the message repeats %q: %s", tt.tok, msg)
			}
		})
	}
}
