//go:build !sparkform_faultinject

package sdk

import (
	"os"
	"testing"
)

// TestShippedBuildHasNoFaultPause: without the sparkform_faultinject tag
// the fault variables are ignored: a variable set by accident can never
// stop a real apply.
func TestShippedBuildHasNoFaultPause(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SPARKFORM_FAULT_PAUSE", "create:kmod_module.x")
	t.Setenv("SPARKFORM_FAULT_DIR", dir)
	faultPoint("kmod_module", applyAction(true, false), "kmod_module.x")
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the shipped build announced a pause: %v", ents[0].Name())
	}
}

func TestApplyAction(t *testing.T) {
	for _, tt := range []struct {
		priorNull, plannedNull bool
		want                   string
	}{{true, false, "create"}, {false, false, "update"}, {false, true, "delete"}} {
		if got := applyAction(tt.priorNull, tt.plannedNull); got != tt.want {
			t.Errorf("applyAction(%v, %v) = %q, want %q", tt.priorNull, tt.plannedNull, got, tt.want)
		}
	}
}
