package main

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/state"
)

// The CLI keeps the state's *LockedError when it adds what to do: callers
// up to the command still tell a held lock from other failures (it was
// flattened to text with %v).
func TestOpenStateKeepsLockedError(t *testing.T) {
	dir := t.TempDir()
	holder, err := state.Open(filepath.Join(dir, ".sparkform", "state.db"), state.Options{Command: "sparkform apply"})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	m := &meta{chdir: dir, stdout: io.Discard, stderr: io.Discard}
	_, err = m.openState(0, "sparkform plan")
	var le *state.LockedError
	if !errors.As(err, &le) || le.Holder == nil || le.Holder.Command != "sparkform apply" {
		t.Fatalf("errors.As(*state.LockedError) failed for %v", err)
	}
	if !strings.Contains(err.Error(), "sparkform force-unlock "+le.Holder.ID()) {
		t.Errorf("the hint is gone: %v", err)
	}
}
