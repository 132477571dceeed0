package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/sparkform/sparkform/engine/addrs"
)

// EachValues are each.key and each.value of one for_each instance.
type EachValues struct{ Key, Value cty.Value }

// Expansion is the set of instances of a node or resource block.
type Expansion struct {
	// Keys are in order: sorted for for_each, by index for count.
	Keys []addrs.InstanceKey
	// Each holds each.key/each.value per key; nil unless for_each.
	Each map[addrs.InstanceKey]EachValues
}

// Expand evaluates for_each or count (at most one may be non-nil). With
// neither, the block has one instance, addrs.NoKey.
func Expand(forEach, count hcl.Expression, ctx *hcl.EvalContext) (*Expansion, hcl.Diagnostics) {
	switch {
	case forEach != nil:
		return expandForEach(forEach, ctx)
	case count != nil:
		return expandCount(count, ctx)
	}
	return &Expansion{Keys: []addrs.InstanceKey{addrs.NoKey}}, nil
}

func expandForEach(expr hcl.Expression, ctx *hcl.EvalContext) (*Expansion, hcl.Diagnostics) {
	exp := &Expansion{Each: map[addrs.InstanceKey]EachValues{}}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return exp, diags
	}
	bad := func(summary, detail string) (*Expansion, hcl.Diagnostics) {
		return exp, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail,
			Subject: expr.Range().Ptr(), Expression: expr, EvalContext: ctx})
	}
	ty := v.Type()
	switch {
	case v.IsNull():
		return bad("Invalid for_each argument", "for_each is null. Give it a map, or a set of strings (e.g. toset([\"a\", \"b\"])); use {} for no instances.")
	case v.IsMarked():
		return bad("Invalid for_each argument", "for_each uses a sensitive value; instance keys are shown in plans, so they cannot be sensitive.")
	case !v.IsKnown():
		return bad("Invalid for_each argument", "The for_each value depends on values only known after apply, so sparkform cannot tell how many instances to make. Use values known in advance (variables, literals), or apply the resources it depends on first with -target.")
	case ty.IsMapType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			k, val := it.Element()
			key := addrs.StringKey(k.AsString())
			exp.Keys = append(exp.Keys, key)
			exp.Each[key] = EachValues{Key: k, Value: val}
		}
		return exp, diags
	case ty.IsSetType():
		if !ty.ElementType().Equals(cty.String) {
			if _, err := convert.Convert(v, cty.Set(cty.String)); err != nil || ty.ElementType() != cty.DynamicPseudoType {
				return bad("Invalid for_each set argument", fmt.Sprintf("for_each takes a set of strings, not a set of %s. Convert the elements, e.g. toset([for x in ... : tostring(x)]), or use a map.", ty.ElementType().FriendlyName()))
			}
		}
		if !v.IsWhollyKnown() {
			return bad("Invalid for_each argument", "The for_each set has elements only known after apply, so sparkform cannot tell the instance keys. Use values known in advance, or apply what they depend on first with -target.")
		}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.IsNull() {
				return bad("Invalid for_each set argument", "for_each sets must not contain null; remove the null element.")
			}
			key := addrs.StringKey(e.AsString())
			exp.Keys = append(exp.Keys, key)
			exp.Each[key] = EachValues{Key: e, Value: e}
		}
		return exp, diags
	case ty.IsListType() || ty.IsTupleType():
		return bad("Invalid for_each argument", fmt.Sprintf("for_each takes a map or a set of strings, not a %s: a list has no stable keys. Convert it with toset(...), or build a map with a for expression.", ty.FriendlyName()))
	}
	return bad("Invalid for_each argument", fmt.Sprintf("for_each takes a map or a set of strings, not %s.", ty.FriendlyName()))
}

func expandCount(expr hcl.Expression, ctx *hcl.EvalContext) (*Expansion, hcl.Diagnostics) {
	exp := &Expansion{}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return exp, diags
	}
	bad := func(detail string) (*Expansion, hcl.Diagnostics) {
		return exp, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid count argument", Detail: detail,
			Subject: expr.Range().Ptr(), Expression: expr, EvalContext: ctx})
	}
	if v.IsNull() {
		return bad("count is null. Give it a whole number >= 0.")
	}
	if !v.IsKnown() {
		return bad("The count value depends on values only known after apply, so sparkform cannot tell how many instances to make. Use values known in advance, or apply what it depends on first with -target.")
	}
	if v.IsMarked() {
		return bad("count uses a sensitive value; the number of instances is shown in plans, so it cannot be sensitive.")
	}
	n, err := convert.Convert(v, cty.Number)
	if err != nil {
		return bad(fmt.Sprintf("count must be a whole number, not %s.", v.Type().FriendlyName()))
	}
	bf := n.AsBigFloat()
	i, _ := bf.Int64()
	if !bf.IsInt() || bf.Sign() < 0 || i > 1<<20 {
		return bad(fmt.Sprintf("count must be a whole number from 0 to %d, not %s.", 1<<20, bf.Text('f', -1)))
	}
	for k := 0; k < int(i); k++ {
		exp.Keys = append(exp.Keys, addrs.IntKey(k))
	}
	return exp, diags
}

// CheckExpansion is validate's check of for_each and count: the checks
// Expand makes that need no known value. In ctx, values not known until
// plan are unknown; a for_each whose type is already known to be wrong
// (a list or tuple literal, a variable typed list(...)) or a count that
// cannot be a number is an error here, as plan would find.
func CheckExpansion(forEach, count hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	switch {
	case forEach != nil:
		v, diags := forEach.Value(ctx)
		if diags.HasErrors() || v.Type() == cty.DynamicPseudoType {
			return diags
		}
		if v.IsWhollyKnown() && !v.IsMarked() {
			_, d := expandForEach(forEach, ctx)
			return d
		}
		ty := v.Type()
		detail := ""
		switch {
		case ty.IsListType() || ty.IsTupleType():
			detail = fmt.Sprintf("for_each takes a map or a set of strings, not a %s: a list has no stable keys. Convert it with toset(...), or build a map with a for expression.", ty.FriendlyName())
		case ty.IsPrimitiveType():
			detail = fmt.Sprintf("for_each takes a map or a set of strings, not %s.", ty.FriendlyName())
		default:
			return diags
		}
		return append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid for_each argument", Detail: detail,
			Subject: forEach.Range().Ptr(), Expression: forEach, EvalContext: ctx})
	case count != nil:
		v, diags := count.Value(ctx)
		if diags.HasErrors() || v.Type() == cty.DynamicPseudoType {
			return diags
		}
		if _, err := convert.Convert(v, cty.Number); err != nil {
			return append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid count argument",
				Detail:  fmt.Sprintf("count takes a whole number >= 0, not %s.", v.Type().FriendlyName()),
				Subject: count.Range().Ptr(), Expression: count, EvalContext: ctx})
		}
		if v.IsKnown() && !v.IsMarked() {
			_, d := expandCount(count, ctx)
			return d
		}
		return diags
	}
	return nil
}
