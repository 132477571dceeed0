// This file holds the check a saved plan passes before apply changes
// anything: the instances it changes still look as they did at plan.

package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// checkPlanCurrent refreshes, before a saved plan's first change, every
// instance the plan saw (one ReadResources per provider per node, as at
// plan) and compares each with the prior the plan was made from. Any
// difference refuses the whole plan: applying it would act on values
// nobody reviewed (a hub ref moved, a module reloaded by hand), and
// stopping halfway (containers destroyed, their replacements refused by
// the per-instance check) is worse than not starting. The per-instance
// check at apply stays as the last line of defence.
func (e *Engine) checkPlanCurrent(ctx context.Context, p *plans.Plan, insts map[string]*stateObject) hcl.Diagnostics {
	toRead := map[string]*stateObject{}
	for _, c := range p.Changes {
		in, ok := insts[c.Addr]
		if !ok {
			continue
		}
		cp := *in
		if c.PriorNode != nil {
			cp.Node = *c.PriorNode // reach it the way the plan did
		}
		toRead[c.Addr] = &cp
	}
	refreshed, _, _, diags := e.refresh(ctx, toRead)
	if diags.HasErrors() {
		return append(diags, errDiag("Saved plan not applied",
			"The instances it changes could not be read again before the first change, so nothing was changed. Run apply again when the nodes can be reached, or plan again."))
	}
	var out hcl.Diagnostics
	for _, c := range p.Changes {
		before := c.Before
		if before == cty.NilVal {
			before = cty.NullVal(cty.DynamicPseudoType)
		}
		now := cty.NullVal(before.Type())
		if in, ok := refreshed[c.Addr]; ok {
			now = in.Value
		} else if _, read := toRead[c.Addr]; !read && !before.IsNull() {
			continue // not in state: CheckFresh already refused a plan like that
		}
		what := changedAttrs(before, now)
		if what == "" {
			continue
		}
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Saved plan no longer matches the nodes",
			Detail: fmt.Sprintf("%s changed on %s since the plan was made: %s. Nothing was changed on any node; run plan again to review what apply would do now.",
				c.Addr, nodeLabel(plans.NodeValue(c.Node)), what)}
		if r, ok := e.Module.Resources[c.Resource]; ok {
			rng := r.DeclRange
			d.Subject = &rng
		}
		out = append(out, d)
	}
	return append(diags, out...)
}

// changedAttrs describes how now differs from before, attribute by
// attribute ("" when they are the same).
func changedAttrs(before, now cty.Value) string {
	switch {
	case before.IsNull() && now.IsNull():
		return ""
	case before.IsNull():
		return "it exists now, and the plan would create it"
	case now.IsNull():
		return "it no longer exists"
	case sdk.ValuesEqual(before, now):
		return ""
	}
	if !before.Type().IsObjectType() || !now.Type().IsObjectType() {
		return "its value differs"
	}
	var names []string
	for n := range before.Type().AttributeTypes() {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		if !now.Type().HasAttribute(n) {
			continue
		}
		b, a := before.GetAttr(n), now.GetAttr(n)
		if sdk.ValuesEqual(b, a) {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s was %s, is now %s", n, short(b), short(a)))
	}
	if len(parts) == 0 {
		return "its value differs"
	}
	return strings.Join(parts, "; ")
}

// short renders a value for a one-line message.
func short(v cty.Value) string {
	switch {
	case !v.IsKnown():
		return "(known after apply)"
	case v.IsNull():
		return "null"
	case v.Type() == cty.String:
		s := v.AsString()
		if len(s) > 120 {
			s = s[:117] + "..."
		}
		return fmt.Sprintf("%q", s)
	case v.Type() == cty.Number:
		return v.AsBigFloat().Text('f', -1)
	case v.Type() == cty.Bool:
		return fmt.Sprint(v.True())
	case v.Type().IsListType() || v.Type().IsSetType() || v.Type().IsTupleType():
		return fmt.Sprintf("%d elements", v.LengthInt())
	case v.Type().IsMapType() || v.Type().IsObjectType():
		return fmt.Sprintf("%d entries", v.LengthInt())
	}
	return v.GoString()
}
