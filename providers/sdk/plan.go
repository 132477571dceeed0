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
	if proposesPrior(b, prior, config) {
		return prior
	}
	return buildProposed(b, prior, config)
}

// proposesPrior says whether the proposal would equal prior exactly (same
// type, values and marks): every attribute it takes from config equals
// prior's, and prior has no attribute the schema lacks. That is every
// unchanged instance of a plan, and building an equal object costs cty a
// new object type and two maps each time.
func proposesPrior(b *Block, prior, config cty.Value) bool {
	if prior.IsNull() || !prior.IsKnown() || prior.IsMarked() || !prior.Type().IsObjectType() {
		return false
	}
	pty := prior.Type()
	if len(pty.AttributeTypes()) != len(b.Attributes)+len(b.BlockTypes) {
		return false
	}
	for name, a := range b.Attributes {
		if !pty.HasAttribute(name) {
			return false
		}
		cv := config.GetAttr(name)
		if a.Computed && cv.IsNull() {
			continue // taken from prior
		}
		if !cv.RawEquals(prior.GetAttr(name)) {
			return false
		}
	}
	for name := range b.BlockTypes {
		if !pty.HasAttribute(name) || !config.GetAttr(name).RawEquals(prior.GetAttr(name)) {
			return false
		}
	}
	return true
}

// buildProposed builds the proposal attribute by attribute.
func buildProposed(b *Block, prior, config cty.Value) cty.Value {
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
//
// It walks objects, tuples, lists and maps itself and asks cty only at
// the leaves (and for sets): cty's Equals looks for marks over the whole
// value at every level, which made comparing a 1,000-element list most of
// a no-op plan's CPU (bench/ssh.sh: bind_files, a manifest's files).
func ValuesEqual(a, b cty.Value) bool {
	if a.IsMarked() || b.IsMarked() {
		if !a.IsWhollyKnown() || !b.IsWhollyKnown() {
			return false
		}
		if a.IsNull() || b.IsNull() {
			return a.IsNull() && b.IsNull()
		}
		return a.Equals(b).True()
	}
	return equalKnown(a, b)
}

// equalKnown is ValuesEqual on unmarked values.
func equalKnown(a, b cty.Value) bool {
	if !a.IsKnown() || !b.IsKnown() {
		return false
	}
	if a.IsNull() || b.IsNull() {
		return a.IsNull() && b.IsNull() && a.IsWhollyKnown() && b.IsWhollyKnown()
	}
	ty := a.Type()
	if !ty.Equals(b.Type()) {
		return false
	}
	switch {
	case ty == cty.String:
		return a.AsString() == b.AsString() // cty keeps strings NFC-normalized
	case ty == cty.Bool:
		return a.True() == b.True()
	case ty.IsObjectType():
		for name := range ty.AttributeTypes() {
			if !equalKnown(a.GetAttr(name), b.GetAttr(name)) {
				return false
			}
		}
		return true
	case ty.IsListType(), ty.IsTupleType():
		if a.LengthInt() != b.LengthInt() {
			return false
		}
		ia, ib := a.ElementIterator(), b.ElementIterator()
		for ia.Next() && ib.Next() {
			_, va := ia.Element()
			_, vb := ib.Element()
			if !equalKnown(va, vb) {
				return false
			}
		}
		return true
	case ty.IsMapType():
		if a.LengthInt() != b.LengthInt() {
			return false
		}
		for it := a.ElementIterator(); it.Next(); {
			k, va := it.Element()
			if !b.HasIndex(k).True() || !equalKnown(va, b.Index(k)) {
				return false
			}
		}
		return true
	}
	// Primitives, sets, capsules: cty decides (an unknown inside a set
	// makes its answer unknown, which is "different" here).
	eq := a.Equals(b)
	return eq.IsKnown() && eq.True()
}
