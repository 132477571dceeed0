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
