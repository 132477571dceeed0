package sdk

import (
	"github.com/zclconf/go-cty/cty"
)

// ProposedNew is the value the engine proposes for an instance: the config,
// with every Computed attribute the config leaves null taken from prior, or
// unknown when there is no prior. Nested blocks are taken from config.
func ProposedNew(b *Block, prior, config cty.Value) cty.Value {
	if config.IsNull() || !config.IsKnown() {
		return config
	}
	vals := make(map[string]cty.Value, len(b.Attributes)+len(b.BlockTypes))
	for name, a := range b.Attributes {
		cv := config.GetAttr(name)
		switch {
		case a.Computed && cv.IsNull():
			if prior.IsNull() {
				vals[name] = cty.UnknownVal(a.Type)
			} else {
				vals[name] = prior.GetAttr(name)
			}
		default:
			vals[name] = cv
		}
	}
	for name := range b.BlockTypes {
		vals[name] = config.GetAttr(name)
	}
	return cty.ObjectVal(vals)
}

// DefaultPlan is the plan most resources want: no change when every
// configurable attribute equals prior; otherwise the proposed value with
// every Computed-only attribute unknown, and replacement for each ForceNew
// attribute or block that differs. Providers call it and then refine.
func DefaultPlan(s *ResourceSchema, req PlanRequest) PlanResponse {
	b := s.Block
	if req.Proposed.IsNull() { // delete
		return PlanResponse{Planned: req.Proposed, PlannedPrivate: req.PriorPrivate}
	}
	if req.Prior.IsNull() { // create
		return PlanResponse{Planned: req.Proposed, PlannedPrivate: req.PriorPrivate}
	}
	var replace []cty.Path
	changed := false
	for name, a := range b.Attributes {
		if a.Computed && !a.Optional {
			continue
		}
		pv, nv := req.Prior.GetAttr(name), req.Proposed.GetAttr(name)
		if ValuesEqual(pv, nv) {
			continue
		}
		changed = true
		if a.ForceNew {
			replace = append(replace, cty.GetAttrPath(name))
		}
	}
	for name, nb := range b.BlockTypes {
		pv, nv := req.Prior.GetAttr(name), req.Proposed.GetAttr(name)
		if ValuesEqual(pv, nv) {
			continue
		}
		changed = true
		if nb.ForceNew {
			replace = append(replace, cty.GetAttrPath(name))
		}
	}
	if !changed {
		return PlanResponse{Planned: req.Prior, PlannedPrivate: req.PriorPrivate}
	}
	vals := req.Proposed.AsValueMap()
	for name, a := range b.Attributes {
		if a.Computed && !a.Optional {
			vals[name] = cty.UnknownVal(a.Type)
		}
	}
	return PlanResponse{Planned: cty.ObjectVal(vals), RequiresReplace: replace, PlannedPrivate: req.PriorPrivate}
}

// ValuesEqual compares two values, treating any unknown as different and
// two nulls as equal.
func ValuesEqual(a, b cty.Value) bool {
	if !a.IsWhollyKnown() || !b.IsWhollyKnown() {
		return false
	}
	if a.IsNull() || b.IsNull() {
		return a.IsNull() && b.IsNull()
	}
	return a.Equals(b).True()
}
