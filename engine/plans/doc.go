// Package plans holds what a plan is: per resource instance the action, the
// value before and after (unknown where only apply can know), the paths that
// force replacement, and the drift refresh found; and the plan file format.
//
// A plan records the state lineage and serial it was made against; applying
// it to a state that has moved on is refused (ErrStalePlan). Values are
// stored as self-describing msgpack (cty.DynamicPseudoType), so a plan file
// round-trips unknown values exactly.
package plans
