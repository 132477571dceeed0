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
//
// The plan's drift is read again the same way: apply stores it first,
// and a plan file is only a file, so a drift entry is stored only when
// its prior is what state holds and this refresh finds what it says (a
// record is forgotten only when its object is really gone). Drift that
// state already holds (an interrupted instance the plan settled) needs
// nothing. Anything else, or a change naming an instance that state does
// not hold, refuses the plan. It returns the drift addresses to store.
func (e *Engine) checkPlanCurrent(ctx context.Context, p *plans.Plan, insts map[string]*stateObject) (map[string]bool, hcl.Diagnostics) {
	var out hcl.Diagnostics
	confirm := map[string]bool{}
	refuse := func(c *plans.ResourceChange, addr string, node sdk.Node, what string) {
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Saved plan no longer matches the nodes",
			Detail: fmt.Sprintf("%s changed on %s since the plan was made: %s. Nothing was changed on any node; run plan again to review what apply would do now.",
				addr, nodeLabel(node), what)}
		if c != nil {
			if r, ok := e.module.Resources[c.Resource]; ok {
				rng := r.DeclRange
				d.Subject = &rng
			}
		}
		out = append(out, d)
	}
	notHeld := func(what, addr string) {
		out = append(out, errDiag("Saved plan no longer matches the nodes",
			fmt.Sprintf("The plan %s %s, which state does not hold (or holds as another type). The plan file was not made from this state, or was changed after; nothing was changed on any node. Run plan again.", what, addr)))
	}
	toRead := map[string]*stateObject{}
	for _, c := range p.Changes {
		in, ok := insts[c.Addr]
		if !ok || in.Type != c.Type {
			if ok || c.Before != cty.NilVal && !c.Before.IsNull() {
				notHeld("changes", c.Addr)
			}
			continue
		}
		cp := *in
		if c.PriorNode != nil {
			cp.Node = *c.PriorNode // reach it the way the plan did
		}
		toRead[c.Addr] = &cp
	}
	for _, d := range p.Drift {
		in, ok := insts[d.Addr]
		switch {
		case !ok && d.After.IsNull(), ok && in.Type == d.Type && sdk.ValuesEqual(d.After, in.Value):
			continue // state holds it already (settled at plan): nothing to store
		case !ok || in.Type != d.Type:
			notHeld("records drift of", d.Addr)
			continue
		case !sdk.ValuesEqual(d.Before, in.Value):
			refuse(nil, d.Addr, in.Node, "the drift the plan records for it starts from a value that is not the value state holds")
			continue
		}
		confirm[d.Addr] = true
		if _, ok := toRead[d.Addr]; !ok {
			toRead[d.Addr] = in
		}
	}
	if out.HasErrors() {
		return nil, out
	}
	refreshed, _, _, diags := e.refresh(ctx, toRead)
	if diags.HasErrors() {
		return nil, append(diags, errDiag("Saved plan not applied",
			"The instances it changes could not be read again before the first change, so nothing was changed. Run apply again when the nodes can be reached, or plan again."))
	}
	for _, c := range p.Changes {
		before := c.Before
		if before == cty.NilVal {
			before = cty.NullVal(cty.DynamicPseudoType)
		}
		now := cty.NullVal(before.Type())
		if in, ok := refreshed[c.Addr]; ok {
			now = in.Value
		}
		if what := changedAttrs(before, now); what != "" {
			refuse(c, c.Addr, plans.NodeValue(c.Node), what)
		}
	}
	for _, d := range p.Drift {
		if !confirm[d.Addr] {
			continue
		}
		now := cty.NullVal(d.Before.Type())
		if in, ok := refreshed[d.Addr]; ok {
			now = in.Value
		}
		switch what := changedAttrs(d.After, now); {
		case what == "":
		case d.After.IsNull():
			refuse(p.Change(d.Addr), d.Addr, insts[d.Addr].Node, "the plan records it as gone, but "+d.Addr+" is still on its node")
		default:
			refuse(p.Change(d.Addr), d.Addr, insts[d.Addr].Node, what)
		}
	}
	return confirm, append(diags, out...)
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

// checkPlanConfig refuses a saved normal plan that creates or updates an
// instance of a resource the configuration does not have: the walk would
// never reach it, and the change would be dropped without a word. (The
// configuration digest already ties a CLI plan to its files; this holds
// for any plan file.)
func (e *Engine) checkPlanConfig(p *plans.Plan) hcl.Diagnostics {
	if p.Mode != plans.NormalMode {
		return nil
	}
	var diags hcl.Diagnostics
	for _, c := range p.Changes {
		if c.Action == plans.Delete || c.Action == plans.NoOp {
			continue
		}
		if _, ok := e.module.Resources[c.Resource]; !ok {
			diags = append(diags, errDiag("Saved plan does not match the configuration",
				fmt.Sprintf("The plan would %s %s, but %s is not in the configuration. The plan file was made from other files, or changed after; nothing was changed on any node. Run plan again.",
					c.Action, c.Addr, c.Resource)))
		}
	}
	return diags
}
