package main

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
)

// TestSensitiveDiff: an update of a collection with a sensitive part is
// shown member by member; a changed member that is sensitive on either
// side shows as "~ KEY = (sensitive value)", never with a value, and an
// unchanged one as it is.
func TestSensitiveDiff(t *testing.T) {
	s := func(v string) cty.Value { return cty.StringVal(v).Mark(config.SensitiveMark) }
	str := cty.StringVal
	tests := []struct {
		name string
		b, a cty.Value
		want []string // lines, trimmed; nil: not walked
	}{
		{"only the secret changed",
			cty.MapVal(map[string]cty.Value{"HF_TOKEN": s("old-secret"), "MODE": str("x")}),
			cty.MapVal(map[string]cty.Value{"HF_TOKEN": s("new-secret"), "MODE": str("x")}),
			[]string{"~ HF_TOKEN = (sensitive value)", `MODE     = "x"`},
		},
		{"a plain value becomes sensitive",
			cty.ObjectVal(map[string]cty.Value{"k": str("was-plain"), "o": str("same")}),
			cty.ObjectVal(map[string]cty.Value{"k": s("now-secret"), "o": str("same")}),
			[]string{"~ k = (sensitive value)", `o = "same"`},
		},
		{"added and removed secrets",
			cty.ObjectVal(map[string]cty.Value{"gone": s("gone-secret"), "p": str("1")}),
			cty.ObjectVal(map[string]cty.Value{"new": s("new-secret"), "p": str("2")}),
			[]string{"- gone = (sensitive value) -> null", "+ new  = (sensitive value)", `~ p    = "1" -> "2"`},
		},
		{"nested",
			cty.ObjectVal(map[string]cty.Value{"env": cty.ObjectVal(map[string]cty.Value{"T": s("old-secret")}), "args": cty.TupleVal([]cty.Value{str("--serve"), s("old-secret")})}),
			cty.ObjectVal(map[string]cty.Value{"env": cty.ObjectVal(map[string]cty.Value{"T": s("new-secret")}), "args": cty.TupleVal([]cty.Value{str("--serve"), s("new-secret")})}),
			[]string{"~ env  = {", "~ T = (sensitive value)", "~ args = [", `"--serve",`, "~ (sensitive value),"},
		},
		{"sensitive whole on one side: not walked", s("x"), cty.MapVal(map[string]cty.Value{"a": str("b")}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &renderer{}
			got, ok := r.sensitiveDiff(tt.b, tt.a, "      ")
			if ok != (tt.want != nil) {
				t.Fatalf("ok = %v: %s", ok, got)
			}
			if strings.Contains(got, "secret") || strings.Contains(got, "was-plain") {
				t.Errorf("a sensitive value is shown:\n%s", got)
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(got, "\n") {
				lines[strings.TrimSpace(l)] = true
			}
			for _, w := range tt.want {
				if !lines[w] {
					t.Errorf("no line %q in:\n%s", w, got)
				}
			}
		})
	}
}
