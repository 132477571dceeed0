package ctyval

import (
	"math/big"
	"sort"

	"github.com/zclconf/go-cty/cty"
)

// Known reports whether v holds no unknown value at any depth.
func Known(v cty.Value) bool { return v.IsWhollyKnown() }

// IsSet reports whether v is neither null nor unknown.
func IsSet(v cty.Value) bool { return !v.IsNull() && v.IsKnown() }

// Attr is obj's attribute name, or an unknown value when obj itself is null
// or unknown (so a reader of the result returns its zero value).
func Attr(obj cty.Value, name string) cty.Value {
	if obj.IsNull() || !obj.IsKnown() {
		return cty.DynamicVal
	}
	return obj.GetAttr(name)
}

// Str is v as a string, or "" when v is unset or not a string.
func Str(v cty.Value) string {
	if !IsSet(v) || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

// Bool is v as a bool, or def when v is unset or not a bool.
func Bool(v cty.Value, def bool) bool {
	if !IsSet(v) || v.Type() != cty.Bool {
		return def
	}
	return v.True()
}

// Number is v as a float64, or 0 when v is unset or not a number.
func Number(v cty.Value) float64 {
	if !IsSet(v) || v.Type() != cty.Number {
		return 0
	}
	f, _ := v.AsBigFloat().Float64()
	return f
}

// StrList is a list, set or tuple of strings as a slice (nil when unset).
func StrList(v cty.Value) []string {
	if !IsSet(v) || !v.CanIterateElements() {
		return nil
	}
	out := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, Str(e))
	}
	return out
}

// StrMap is a map or object of strings as a Go map (nil when unset); null
// and unknown elements are left out.
func StrMap(v cty.Value) map[string]string {
	if !IsSet(v) || !v.CanIterateElements() {
		return nil
	}
	out := make(map[string]string, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if IsSet(e) {
			out[k.AsString()] = Str(e)
		}
	}
	return out
}

// Elems is the elements of a collection (nil when unset).
func Elems(v cty.Value) []cty.Value {
	if !IsSet(v) || !v.CanIterateElements() {
		return nil
	}
	out := make([]cty.Value, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e)
	}
	return out
}

func strVals(ss []string) []cty.Value {
	vs := make([]cty.Value, len(ss))
	for i, s := range ss {
		vs[i] = cty.StringVal(s)
	}
	return vs
}

// ListVal is ss as a list of strings; empty, never null, when ss is empty.
func ListVal(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	return cty.ListVal(strVals(ss))
}

// ListOrNull is ListVal, but null when ss is nil.
func ListOrNull(ss []string) cty.Value {
	if ss == nil {
		return cty.NullVal(cty.List(cty.String))
	}
	return ListVal(ss)
}

// SetOrNull is ss as a set of strings: null when nil, empty when empty.
func SetOrNull(ss []string) cty.Value {
	if ss == nil {
		return cty.NullVal(cty.Set(cty.String))
	}
	if len(ss) == 0 {
		return cty.SetValEmpty(cty.String)
	}
	return cty.SetVal(strVals(ss))
}

// MapVal is m as a map of strings; empty, never null, when m is empty.
func MapVal(m map[string]string) cty.Value {
	if len(m) == 0 {
		return cty.MapValEmpty(cty.String)
	}
	vs := make(map[string]cty.Value, len(m))
	for k, s := range m {
		vs[k] = cty.StringVal(s)
	}
	return cty.MapVal(vs)
}

// MapOrNull is MapVal, but null when m is nil.
func MapOrNull(m map[string]string) cty.Value {
	if m == nil {
		return cty.NullVal(cty.Map(cty.String))
	}
	return MapVal(m)
}

// StrOrNull is s as a string value, null when s is "".
func StrOrNull(s string) cty.Value {
	if s == "" {
		return cty.NullVal(cty.String)
	}
	return cty.StringVal(s)
}

// NumVal is f as a number value.
func NumVal(f float64) cty.Value { return cty.NumberVal(new(big.Float).SetFloat64(f)) }

// SortedKeys is m's keys in order, for output that must not depend on map
// iteration order.
func SortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// With is the object v with attrs set (added or replaced).
func With(v cty.Value, attrs map[string]cty.Value) cty.Value {
	m := v.AsValueMap()
	if m == nil {
		m = make(map[string]cty.Value, len(attrs))
	}
	for k, a := range attrs {
		m[k] = a
	}
	return cty.ObjectVal(m)
}
