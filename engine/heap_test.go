package engine

import (
	"context"
	"runtime"
	"testing"
)

// liveHeap is the heap in use after two collections: the second empties
// the sync.Pools (bbolt's page buffers among them), which a single one
// only moves aside, so what a test measures is what its values keep.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// staticGraph is shape's configuration graph with the expansions known
// before a walk filled in, as a walk of it starts.
func staticGraph(t *testing.T, shape string, n int) (*Engine, *configGraph) {
	t.Helper()
	sr := newShapeRun(t, shape, n)
	e := &Engine{Module: sr.mod, Providers: sr.provs}
	cg, diags := e.buildConfigGraph(context.Background())
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	if diags := e.expandStatic(cg, newEvaluator(e.Module, cg, nil)); diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	return e, cg
}
