package config

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Sensitivity is tracked by path. Marks (SensitiveMark) live only while
// expressions are evaluated; where a value leaves the language (a
// resource's configuration, kept in plans and state without marks) the
// places that held a mark are written as path strings, and MarkPaths puts
// the marks back on a copy for references and renderers.
//
// A sensitive path is the attribute name, then zero or more steps:
//
//	input                     the whole attribute (what older records hold)
//	input.env                 an object attribute (an HCL identifier)
//	input.env["TOKEN"]        a map key, or an object attribute by name (a JSON string)
//	input.args[1]             a list or tuple element (a whole number)
//
// A path stops at a set (its elements have no key): the whole set is
// sensitive then.

// SensitivePaths names, as sensitive paths, the places in v (a resource
// configuration or object, marked or not) that carry SensitiveMark,
// sorted, each one not inside another. A mark on v itself names each of
// its attributes.
func SensitivePaths(v cty.Value) []string {
	if v == cty.NilVal || !v.ContainsMarked() {
		return nil
	}
	plain, pvm := v.UnmarkDeepWithPaths()
	var out []string
	for _, pm := range pvm {
		if _, ok := pm.Marks[SensitiveMark]; !ok {
			continue
		}
		if len(pm.Path) == 0 {
			if !plain.Type().IsObjectType() {
				continue
			}
			for name := range plain.Type().AttributeTypes() {
				out = append(out, formatName(name))
			}
			continue
		}
		out = append(out, FormatSensitivePath(plain, pm.Path))
	}
	return NormalizeSensitivePaths(out)
}

// AttrSensitivePaths is SensitivePaths of the value of attribute name.
func AttrSensitivePaths(name string, v cty.Value) []string {
	if v == cty.NilVal || !v.ContainsMarked() {
		return nil
	}
	return SensitivePaths(cty.ObjectVal(map[string]cty.Value{name: v}))
}

// TakeSensitive takes the marks off a resource configuration (an object)
// and names, as sensitive paths, where they were: the plan hides those.
// The engine keeps no marks past this point (providers and state take
// plain values).
func TakeSensitive(v cty.Value) (cty.Value, []string) {
	if !v.ContainsMarked() {
		return v, nil
	}
	paths := SensitivePaths(v)
	plain, _ := v.UnmarkDeep()
	if !plain.Type().IsObjectType() {
		return plain, nil
	}
	return plain, paths
}

// HasSensitive reports whether v or anything inside it came from
// sensitive() or a sensitive variable.
func HasSensitive(v cty.Value) bool {
	if v == cty.NilVal || !v.ContainsMarked() {
		return false
	}
	_, pvm := v.UnmarkDeepWithPaths()
	for _, pm := range pvm {
		if _, ok := pm.Marks[SensitiveMark]; ok {
			return true
		}
	}
	return false
}

// FormatSensitivePath writes p, a path into plain (an object, unmarked),
// as a sensitive path. It stops at a set, or where p leaves plain.
func FormatSensitivePath(plain cty.Value, p cty.Path) string {
	var b strings.Builder
	cur := plain
	for _, st := range p {
		if cur == cty.NilVal || cur.IsNull() || !cur.IsKnown() {
			break
		}
		ty := cur.Type()
		var name string
		isAttr := false
		switch st := st.(type) {
		case cty.GetAttrStep:
			name, isAttr = st.Name, true
		case cty.IndexStep:
			k := st.Key
			switch {
			case !k.IsKnown() || k.IsNull() || k.IsMarked():
				return b.String()
			case k.Type() == cty.String:
				name = k.AsString()
			case k.Type() == cty.Number && (ty.IsListType() || ty.IsTupleType()) && b.Len() > 0:
				n, _ := k.AsBigFloat().Int64()
				b.WriteString("[" + strconv.FormatInt(n, 10) + "]")
				next, err := st.Apply(cur)
				if err != nil {
					return b.String()
				}
				cur = next
				continue
			default:
				return b.String() // a set element, or something unexpected
			}
		}
		if !ty.IsObjectType() && !ty.IsMapType() {
			return b.String()
		}
		switch {
		case b.Len() == 0:
			b.WriteString(formatName(name))
		case isAttr && ty.IsObjectType() && hclsyntax.ValidIdentifier(name):
			b.WriteString("." + name)
		default:
			b.WriteString("[" + strconv.Quote(name) + "]")
		}
		next, ok := child(cur, name)
		if !ok {
			return b.String()
		}
		cur = next
	}
	return b.String()
}

// formatName is a top-level attribute name as a path's first step.
func formatName(name string) string {
	if hclsyntax.ValidIdentifier(name) {
		return name
	}
	return "[" + strconv.Quote(name) + "]"
}

func child(v cty.Value, name string) (cty.Value, bool) {
	ty := v.Type()
	switch {
	case ty.IsObjectType():
		if !ty.HasAttribute(name) {
			return cty.NilVal, false
		}
		return v.GetAttr(name), true
	case ty.IsMapType():
		k := cty.StringVal(name)
		if !v.HasIndex(k).True() {
			return cty.NilVal, false
		}
		return v.Index(k), true
	}
	return cty.NilVal, false
}

// pathStep is one parsed step of a sensitive path: a name (attribute or
// map key) or an index.
type pathStep struct {
	name   string
	index  int64
	isIdx  bool
	quoted bool // written ["name"]: any string, not only an identifier
}

// ErrSensitivePath is what ParseSensitivePath returns for text that is
// not a sensitive path.
var ErrSensitivePath = errors.New("not a sensitive path")

// parseSensitivePath reads a sensitive path.
func parseSensitivePath(s string) ([]pathStep, error) {
	var out []pathStep
	i := 0
	for i < len(s) {
		switch {
		case s[i] == '[':
			j := i + 1
			if j < len(s) && s[j] == '"' {
				// A JSON/Go quoted string up to its closing quote.
				k := j + 1
				for k < len(s) && s[k] != '"' {
					if s[k] == '\\' {
						k++
					}
					k++
				}
				if k >= len(s) || k+1 >= len(s) || s[k+1] != ']' {
					return nil, fmt.Errorf("%w: %q: unterminated [\"...\"]", ErrSensitivePath, s)
				}
				name, err := strconv.Unquote(s[j : k+1])
				if err != nil {
					return nil, fmt.Errorf("%w: %q: %v", ErrSensitivePath, s, err)
				}
				out = append(out, pathStep{name: name, quoted: true})
				i = k + 2
				continue
			}
			k := strings.IndexByte(s[j:], ']')
			if k < 0 {
				return nil, fmt.Errorf("%w: %q: unterminated [", ErrSensitivePath, s)
			}
			n, err := strconv.ParseInt(s[j:j+k], 10, 64)
			if err != nil || n < 0 || len(out) == 0 {
				return nil, fmt.Errorf("%w: %q: bad index %q", ErrSensitivePath, s, s[j:j+k])
			}
			out = append(out, pathStep{index: n, isIdx: true})
			i = j + k + 1
		case s[i] == '.' && len(out) > 0:
			i++
			fallthrough
		default:
			j := i
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			if j == i {
				return nil, fmt.Errorf("%w: %q: empty name", ErrSensitivePath, s)
			}
			out = append(out, pathStep{name: s[i:j]})
			i = j
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrSensitivePath)
	}
	return out, nil
}

// ParseSensitivePath checks that s is a sensitive path as
// FormatSensitivePath writes them: a bare step (the first, or one after
// a dot) is an identifier; any other name is quoted.
func ParseSensitivePath(s string) error {
	steps, err := parseSensitivePath(s)
	if err != nil {
		return err
	}
	for _, st := range steps {
		if st.isIdx || st.quoted {
			continue
		}
		if !hclsyntax.ValidIdentifier(st.name) {
			return fmt.Errorf("%w: %q: %q is not an identifier; quote it as [%q]", ErrSensitivePath, s, st.name, st.name)
		}
	}
	return nil
}

// MarkPaths is v (an object) with SensitiveMark on each place paths
// name. A path that v's shape does not follow marks the value where it
// stops (the last known part on its way), so what a path meant to hide
// is never shown because the value changed shape; a null part holds
// nothing to hide. A path that does not parse marks its first name, or v
// whole when it has none.
func MarkPaths(v cty.Value, paths []string) cty.Value {
	if len(paths) == 0 || v == cty.NilVal {
		return v
	}
	for _, p := range paths {
		steps, err := parseSensitivePath(p)
		if err != nil {
			if name := leadingName(p); name != "" && v.Type().IsObjectType() && v.Type().HasAttribute(name) {
				steps = []pathStep{{name: name}}
			} else {
				return v.Mark(SensitiveMark)
			}
		}
		v = markAt(v, steps)
	}
	return v
}

// markAt marks the part of v that steps lead to.
func markAt(v cty.Value, steps []pathStep) cty.Value {
	if len(steps) == 0 || v.HasMark(SensitiveMark) {
		return v.Mark(SensitiveMark)
	}
	inner, marks := v.Unmark()
	if inner.IsNull() {
		return v
	}
	if !inner.IsKnown() {
		return v.Mark(SensitiveMark)
	}
	st, rest := steps[0], steps[1:]
	ty := inner.Type()
	var out cty.Value
	switch {
	case ty.IsObjectType() && !st.isIdx:
		if !ty.HasAttribute(st.name) {
			return v
		}
		m := inner.AsValueMap()
		m[st.name] = markAt(m[st.name], rest)
		out = cty.ObjectVal(m)
	case ty.IsMapType() && !st.isIdx:
		m := inner.AsValueMap()
		e, ok := m[st.name]
		if !ok {
			return v
		}
		m[st.name] = markAt(e, rest)
		out = cty.MapVal(m)
	case (ty.IsListType() || ty.IsTupleType()) && st.isIdx:
		l := inner.AsValueSlice()
		if st.index >= int64(len(l)) {
			return v
		}
		l[st.index] = markAt(l[st.index], rest)
		if ty.IsListType() {
			out = cty.ListVal(l)
		} else {
			out = cty.TupleVal(l)
		}
	default:
		// A set, a primitive, or a step of the wrong kind: hide it whole.
		return v.Mark(SensitiveMark)
	}
	return out.WithMarks(marks)
}

// NormalizeSensitivePaths sorts paths, drops duplicates and every path
// inside another (input covers input.env["TOKEN"]).
func NormalizeSensitivePaths(paths []string) []string {
	if len(paths) == 0 {
		return nil
	}
	sort.Strings(paths)
	out := paths[:0]
	for _, p := range paths {
		covered := false
		for _, q := range out {
			if pathWithin(p, q) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

// pathWithin reports whether sensitive path p is q or inside it.
func pathWithin(p, q string) bool {
	if !strings.HasPrefix(p, q) {
		return false
	}
	return len(p) == len(q) || p[len(q)] == '.' || p[len(q)] == '['
}

// SensitiveRoot is the attribute a sensitive path starts with.
func SensitiveRoot(p string) string {
	steps, err := parseSensitivePath(p)
	if err != nil {
		return leadingName(p)
	}
	return steps[0].name
}

// RebaseSensitivePath is p with its attribute replaced by name
// (input.env["TOKEN"] -> output.env["TOKEN"]).
func RebaseSensitivePath(p, name string) string {
	root := SensitiveRoot(p)
	rest := strings.TrimPrefix(p, formatName(root))
	return formatName(name) + rest
}

// MarkVariables is vars with the value of each variable m declares
// sensitive marked (a new map when one is; vars itself otherwise).
func MarkVariables(m *Module, vars map[string]cty.Value) map[string]cty.Value {
	var out map[string]cty.Value
	for n, v := range vars {
		if d, ok := m.Variables[n]; !ok || !d.Sensitive || v == cty.NilVal {
			continue
		}
		if out == nil {
			out = make(map[string]cty.Value, len(vars))
			for k, x := range vars {
				out[k] = x
			}
		}
		out[n] = v.Mark(SensitiveMark)
	}
	if out == nil {
		return vars
	}
	return out
}

// SplitSensitivePath is the attribute sensitive path p starts with, and
// whether p is that whole attribute.
func SplitSensitivePath(p string) (root string, whole bool) {
	steps, err := parseSensitivePath(p)
	if err != nil {
		return leadingName(p), true
	}
	return steps[0].name, len(steps) == 1
}

// leadingName is what comes before a path's first . or [: the attribute
// a path that does not parse is taken to be about.
func leadingName(p string) string {
	if i := strings.IndexAny(p, ".["); i >= 0 {
		return p[:i]
	}
	return p
}
