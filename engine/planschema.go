// This file holds the schema check a saved plan passes before apply
// changes anything: every value fits its resource type.

package engine

import (
	"context"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
)

// checkPlanSchema refuses a saved plan whose values do not fit the schema
// of their resource type (a plan file written by another build, or
// edited): before any change, with the instance named. A value of the
// wrong shape would otherwise reach the provider, or be stored.
func (e *Engine) checkPlanSchema(ctx context.Context, p *plans.Plan) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, c := range p.Changes {
		schema, err := e.schemaFor(ctx, c.Type)
		if err != nil {
			diags = append(diags, errDiag("Saved plan not applied", fmt.Sprintf("%s: %v. Nothing was changed; run plan again.", c.Addr, err)))
			continue
		}
		ty := schema.Block.ImpliedType()
		for _, v := range []struct {
			what string
			val  cty.Value
		}{{"prior", c.Before}, {"planned", c.After}} {
			if v.val == cty.NilVal || v.val.IsNull() {
				continue
			}
			if errs := v.val.Type().TestConformance(ty); len(errs) > 0 {
				diags = append(diags, errDiag("Saved plan does not fit the schema",
					fmt.Sprintf("The %s value of %s in the plan file does not fit resource type %s: %v. The file was not written by this sparkform or was changed after; nothing was changed on any node. Run plan again.",
						v.what, c.Addr, c.Type, errs[0])))
			}
		}
	}
	return diags
}
