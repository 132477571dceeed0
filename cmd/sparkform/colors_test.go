package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine/plans"
)

// Colour is on only when the renderer says so, whatever fatih/color
// guesses about the test's stdout (not a terminal here).
func TestColours(t *testing.T) {
	tests := []struct {
		name  string
		color bool
		got   func(color bool) string
		want  string
	}{
		{"create on", true, func(c bool) string { return (&renderer{color: c}).symbol(plans.Create) }, "\x1b[32m  +\x1b[0m"},
		{"create off", false, func(c bool) string { return (&renderer{color: c}).symbol(plans.Create) }, "  +"},
		{"delete on", true, func(c bool) string { return (&renderer{color: c}).symbol(plans.Delete) }, "\x1b[31m  -\x1b[0m"},
		{"error head on", true, func(c bool) string {
			var b bytes.Buffer
			writeDiagnostic(&b, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad"}, nil, c)
			return strings.SplitN(b.String(), "\n", 2)[0]
		}, "\x1b[1;31mError:\x1b[22;0m Bad"},
		{"warning head on", true, func(c bool) string {
			var b bytes.Buffer
			writeDiagnostic(&b, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Hm"}, nil, c)
			return strings.SplitN(b.String(), "\n", 2)[0]
		}, "\x1b[1;33mWarning:\x1b[22;0m Hm"},
		{"error head off", false, func(c bool) string {
			var b bytes.Buffer
			writeDiagnostic(&b, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Bad"}, nil, c)
			return strings.SplitN(b.String(), "\n", 2)[0]
		}, "Error: Bad"},
	}
	for _, tt := range tests {
		if got := tt.got(tt.color); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
