package sdk

import "github.com/zclconf/go-cty/cty"

// HasMarks says whether v or anything in it is marked (sensitive); false
// for cty.NilVal. Unlike cty's ContainsMarked it builds no paths, and an
// object's attributes are read in place: the engine runs it on each
// instance's values, and the plugin host on every in-process request.
func HasMarks(v cty.Value) bool {
	if v == cty.NilVal {
		return false
	}
	if v.IsMarked() {
		return true
	}
	if v.IsNull() || !v.IsKnown() {
		return false
	}
	ty := v.Type()
	switch {
	case ty.IsObjectType():
		for name := range ty.AttributeTypes() {
			if HasMarks(v.GetAttr(name)) {
				return true
			}
		}
	case ty.IsCollectionType() || ty.IsTupleType():
		for it := v.ElementIterator(); it.Next(); {
			if _, e := it.Element(); HasMarks(e) {
				return true
			}
		}
	}
	return false
}
