package docker

import (
	"math/big"
	"sort"

	"github.com/zclconf/go-cty/cty"
)

// Small readers for cty values. Null or unknown reads as the zero value;
// callers that care check known() first.

func known(v cty.Value) bool { return v.IsWhollyKnown() }

func isSet(v cty.Value) bool { return !v.IsNull() && v.IsKnown() }

func attr(obj cty.Value, name string) cty.Value {
	if obj.IsNull() || !obj.IsKnown() {
		return cty.DynamicVal
	}
	return obj.GetAttr(name)
}

func str(v cty.Value) string {
	if !isSet(v) || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

func boolean(v cty.Value, def bool) bool {
	if !isSet(v) || v.Type() != cty.Bool {
		return def
	}
	return v.True()
}

func number(v cty.Value) float64 {
	if !isSet(v) || v.Type() != cty.Number {
		return 0
	}
	f, _ := v.AsBigFloat().Float64()
	return f
}

func strList(v cty.Value) []string {
	if !isSet(v) || !v.CanIterateElements() {
		return nil
	}
	out := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, str(e))
	}
	return out
}

func strMap(v cty.Value) map[string]string {
	if !isSet(v) || !v.CanIterateElements() {
		return nil
	}
	out := make(map[string]string, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		out[k.AsString()] = str(e)
	}
	return out
}

func elems(v cty.Value) []cty.Value {
	if !isSet(v) || !v.CanIterateElements() {
		return nil
	}
	out := make([]cty.Value, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e)
	}
	return out
}

func listOrNull(ss []string) cty.Value {
	if ss == nil {
		return cty.NullVal(cty.List(cty.String))
	}
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vs := make([]cty.Value, len(ss))
	for i, s := range ss {
		vs[i] = cty.StringVal(s)
	}
	return cty.ListVal(vs)
}

func setOrNull(ss []string) cty.Value {
	if ss == nil {
		return cty.NullVal(cty.Set(cty.String))
	}
	if len(ss) == 0 {
		return cty.SetValEmpty(cty.String)
	}
	vs := make([]cty.Value, len(ss))
	for i, s := range ss {
		vs[i] = cty.StringVal(s)
	}
	return cty.SetVal(vs)
}

func mapOrNull(m map[string]string) cty.Value {
	if m == nil {
		return cty.NullVal(cty.Map(cty.String))
	}
	if len(m) == 0 {
		return cty.MapValEmpty(cty.String)
	}
	vs := make(map[string]cty.Value, len(m))
	for k, s := range m {
		vs[k] = cty.StringVal(s)
	}
	return cty.MapVal(vs)
}

func strOrNull(s string) cty.Value {
	if s == "" {
		return cty.NullVal(cty.String)
	}
	return cty.StringVal(s)
}

func numVal(f float64) cty.Value { return cty.NumberVal(new(big.Float).SetFloat64(f)) }

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
