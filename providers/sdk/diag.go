package sdk

import (
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// Severity of a Diagnostic.
type Severity int

const (
	Error Severity = iota + 1
	Warning
)

// Diagnostic is a provider's report of a problem. The engine turns it into
// an hcl.Diagnostic pointing at the attribute named by Path when the
// attribute has a source range.
type Diagnostic struct {
	Severity Severity
	Summary  string
	Detail   string
	// Path names the attribute the problem is about (may be empty).
	Path cty.Path
}

// Diagnostics is a list of Diagnostic.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Err returns the diagnostics as an error, or nil if there are no errors.
func (ds Diagnostics) Err() error {
	if !ds.HasErrors() {
		return nil
	}
	var b strings.Builder
	for i, d := range ds {
		if d.Severity != Error {
			continue
		}
		if i > 0 && b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.Summary)
		if d.Detail != "" {
			b.WriteString(": ")
			b.WriteString(d.Detail)
		}
	}
	return fmt.Errorf("%s", b.String())
}

// Errorf builds an error Diagnostic about the attribute at path (may be nil).
func Errorf(path cty.Path, summary, detailFormat string, args ...any) Diagnostic {
	return Diagnostic{Severity: Error, Summary: summary, Detail: fmt.Sprintf(detailFormat, args...), Path: path}
}

// FromError wraps a Go error as an error Diagnostic with the given summary.
func FromError(summary string, err error) Diagnostic {
	return Diagnostic{Severity: Error, Summary: summary, Detail: err.Error()}
}

// AttrPath is a shorthand for the path to a top-level attribute.
func AttrPath(name string) cty.Path { return cty.GetAttrPath(name) }
