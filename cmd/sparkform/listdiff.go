package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// maxListEdits bounds how many changed elements one list prints: a
// 10,000-file manifest that moved wholesale must not flood the plan.
const maxListEdits = 200

// listEdit is one element of a list diff: '=' kept, '-' removed, '+'
// added, '~' an object element changed in place.
type listEdit struct {
	op            byte
	before, after cty.Value
}

// isSeq reports whether v is a known, non-null list, set or tuple.
func isSeq(v cty.Value) bool {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return false
	}
	ty := v.Type()
	return ty.IsListType() || ty.IsSetType() || ty.IsTupleType()
}

func elements(v cty.Value) []cty.Value {
	out := make([]cty.Value, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e)
	}
	return out
}

// listEdits diffs two sequences element by element: a longest common
// subsequence (go-diff's Myers diff, each distinct element mapped to one
// rune), then each hunk's removed and added objects paired as in-place
// changes.
func listEdits(b, a cty.Value) []listEdit {
	be, ae := elements(b), elements(a)
	ids := map[string]rune{}
	encode := func(vs []cty.Value) []rune {
		out := make([]rune, len(vs))
		for i, v := range vs {
			k := v.GoString()
			r, ok := ids[k]
			if !ok {
				r = rune(len(ids) + 1)
				if r >= 0xD800 { // skip the surrogates: not valid runes in a string
					r += 0x800
				}
				ids[k] = r
			}
			out[i] = r
		}
		return out
	}
	br, ar := encode(be), encode(ae)
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0 // exact, however long the lists
	diffs := dmp.DiffMainRunes(br, ar, false)

	var out []listEdit
	bi, ai := 0, 0
	var dels, ins []cty.Value
	flush := func() {
		n := 0
		for n < len(dels) && n < len(ins) && isObjectish(dels[n]) && isObjectish(ins[n]) {
			out = append(out, listEdit{op: '~', before: dels[n], after: ins[n]})
			n++
		}
		for _, d := range dels[n:] {
			out = append(out, listEdit{op: '-', before: d})
		}
		for _, x := range ins[n:] {
			out = append(out, listEdit{op: '+', after: x})
		}
		dels, ins = nil, nil
	}
	for _, d := range diffs {
		n := len([]rune(d.Text))
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			flush()
			for i := 0; i < n; i++ {
				out = append(out, listEdit{op: '=', before: be[bi], after: ae[ai]})
				bi, ai = bi+1, ai+1
			}
		case diffmatchpatch.DiffDelete:
			dels = append(dels, be[bi:bi+n]...)
			bi += n
		case diffmatchpatch.DiffInsert:
			ins = append(ins, ae[ai:ai+n]...)
			ai += n
		}
	}
	flush()
	return out
}

func isObjectish(v cty.Value) bool {
	if !v.IsKnown() || v.IsNull() {
		return false
	}
	ty := v.Type()
	return ty.IsObjectType() || ty.IsMapType()
}

// editKey identifies one changed element, to print each hub file (or any
// list of objects) once even when two attributes carry it.
func editKey(e listEdit) string {
	k := string(e.op)
	if e.before != cty.NilVal {
		k += e.before.GoString()
	}
	k += "\x00"
	if e.after != cty.NilVal {
		k += e.after.GoString()
	}
	return k
}

// listDiff renders the change from b to a per element: "+", "-" and "~"
// lines, each run of unchanged elements folded into a count. It returns
// "" when the two are not sequences to diff.
func (r *renderer) listDiff(b, a cty.Value, indent string) string {
	if !isSeq(b) || !isSeq(a) {
		return ""
	}
	edits := listEdits(b, a)
	var sb strings.Builder
	sb.WriteString("[\n")
	in := indent + "    "
	unchanged, shown, more := 0, 0, 0
	fold := func() {
		if unchanged > 0 {
			fmt.Fprintf(&sb, "%s  # (%d unchanged %s hidden)\n", in, unchanged, plural(unchanged, "element", "elements"))
			unchanged = 0
		}
	}
	for _, e := range edits {
		if e.op == '=' {
			unchanged++
			continue
		}
		if shown >= maxListEdits {
			more++
			continue
		}
		fold()
		shown++
		switch {
		case e.op == '+' && isObjectish(e.after):
			fmt.Fprintf(&sb, "%s%s %s,\n", in, r.c(green, "+"), r.objectDiff(cty.NilVal, e.after, in+"  "))
		case e.op == '+':
			fmt.Fprintf(&sb, "%s%s %s,\n", in, r.c(green, "+"), r.value(e.after, in+"  "))
		case e.op == '-' && isObjectish(e.before):
			fmt.Fprintf(&sb, "%s%s %s,\n", in, r.c(red, "-"), r.objectDiff(e.before, cty.NilVal, in+"  "))
		case e.op == '-':
			fmt.Fprintf(&sb, "%s%s %s,\n", in, r.c(red, "-"), r.value(e.before, in+"  "))
		default:
			fmt.Fprintf(&sb, "%s%s %s,\n", in, r.c(yellow, "~"), r.objectDiff(e.before, e.after, in+"  "))
		}
	}
	fold()
	if more > 0 {
		fmt.Fprintf(&sb, "%s  # (%d more changed %s not shown)\n", in, more, plural(more, "element", "elements"))
	}
	sb.WriteString(indent + "]")
	return sb.String()
}

// objectDiff renders an object or map element changed in place: changed
// keys as "~ k = old -> new" (or + / -), the others as they are, so the
// element can be told apart (a file's target, a mount's path). A NilVal
// side renders the other as wholly added or removed.
func (r *renderer) objectDiff(b, a cty.Value, indent string) string {
	var bm, am map[string]cty.Value
	if b != cty.NilVal {
		bm = b.AsValueMap()
	}
	if a != cty.NilVal {
		am = a.AsValueMap()
	}
	keys := map[string]bool{}
	for k := range bm {
		keys[k] = true
	}
	for k := range am {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	width := 0
	for k := range keys {
		names = append(names, k)
		if len(k) > width {
			width = len(k)
		}
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.WriteString("{\n")
	in := indent + "  "
	for _, k := range names {
		bv, bok := bm[k]
		av, aok := am[k]
		key := k
		if !isIdent(k) {
			key = fmt.Sprintf("%q", k)
		}
		pad := key + strings.Repeat(" ", max(0, width-len(key)))
		switch {
		case !bok:
			fmt.Fprintf(&sb, "%s%s %s = %s\n", in, r.c(green, "+"), pad, r.value(av, in+"  "))
		case !aok:
			fmt.Fprintf(&sb, "%s%s %s = %s -> null\n", in, r.c(red, "-"), pad, r.value(bv, in+"  "))
		case sdk.ValuesEqual(bv, av):
			fmt.Fprintf(&sb, "%s  %s = %s\n", in, pad, r.value(av, in+"  "))
		default:
			fmt.Fprintf(&sb, "%s%s %s = %s -> %s\n", in, r.c(yellow, "~"), pad, r.value(bv, in+"  "), r.value(av, in+"  "))
		}
	}
	sb.WriteString(indent + "}")
	return sb.String()
}

// seenElsewhere reports where every changed element of this list was
// already printed, when it was: a list of objects (hub files, mounts)
// that another attribute above carried whole is referred to, not
// printed again. It records this list's elements under label otherwise.
func (r *renderer) seenElsewhere(b, a cty.Value, label string) string {
	if r.shownEdits == nil || !isSeq(a) {
		return ""
	}
	var edits []listEdit
	if isSeq(b) {
		edits = listEdits(b, a)
	} else {
		for _, e := range elements(a) {
			edits = append(edits, listEdit{op: '+', after: e})
		}
	}
	changed := 0
	where := ""
	all := true
	for _, e := range edits {
		if e.op == '=' {
			continue
		}
		changed++
		v := e.after
		if v == cty.NilVal {
			v = e.before
		}
		if !isObjectish(v) {
			return "" // a short list of strings reads better in place
		}
		w, ok := r.shownEdits[editKey(e)]
		if !ok {
			all = false
		} else if where == "" {
			where = w
		}
	}
	if changed >= 2 && all && where != "" {
		return where
	}
	for _, e := range edits {
		if e.op != '=' {
			if _, ok := r.shownEdits[editKey(e)]; !ok {
				r.shownEdits[editKey(e)] = label
			}
		}
	}
	return ""
}
