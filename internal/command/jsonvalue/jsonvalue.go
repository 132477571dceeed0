package jsonvalue

import (
	"encoding/json"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
)

// Value turns v into plain JSON data; unknowns become null and are listed
// in unknown, shaped as Terraform's after_unknown: true for a wholly
// unknown value, an object or array of the masks of the parts that hold
// one, false when nothing is unknown. Marks are dropped: use Sensitive
// for a value that may hold a sensitive part.
func Value(v cty.Value) (val, unknown any) {
	if v == cty.NilVal || !v.IsKnown() {
		return nil, true
	}
	if v.IsNull() {
		return nil, false
	}
	v, _ = v.UnmarkDeep()
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString(), false
	case ty == cty.Bool:
		return v.True(), false
	case ty == cty.Number:
		// The shortest decimal that reads back as the same number, as
		// OpenTofu writes it: exact digits for big whole numbers, no
		// exponent for small fractions (0.0000001, not 1e-07).
		return json.Number(v.AsBigFloat().Text('f', -1)), false
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		out := []any{}
		var unk []any
		anyUnk := false
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			j, u := Value(e)
			out = append(out, j)
			unk = append(unk, u)
			if u != false {
				anyUnk = true
			}
		}
		if !anyUnk {
			return out, false
		}
		return out, unk
	case ty.IsMapType() || ty.IsObjectType():
		out := map[string]any{}
		unk := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			j, u := Value(e)
			out[k.AsString()] = j
			if u != false {
				unk[k.AsString()] = u
			}
		}
		if len(unk) == 0 {
			return out, false
		}
		return out, unk
	}
	return nil, false
}

// Sensitive is Value of v with the places paths name (sensitive paths,
// config.SensitivePaths) and any marked place replaced by null, and
// Terraform's sensitive mask of v: true where a value was hidden, an
// object (or array) of the masks of the parts that hold one, false
// elsewhere. A known, non-null object's mask is always an object (a
// resource's sensitive_values is one).
func Sensitive(v cty.Value, paths []string) (val, unknown, mask any) {
	if v != cty.NilVal && len(paths) > 0 && v.IsKnown() && !v.IsNull() && v.Type().IsObjectType() {
		v = config.MarkPaths(v, paths)
	}
	if v == cty.NilVal || !v.ContainsMarked() {
		val, unknown = Value(v)
		if isObject(v) {
			return val, unknown, map[string]any{}
		}
		return val, unknown, false
	}
	val, unknown, mask = marked(v)
	if mask == false && isObject(v) {
		mask = map[string]any{}
	}
	return val, unknown, mask
}

func isObject(v cty.Value) bool {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return false
	}
	v, _ = v.Unmark()
	return v.Type().IsObjectType()
}

// marked is Sensitive's walk of a marked value.
func marked(v cty.Value) (any, any, any) {
	if v.HasMark(config.SensitiveMark) {
		return nil, !v.IsKnown(), true
	}
	v, _ = v.Unmark()
	if !v.ContainsMarked() || !v.IsKnown() || v.IsNull() {
		j, u := Value(v)
		return j, u, false
	}
	ty := v.Type()
	switch {
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		out, unk, sens := []any{}, []any{}, []any{}
		anyUnk, anySens := false, false
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			j, u, m := marked(e)
			out, unk, sens = append(out, j), append(unk, u), append(sens, m)
			anyUnk = anyUnk || u != false
			anySens = anySens || m != false
		}
		var ru, rm any = false, false
		if anyUnk {
			ru = unk
		}
		if anySens {
			rm = sens
		}
		return out, ru, rm
	case ty.IsMapType() || ty.IsObjectType():
		out, unk, sens := map[string]any{}, map[string]any{}, map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			j, u, m := marked(e)
			out[k.AsString()] = j
			if u != false {
				unk[k.AsString()] = u
			}
			if m != false {
				sens[k.AsString()] = m
			}
		}
		var ru, rm any = false, false
		if len(unk) > 0 {
			ru = unk
		}
		if len(sens) > 0 {
			rm = sens
		}
		return out, ru, rm
	}
	j, u := Value(v)
	return j, u, false
}

// Path is p as the format writes a path: an array of steps, an attribute
// name or map key as a string, a list index as a number
// (["env", "TOKEN"], ["args", 1]).
func Path(p cty.Path) []any {
	out := make([]any, 0, len(p))
	for _, st := range p {
		switch st := st.(type) {
		case cty.GetAttrStep:
			out = append(out, st.Name)
		case cty.IndexStep:
			j, _ := Value(st.Key)
			out = append(out, j)
		}
	}
	return out
}

// PathString is p as sparkform writes one for people: env["TOKEN"],
// args[1].
func PathString(p cty.Path) string {
	s := ""
	for _, st := range p {
		switch st := st.(type) {
		case cty.GetAttrStep:
			if s != "" {
				s += "."
			}
			s += st.Name
		case cty.IndexStep:
			j, _ := Value(st.Key)
			b, _ := json.Marshal(j)
			s += "[" + string(b) + "]"
		}
	}
	return s
}
