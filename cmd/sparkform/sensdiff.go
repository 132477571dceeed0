package main

import (
	"sort"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// sensitiveDiff renders an update of a map, object or list that holds a
// sensitive part (b and a marked where they are sensitive) member by
// member, as Terraform does: unchanged members as they are (sensitive
// ones as "(sensitive value)"), a changed member "~ k = old -> new", and
// a changed sensitive member "~ k = (sensitive value)", never either
// side. So a change of only the sensitive part still shows where it is.
// ok is false when b and a are not two collections of one shape to walk.
func (r *renderer) sensitiveDiff(b, a cty.Value, indent string) (string, bool) {
	if !walkable(b) || !walkable(a) {
		return "", false
	}
	bo, ao := isObjectish(b), isObjectish(a)
	if bo != ao || !bo && b.LengthInt() != a.LengthInt() {
		return "", false
	}
	var bm, am map[string]cty.Value
	var names []string
	if bo {
		bm, am = b.AsValueMap(), a.AsValueMap()
		seen := map[string]bool{}
		for _, m := range []map[string]cty.Value{bm, am} {
			for k := range m {
				if !seen[k] {
					seen[k] = true
					names = append(names, k)
				}
			}
		}
		sort.Strings(names)
	} else {
		bm, am = map[string]cty.Value{}, map[string]cty.Value{}
		bl, al := b.AsValueSlice(), a.AsValueSlice()
		for i := range bl {
			k := strconv.Itoa(i)
			names = append(names, k)
			bm[k], am[k] = bl[i], al[i]
		}
	}
	width := 0
	keys := make([]string, len(names))
	for i, k := range names {
		keys[i] = k
		if bo && !isIdent(k) {
			keys[i] = strconv.Quote(k)
		}
		width = max(width, len(keys[i]))
	}
	in := indent + "    "
	var sb strings.Builder
	open, close, sep := "{\n", "}", ""
	if !bo {
		open, close, sep = "[\n", "]", ","
	}
	sb.WriteString(open)
	for i, k := range names {
		bv, bok := bm[k]
		av, aok := am[k]
		lead := func(sign string) {
			sb.WriteString(in)
			sb.WriteString(sign)
			sb.WriteByte(' ')
			if bo {
				sb.WriteString(keys[i])
				sb.WriteString(strings.Repeat(" ", width-len(keys[i])))
				sb.WriteString(" = ")
			}
		}
		switch {
		case !bok:
			lead(r.c(green, "+"))
			sb.WriteString(r.value(av, in+"  "))
		case !aok:
			lead(r.c(red, "-"))
			sb.WriteString(r.value(bv, in+"  "))
			sb.WriteString(" -> null")
		case sdk.ValuesEqual(unmarked(bv), unmarked(av)):
			lead(" ")
			sb.WriteString(r.value(av, in+"  "))
		default:
			lead(r.c(yellow, "~"))
			if inner, ok := r.sensitiveDiff(bv, av, in); ok && (config.HasSensitive(bv) || config.HasSensitive(av)) {
				sb.WriteString(inner)
			} else if config.HasSensitive(bv) || config.HasSensitive(av) {
				sb.WriteString(r.c(faint, "(sensitive value)"))
			} else {
				sb.WriteString(r.value(bv, in+"  "))
				sb.WriteString(" -> ")
				sb.WriteString(r.value(av, in+"  "))
			}
		}
		sb.WriteString(sep)
		sb.WriteByte('\n')
	}
	sb.WriteString(indent + "  " + close)
	return sb.String(), true
}

// sensitiveDiffOf is sensitiveDiff for an attribute with a sensitive
// part (part); ok is false for any other.
func (r *renderer) sensitiveDiffOf(part bool, b, a cty.Value, indent string) (string, bool) {
	if !part {
		return "", false
	}
	return r.sensitiveDiff(b, a, indent)
}

// walkable: a known, non-null collection that is not sensitive whole.
func walkable(v cty.Value) bool {
	if v == cty.NilVal || v.HasMark(config.SensitiveMark) || !v.IsKnown() || v.IsNull() {
		return false
	}
	ty := v.Type()
	return ty.IsObjectType() || ty.IsMapType() || ty.IsListType() || ty.IsTupleType()
}

func unmarked(v cty.Value) cty.Value {
	u, _ := v.UnmarkDeep()
	return u
}
