package sdk

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// An apply plans each instance again with what is known at that moment
// (its dependencies are applied now) and applies that plan only when it
// keeps every value the reviewed plan knew: what was reviewed is what
// runs. Both steps are one call (PlanAndApply), which over the protocol
// is one apply item: the plugin plans, checks and applies, and the node
// is left untouched when the check fails.

// PlanApplyRequest asks for one instance to be planned again and, if the
// new plan is consistent with Reviewed, applied.
type PlanApplyRequest struct {
	TypeName string
	Address  string
	Node     Node
	// Prior is the object being updated (null for a create, including a
	// replacement's create); PriorPrivate its private data.
	Prior        cty.Value
	PriorPrivate []byte
	// Config is the configuration evaluated now, with nothing unknown
	// that the applied dependencies decide.
	Config cty.Value
	// Replaces is the object a replacement's create takes the place of
	// (null or cty.NilVal: none), as PlanRequest.Replaces.
	Replaces cty.Value
	// Reviewed is the planned value the user reviewed (may hold unknowns).
	Reviewed cty.Value
}

// PlanApplyResponse answers a PlanApplyRequest.
type PlanApplyResponse struct {
	// NewState, Private and Diagnostics are the apply's, as in
	// ApplyResponse, when Applied; otherwise Diagnostics says why the
	// apply did not start.
	ApplyResponse
	// Applied is false when the apply never started (the new plan failed
	// or is not consistent with Reviewed): nothing was changed on the node.
	Applied bool
	// PlanChanged is set when the new plan differs from Reviewed; Changed
	// is then the first path that differs.
	PlanChanged bool
	Changed     cty.Path
}

// PlanApplier is implemented by a Provider that plans and applies in one
// call (GRPCClient does: one item of the apply session). started is called
// once the apply has started (the plan was accepted), before any progress,
// with the moment it started: a caller may learn of a quick apply's start
// only with its result.
type PlanApplier interface {
	PlanAndApplyResourceChange(ctx context.Context, req PlanApplyRequest, started func(at time.Time), progress func(Progress)) PlanApplyResponse
}

// PlanAndApply plans req's instance again and applies it when the new plan
// is consistent with req.Reviewed: in one call when p is a PlanApplier,
// otherwise as PlanResourceChange, the check and ApplyResourceChange. The
// plugin side of the protocol serves it with the second form.
func PlanAndApply(ctx context.Context, p Provider, req PlanApplyRequest, started func(at time.Time), progress func(Progress)) PlanApplyResponse {
	if pa, ok := p.(PlanApplier); ok {
		return pa.PlanAndApplyResourceChange(ctx, req, started, progress)
	}
	var block *Block
	if sch, diags := p.GetSchema(ctx); !diags.HasErrors() && sch != nil && sch.ResourceTypes[req.TypeName] != nil {
		block = sch.ResourceTypes[req.TypeName].Block
	}
	return planAndApply(ctx, p, req, cty.NilVal, block, started, progress)
}

// withoutVolatile returns v with b's Volatile top-level attributes
// unknown: a reviewed plan does not hold an apply to them.
func withoutVolatile(b *Block, v cty.Value) cty.Value {
	if b == nil || v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() {
		return v
	}
	var vals map[string]cty.Value
	for name, a := range b.Attributes {
		if !a.Volatile || !v.Type().HasAttribute(name) {
			continue
		}
		if vals == nil {
			vals = v.AsValueMap()
		}
		vals[name] = cty.UnknownVal(a.Type)
	}
	if vals == nil {
		return v
	}
	return cty.ObjectVal(vals)
}

// planAndApply is PlanAndApply as separate calls on p; proposed is
// PlanRequest.Proposed (cty.NilVal: p computes it); block is the
// instance's schema (nil: unknown), whose Volatile attributes the check
// leaves out.
func planAndApply(ctx context.Context, p Provider, req PlanApplyRequest, proposed cty.Value, block *Block, started func(at time.Time), progress func(Progress)) PlanApplyResponse {
	replaces := req.Replaces
	if replaces == cty.NilVal {
		replaces = cty.NullVal(req.Prior.Type())
	}
	plan := p.PlanResourceChange(ctx, PlanRequest{TypeName: req.TypeName, Address: req.Address, Node: req.Node,
		Prior: req.Prior, Config: req.Config, Proposed: proposed, PriorPrivate: req.PriorPrivate, Replaces: replaces})
	if plan.Diagnostics.HasErrors() {
		// The plan's warnings were shown when it was made.
		return PlanApplyResponse{ApplyResponse: ApplyResponse{Diagnostics: withoutWarnings(plan.Diagnostics)}}
	}
	if plan.Planned == cty.NilVal || plan.Planned.IsNull() {
		return PlanApplyResponse{ApplyResponse: ApplyResponse{Diagnostics: Diagnostics{Errorf(nil, "Provider produced an invalid plan",
			"provider planned a null value for %s, which is not being destroyed; this is a bug in the provider", req.Address)}}}
	}
	if path, ok := ConsistentWithPlan(withoutVolatile(block, req.Reviewed), plan.Planned); !ok {
		return PlanApplyResponse{PlanChanged: true, Changed: path}
	}
	if started != nil {
		started(time.Now())
	}
	resp := p.ApplyResourceChange(ctx, ApplyRequest{TypeName: req.TypeName, Address: req.Address, Node: req.Node,
		Prior: req.Prior, Planned: plan.Planned, Config: req.Config, Private: plan.PlannedPrivate}, progress)
	return PlanApplyResponse{ApplyResponse: resp, Applied: true}
}

func withoutWarnings(ds Diagnostics) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity != Warning {
			out = append(out, d)
		}
	}
	return out
}

// ConsistentWithPlan reports whether planned keeps every value the
// reviewed plan knew; where the plan said "known after apply", anything
// goes. It returns the first path that differs.
func ConsistentWithPlan(reviewed, planned cty.Value) (cty.Path, bool) {
	if reviewed == cty.NilVal || planned == cty.NilVal {
		return nil, true
	}
	var bad cty.Path
	_ = cty.Walk(reviewed, func(p cty.Path, v cty.Value) (bool, error) {
		if bad != nil || !v.IsKnown() {
			return false, nil
		}
		nv, err := p.Apply(planned)
		if err != nil {
			bad = p.Copy()
			return false, nil
		}
		ty := v.Type()
		if !v.IsNull() && !ty.IsSetType() && (ty.IsObjectType() || ty.IsMapType() || ty.IsListType() || ty.IsTupleType()) {
			if !nv.IsKnown() || nv.IsNull() || (!ty.IsObjectType() && nv.LengthInt() != v.LengthInt()) {
				bad = p.Copy()
				return false, nil
			}
			return true, nil // compare the elements
		}
		if !nv.IsWhollyKnown() && v.IsWhollyKnown() || !ValuesEqual(v, nv) && v.IsWhollyKnown() {
			bad = p.Copy()
		}
		return false, nil
	})
	return bad, bad == nil
}

// DescribePath renders a value path for messages ("env[\"X\"]").
func DescribePath(p cty.Path) string {
	if len(p) == 0 {
		return "the whole object"
	}
	var b strings.Builder
	for _, st := range p {
		switch st := st.(type) {
		case cty.GetAttrStep:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(st.Name)
		case cty.IndexStep:
			if st.Key.Type() == cty.String {
				fmt.Fprintf(&b, "[%q]", st.Key.AsString())
			} else if st.Key.Type() == cty.Number {
				fmt.Fprintf(&b, "[%s]", st.Key.AsBigFloat().Text('f', -1))
			}
		}
	}
	return b.String()
}
