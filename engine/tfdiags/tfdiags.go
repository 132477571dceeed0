package tfdiags

import (
	"github.com/hashicorp/hcl/v2"
)

// carried is the Extra of a diagnostic made from an error. It wraps any
// Extra the diagnostic had (hcl.DiagnosticExtraUnwrapper).
type carried struct {
	err  error
	next any
}

func (c *carried) UnwrapDiagnosticExtra() any { return c.next }

// FromError is an error diagnostic of summary whose detail is err's
// message followed by more (may be ""), carrying err.
func FromError(summary string, err error, more string) *hcl.Diagnostic {
	return Attach(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: err.Error() + more}, err)
}

// Attach makes d carry err (d is returned); a nil err changes nothing.
func Attach(d *hcl.Diagnostic, err error) *hcl.Diagnostic {
	if err != nil {
		d.Extra = &carried{err: err, next: d.Extra}
	}
	return d
}

// ErrorOf is the error d carries, nil if none.
func ErrorOf(d *hcl.Diagnostic) error {
	if c, ok := hcl.DiagnosticExtra[*carried](d); ok {
		return c.err
	}
	return nil
}

// Error is hcl.Diagnostics as an error that unwraps to the Go errors its
// error diagnostics carry.
type Error struct {
	Diagnostics hcl.Diagnostics
}

func (e *Error) Error() string { return e.Diagnostics.Error() }

// Unwrap returns the carried errors (errors.Is and errors.As look at each).
func (e *Error) Unwrap() []error {
	var out []error
	for _, d := range e.Diagnostics {
		if d.Severity != hcl.DiagError {
			continue
		}
		if err := ErrorOf(d); err != nil {
			out = append(out, err)
		}
	}
	return out
}

// Err is ds as an error, nil when ds has no errors.
func Err(ds hcl.Diagnostics) error {
	if !ds.HasErrors() {
		return nil
	}
	return &Error{Diagnostics: ds}
}
