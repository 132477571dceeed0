package engine

import (
	"context"
	"testing"

	"github.com/sparkform/sparkform/internal/heaptest"
)

// liveHeap is heaptest.Live: what the values alive keep.
func liveHeap() uint64 { return heaptest.Live() }

// staticGraph is shape's configuration graph with the expansions known
// before a walk filled in, as a walk of it starts.
func staticGraph(t *testing.T, shape string, n int) (*Engine, *configGraph) {
	t.Helper()
	sr := newShapeRun(t, shape, n)
	e := New(Options{Module: sr.mod, Providers: sr.provs})
	cg, diags := e.buildConfigGraph(context.Background())
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	if diags := e.expandStatic(cg, newEvaluator(e.module, cg, nil)); diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	return e, cg
}
