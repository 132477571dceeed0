package tfjsoncheck

import (
	"strings"
	"testing"
)

// TestPlanRejects: the checks catch what sparkform's documents did wrong
// before they followed the format, each alone.
func TestPlanRejects(t *testing.T) {
	const head = `{"format_version":"1.2","terraform_version":"x","timestamp":"t","planned_values":{"root_module":{}},"prior_state":{"format_version":"1.0"},`
	good := `{"address":"a_b.c[\"k\"]","mode":"managed","type":"a_b","name":"c","index":"k","provider_name":"a","change":{"actions":["create"],"before":null,"after":{"x":null},"after_sensitive":{"x":true}}}`
	for _, tc := range []struct{ name, doc, want string }{
		{"good", head + `"resource_changes":[` + good + `]}`, ""},
		{"no format version", `{"resource_changes":[]}`, "format version is missing"},
		{"flat change (no change object)", head + `"resource_changes":[{"address":"a_b.c","mode":"managed","type":"a_b","name":"c","provider_name":"a","actions":["create"]}]}`, "no change"},
		{"no mode, name, provider", head + `"resource_changes":[{"address":"a_b.c","type":"a_b","change":{"actions":["create"],"before":null,"after":{}}}]}`, `mode ""`},
		{"index disagrees", head + `"resource_changes":[{"address":"a_b.c[0]","mode":"managed","type":"a_b","name":"c","index":1,"provider_name":"a","change":{"actions":["create"],"before":null,"after":{}}}]}`, "its parts make"},
		{"sensitive value written", head + `"resource_changes":[` + strings.Replace(good, `"after":{"x":null}`, `"after":{"x":"hunter2"}`, 1) + `]}`, "sensitive value is written"},
		{"create with before", head + `"resource_changes":[` + strings.Replace(good, `"before":null`, `"before":{}`, 1) + `]}`, "create with a before value"},
		{"bad action", head + `"resource_changes":[` + strings.Replace(good, `["create"]`, `["rebuild"]`, 1) + `]}`, "not the format's"},
		{"sensitive output value", head + `"resource_changes":[],"output_changes":{"o":{"actions":["create"],"before":null,"after":"s","after_sensitive":true}}}`, "sensitive value is written"},
		{"no prior_state", `{"format_version":"1.2","terraform_version":"x","timestamp":"t","planned_values":{"root_module":{}}}`, "no prior_state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan([]byte(tc.doc))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestStateAndOutputsReject(t *testing.T) {
	if _, err := State([]byte(`{"lineage":"x","resources":[]}`)); err == nil || !strings.Contains(err.Error(), "format version is missing") {
		t.Errorf("state without format_version: %v", err)
	}
	if _, err := State([]byte(`{"format_version":"1.0","values":{"root_module":{"child_modules":[{"address":"module.a","child_modules":[{"address":"module.b"}]}]}}}`)); err == nil {
		t.Error("a module outside its caller passes")
	}
	if _, err := Outputs([]byte(`{"o":{"sensitive":true,"value":"s","type":"string"}}`)); err == nil {
		t.Error("a sensitive output value passes")
	}
	if _, err := Outputs([]byte(`{"o":{"sensitive":false,"value":"s"}}`)); err == nil {
		t.Error("an output without a type passes")
	}
	if _, err := Outputs([]byte(`{"o":{"sensitive":false,"value":1e400,"type":"number"}}`)); err != nil {
		t.Errorf("a big number: %v", err)
	}
}
