// This file holds the walker: it runs a walk graph in dependency order,
// evaluates locals, nodes and outputs itself, and hands resource work to
// the phase walking (plan, apply, import) through walkFuncs.

package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/graph"
	"github.com/sparkform/sparkform/engine/tfdiags"
)

// walkParallelism is the least number of graph vertices in flight
// (Engine.walkWidth); provider calls are bounded separately by the
// limiters.
const walkParallelism = 64

// walkFuncs does the resource work of one walk; locals, nodes and outputs
// are evaluated by walk itself. A nil field means the phase has no such
// work, and walk skips those vertices.
type walkFuncs struct {
	// resource handles a block walked whole (keys known only in the walk).
	resource func(context.Context, string) hcl.Diagnostics
	// instance handles one instance vertex of a statically expanded block.
	instance func(context.Context, *instanceVertex) hcl.Diagnostics
	// output receives each output's value; calls are serialised.
	output func(string, cty.Value)
	// destroy handles apply's destroy step of one instance address.
	destroy func(context.Context, string) hcl.Diagnostics
}

// errFailed marks a vertex whose failure is already in the diagnostics.
var errFailed = errors.New("failed")

// walk runs g: each vertex after everything it depends on succeeded; a
// failed vertex's dependents are skipped, independent work goes on.
func (e *Engine) walk(ctx context.Context, g *walkGraph, ev *evaluator, f walkFuncs) hcl.Diagnostics {
	var mu sync.Mutex
	var diags hcl.Diagnostics
	errs := g.walk(ctx, e.walkWidth(), func(ctx context.Context, v vertex) error {
		d := g.visit(ctx, v, ev, f, &mu)
		if len(d) > 0 {
			mu.Lock()
			diags = append(diags, d...)
			mu.Unlock()
		}
		if d.HasErrors() {
			return errFailed
		}
		return nil
	})
	for name, err := range errs {
		if err == errFailed || err == graph.ErrUpstreamFailed {
			continue
		}
		diags = append(diags, tfdiags.FromError("Could not process "+name, err, ""))
	}
	return diags
}

// visit does the work of one vertex; mu serialises f.output.
func (g *walkGraph) visit(ctx context.Context, v vertex, ev *evaluator, f walkFuncs, mu *sync.Mutex) hcl.Diagnostics {
	switch v.kind {
	case localVertex:
		return ev.evalLocal(v.addr)
	case nodeVertex:
		return ev.evalNode(v.addr)
	case outputVertex:
		val, d := ev.evalOutput(v.addr)
		if !d.HasErrors() && f.output != nil {
			mu.Lock()
			f.output(v.addr, val)
			mu.Unlock()
		}
		return d
	case destroyVertex:
		if f.destroy != nil {
			return f.destroy(ctx, v.addr)
		}
	case instanceVertexKind:
		if f.instance != nil {
			return f.instance(ctx, g.instances[v.addr])
		}
	case resourceVertex:
		// A static block's vertex only gathers its instances, or is its
		// one unkeyed instance's.
		if _, static := ev.cg.expansions[v.addr]; !static && f.resource != nil {
			return f.resource(ctx, v.addr)
		}
		if iv := g.instances[v.addr]; iv != nil && f.instance != nil {
			return f.instance(ctx, iv)
		}
	}
	return nil // destroyAllVertex: ordering only
}
