package engine

import (
	"context"
	"sync"
	"testing"

	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/sdk"
)

// batchCounter forwards to a batch-validating provider and records the
// size of every batch it is sent.
type batchCounter struct {
	sdk.Provider
	mu    sync.Mutex
	sizes []int
}

func (b *batchCounter) ValidateResourceConfigs(ctx context.Context, reqs []sdk.ValidateRequest) []sdk.Diagnostics {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(reqs))
	b.mu.Unlock()
	return b.Provider.(sdk.BatchValidator).ValidateResourceConfigs(ctx, reqs)
}

// TestValidateHoldsOneChunkOfConfigs: Validate decodes and sends resource
// bodies a chunk at a time, so only one chunk's decoded values are live
// (all 10,000 of the blocks shape were, ~10 MB at the plan's peak). Every
// body is still checked once.
func TestValidateHoldsOneChunkOfConfigs(t *testing.T) {
	const n = 2500
	sr := newShapeRun(t, "blocks", n)
	bc := &batchCounter{Provider: sr.provs.provs[builtin.Name]}
	sr.provs.provs[builtin.Name] = bc
	e, done := sr.engine(t, "validate")
	defer done()
	if diags := e.Validate(context.Background()); diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	total := 0
	for _, s := range bc.sizes {
		total += s
		if s > validateChunk {
			t.Errorf("a validation batch of %d bodies, want at most %d live at once", s, validateChunk)
		}
	}
	if total != n {
		t.Errorf("%d bodies validated in batches %v, want %d", total, bc.sizes, n)
	}
}

// TestApplyReleasesConfigGraph: Apply, a run's last walk, does not keep
// the configuration graph that validate and plan shared (its vertices,
// edges and references: ~1 KB per block, ~11 MB of the blocks shape at
// 10,000, alive through the whole apply and destroy walks). A phase after
// it on the same engine builds the graph again and plans the same.
func TestApplyReleasesConfigGraph(t *testing.T) {
	sr := newShapeRun(t, "blocks", 50)
	e, done := sr.engine(t, "apply")
	defer done()
	p := shapePlan(t, e)
	if e.graph == nil {
		t.Fatal("the plan kept no configuration graph for the apply to reuse")
	}
	shapeApply(t, e, p)
	if e.graph != nil {
		t.Error("the engine keeps its configuration graph after Apply")
	}
	if p := shapePlan(t, e); p.HasChanges() {
		t.Error("the plan after apply, on the same engine, has changes")
	}
}
