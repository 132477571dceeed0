package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// unreachable is a node check's typed error, as providers/node's
// *HostKeyError is.
type unreachable struct{ node string }

func (e *unreachable) Error() string { return "no route to " + e.node }

// Errors reach the caller of Plan and Apply as errors, not only as text
// (tfdiags): errors.As finds the node check's typed error, and errors.Is
// finds state.ErrLockLost when the real bbolt lock is broken under an
// apply (force-unlock), through the diagnostics.
func TestDiagnosticsCarryErrors(t *testing.T) {
	b := newBed(t)
	r := b.cfg("collide") // node.elsewhere is reached over SSH
	r.e.nodeCheck = func(ctx context.Context, n sdk.Node) error { return &unreachable{n.Name} }
	_, diags := r.planE(PlanOptions{})
	var ue *unreachable
	if err := tfdiags.Err(diags); !errors.As(err, &ue) || ue.node != "node.elsewhere" {
		t.Fatalf("node check: errors.As found %v in %v", ue, err)
	}
	if !strings.Contains(diags.Error(), "no route to node.elsewhere") {
		t.Errorf("the message changed: %v", diags)
	}

	r = b.cfg("chain")
	p := r.plan(PlanOptions{})
	if _, err := state.ForceUnlock(r.b.path, state.UnlockOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	_, diags = r.e.Apply(context.Background(), p)
	if err := tfdiags.Err(diags); !errors.Is(err, state.ErrLockLost) {
		t.Fatalf("apply after the lock was broken: errors.Is(ErrLockLost) false for %v", err)
	}
}
