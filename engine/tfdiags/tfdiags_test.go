package tfdiags_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine/tfdiags"
)

type hostKeyError struct{ host string }

func (e *hostKeyError) Error() string { return "unknown host key for " + e.host }

type recoverable struct{}

func TestCarriedErrors(t *testing.T) {
	wrapped := fmt.Errorf("storing a.x: %w", fs.ErrPermission)
	hk := &hostKeyError{"spark-01"}
	old := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "with extra", Detail: "d", Extra: recoverable{}}
	ds := hcl.Diagnostics{
		tfdiags.FromError("Cannot store a.x", wrapped, " Run plan."),
		{Severity: hcl.DiagWarning, Summary: "a warning", Extra: nil},
		tfdiags.FromError("Cannot reach node", fmt.Errorf("node n: %w", hk), ""),
		tfdiags.Attach(old, context.Canceled),
	}
	if ds[0].Detail != "storing a.x: permission denied Run plan." {
		t.Errorf("detail %q", ds[0].Detail)
	}
	err := tfdiags.Err(ds)
	if !errors.Is(err, fs.ErrPermission) || !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is does not see the carried errors: %v", err)
	}
	var got *hostKeyError
	if !errors.As(err, &got) || got.host != "spark-01" {
		t.Errorf("errors.As: %v", got)
	}
	if err.Error() != ds.Error() {
		t.Errorf("message %q, want hcl's %q", err.Error(), ds.Error())
	}
	if _, ok := hcl.DiagnosticExtra[recoverable](old); !ok {
		t.Error("the Extra the diagnostic had is lost")
	}
	if tfdiags.ErrorOf(ds[1]) != nil || tfdiags.Err(ds[1:2]) != nil {
		t.Error("a warning carries nothing and is no error")
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is matches an error nobody carried")
	}
}
