// This file holds the normal plan: walk the configuration, plan every
// instance it produces (plan_instance.go), and delete what state holds
// that the configuration no longer produces.

package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
)

// planNormal walks the configuration graph and completes p; diags are
// those of planInputs.
func (e *Engine) planNormal(ctx context.Context, in *planInputs, opts PlanOptions, p *plans.Plan, diags hcl.Diagnostics) (*plans.Plan, hcl.Diagnostics) {
	in.filter.expand(in.cg)
	pl := newPlanner(e, p, in, opts)
	g := in.cg.walkGraph(e.module, in.filter.vertex, in.filter.instance)
	e.releaseRootBodies(in.cg)
	diags = append(diags, e.walk(ctx, g, in.ev, walkFuncs{
		resource: pl.planBlock, instance: pl.planInstanceVertex, output: e.planOutput(p)})...)
	if diags.HasErrors() {
		return nil, diags
	}
	p.Changes = append(pl.changes, e.orphanDeletes(p, in, pl.seen)...)
	for _, a := range opts.Replace {
		if c := p.Change(a.String()); c == nil || !c.Action.IsReplace() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Nothing to replace at " + a.String(),
				Detail: fmt.Sprintf("-replace=%s names no existing instance this plan keeps, so it has no effect. `sparkform state list` shows the instances there are.", a)})
		}
	}
	diags = append(diags, e.checkPreventDestroy(p)...)
	diags = append(diags, e.checkCollisions(ctx, p)...)
	p.Sort()
	return p, diags
}

// planOutput records each output's change in p.
func (e *Engine) planOutput(p *plans.Plan) func(string, cty.Value) {
	priorOutputs, priorSens := e.priorOutputsSensitive()
	return func(name string, val cty.Value) {
		if o := e.module.Outputs[name]; o != nil {
			before, ok := priorOutputs[name]
			if !ok {
				before = cty.NullVal(cty.DynamicPseudoType)
			}
			// Hidden when it is sensitive now or was: its old value shows.
			p.Outputs[name] = &plans.OutputChange{Before: before, After: val, Sensitive: o.Sensitive || priorSens[name]}
		}
	}
}

// orphanDeletes are the deletes of what is in state but no longer
// produced by the configuration (within the targets).
func (e *Engine) orphanDeletes(p *plans.Plan, in *planInputs, seen map[string]bool) []*plans.ResourceChange {
	var out []*plans.ResourceChange
	for addr, obj := range in.prior {
		if seen[addr] || !in.filter.instance(addr) {
			continue
		}
		if in.filter != nil && !in.filter.blocks[resourceV(obj.Resource)] {
			continue
		}
		if in.left.skip(obj.Node, addr) {
			continue // on a node left out: named in the plan, not deleted
		}
		reason := "no longer in the configuration"
		if _, ok := e.module.Resources[obj.Resource]; ok {
			reason = "its key is no longer produced by for_each/count"
		}
		if strings.HasSuffix(addr, deposedSuffix) {
			reason = "a deposed object left by an earlier create_before_destroy"
		}
		out = append(out, deleteChange(p, obj, reason))
	}
	return out
}
