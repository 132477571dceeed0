// This file holds the destroy plan: delete every instance in state, or
// with -target the targets and whatever state records as depending on them.

package engine

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
)

// planDestroy adds a delete per instance to destroy, and each stored
// output's removal.
func (e *Engine) planDestroy(in *planInputs, p *plans.Plan) hcl.Diagnostics {
	in.filter.expand(nil)
	for addr := range destroySet(in.prior, in.filter) {
		if in.left.skip(in.prior[addr].Node, addr) {
			continue // on a node left out: named in the plan, kept in state
		}
		p.Changes = append(p.Changes, deleteChange(p, in.prior[addr], ""))
	}
	diags := e.checkPreventDestroy(p)
	prior, storedSens := e.priorOutputsSensitive()
	for name, before := range prior {
		sens := storedSens[name]
		if o := e.module.Outputs[name]; o != nil {
			sens = sens || o.Sensitive
		}
		p.Outputs[name] = &plans.OutputChange{Before: before, After: cty.NullVal(cty.DynamicPseudoType), Sensitive: sens}
	}
	p.Sort()
	return diags
}
