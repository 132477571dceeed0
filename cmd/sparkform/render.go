package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fatih/color"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// bigListThreshold: longer lists are summarized, never printed element by
// element (a 10,000-file manifest must not flood the plan). Changes to a
// list are printed per element instead (listDiff), unchanged runs folded.
const bigListThreshold = 200

type renderer struct {
	w     io.Writer
	color bool

	// tw is w while plan runs: a buffer the hot paths write strings and
	// values into without fmt; scratch is its quoting buffer, names the
	// attribute names of the last object type seen (see attrNames).
	tw      textWriter
	scratch []byte
	names   []string

	// cur is the address whose attributes are being printed, and
	// shownEdits where each changed list element was printed first (see
	// seenElsewhere); nil outside a plan's changes.
	cur        string
	shownEdits map[string]string
}

// c paints s in style when the renderer has colour on.
func (r *renderer) c(style *color.Color, s string) string {
	if !r.color {
		return s
	}
	return style.Sprint(s)
}

func (r *renderer) symbol(a plans.Action) string {
	switch a {
	case plans.Create:
		return r.c(green, "  +")
	case plans.Update:
		return r.c(yellow, "  ~")
	case plans.Delete:
		return r.c(red, "  -")
	case plans.DeleteThenCreate:
		return r.c(red, "-") + "/" + r.c(green, "+")
	case plans.CreateThenDelete:
		return r.c(green, "+") + "/" + r.c(red, "-")
	}
	return "   "
}

func verb(a plans.Action) string {
	switch a {
	case plans.Create:
		return "will be created"
	case plans.Update:
		return "will be updated in-place"
	case plans.Delete:
		return "will be destroyed"
	case plans.DeleteThenCreate:
		return "must be replaced"
	case plans.CreateThenDelete:
		return "must be replaced (create before destroy)"
	}
	return "has no changes"
}

// textWriter is what values are rendered into: a bufio.Writer or a
// strings.Builder.
type textWriter interface {
	io.Writer
	io.StringWriter
	io.ByteWriter
}

var (
	_ textWriter = (*bufio.Writer)(nil)
	_ textWriter = (*strings.Builder)(nil)
)

// plan renders a plan like Terraform does.
// excluded names every node p leaves out, with why and what is on it:
// a plan that leaves a node out says so before anything else.
func (r *renderer) excluded(p *plans.Plan) {
	if len(p.Excluded) == 0 {
		return
	}
	fmt.Fprintf(r.w, "%s %d %s left out of this plan (-exclude-unreachable): nothing on %s is read, planned or changed, and applying this plan fails for %s after changing the rest.\n",
		r.c(boldYellow, "Warning:"), len(p.Excluded), map[bool]string{true: "node is", false: "nodes are"}[len(p.Excluded) == 1],
		map[bool]string{true: "it", false: "them"}[len(p.Excluded) == 1], map[bool]string{true: "it", false: "each"}[len(p.Excluded) == 1])
	for _, x := range p.Excluded {
		fmt.Fprintf(r.w, "  - %s: %s\n", r.c(bold, termSafe(x.Node)), termSafe(x.Reason))
		if len(x.Instances) > 0 {
			fmt.Fprintf(r.w, "      not planned: %s\n", termSafe(strings.Join(x.Instances, ", ")))
		}
	}
	fmt.Fprintln(r.w)
}

func (r *renderer) plan(p *plans.Plan) {
	w := r.w
	tw, ok := w.(textWriter)
	if !ok {
		bw := bufio.NewWriter(w)
		defer bw.Flush()
		tw = bw
	}
	r.w, r.tw = tw, tw
	defer func() { r.w, r.tw = w, nil }()
	for _, n := range p.Notes {
		fmt.Fprintf(r.w, "%s %s\n", r.c(boldYellow, "Note:"), termSafe(n))
	}
	if len(p.Notes) > 0 {
		fmt.Fprintln(r.w)
	}
	r.excluded(p)
	if len(p.Drift) > 0 {
		fmt.Fprintln(r.w, r.c(bold, "Objects have changed outside of sparkform")+"\n")
		fmt.Fprintln(r.w, "sparkform detected the following changes made outside of sparkform since the last apply:")
		undone := 0
		for _, d := range p.Drift {
			fmt.Fprintln(r.w)
			follows := p.Mode == plans.NormalMode && driftFollowed(d, p.Change(d.Addr))
			if !follows && p.Mode == plans.NormalMode {
				undone++
			}
			if d.After.IsNull() {
				fmt.Fprintf(r.w, "  # %s has been deleted\n", r.c(bold, termSafe(d.Addr)))
				continue
			}
			fmt.Fprintf(r.w, "  # %s has changed\n", r.c(bold, termSafe(d.Addr)))
			if follows {
				fmt.Fprintln(r.w, "  # (the plan below follows this change; it is not undone)")
			}
			fmt.Fprintf(r.w, "%s resource %q %q {\n", r.symbol(plans.Update), d.Type, nameOf(d.Addr))
			sens := d.SensitiveAttrs
			if c := p.Change(d.Addr); c != nil {
				sens = append(slices.Clip(sens), c.BeforeSensitive()...)
			}
			r.attrs(d.Before, d.After, nil, sensitivity{before: sens, after: sens}, d.SummaryAttrs, "      ", plans.Update)
			fmt.Fprintln(r.w, "    }")
		}
		fmt.Fprintln(r.w)
		if p.Mode == plans.NormalMode {
			if undone > 0 {
				fmt.Fprintln(r.w, "Unless you have made equivalent changes to your configuration, sparkform will undo the changes not marked as followed, below.")
			} else {
				fmt.Fprintln(r.w, "The configuration follows these changes: apply carries them through, below; nothing is undone.")
			}
			fmt.Fprintln(r.w, strings.Repeat("─", 77))
		}
	}
	if p.Mode == plans.RefreshOnlyMode {
		if len(p.Drift) == 0 {
			fmt.Fprintln(r.w, r.c(boldGreen, "No changes.")+" Your nodes still match the state.")
		} else {
			fmt.Fprintf(r.w, "Applying this refresh-only plan will update the state to match, without changing any node.\n")
		}
		return
	}
	var changes []*plans.ResourceChange
	for _, c := range p.Changes {
		if c.Action != plans.NoOp {
			changes = append(changes, c)
		}
	}
	if len(changes) == 0 && !outputsChange(p) && len(p.Moves) == 0 {
		fmt.Fprintln(r.w, r.c(boldGreen, "No changes.")+" Your nodes match the configuration.")
		fmt.Fprintln(r.w, "\nsparkform has compared your nodes with your configuration and found no differences, so no changes are needed.")
		return
	}
	movedFrom := map[string]string{}
	if len(p.Moves) > 0 {
		fmt.Fprintln(r.w, "sparkform will move these objects in state (moved blocks); nothing on the nodes changes for a move:")
		for _, mv := range p.Moves {
			fmt.Fprintf(r.w, "  # %s has moved to %s\n", termSafe(mv.From), r.c(bold, termSafe(mv.To)))
			movedFrom[mv.To] = mv.From
		}
		fmt.Fprintln(r.w)
	}
	if len(changes) > 0 {
		fmt.Fprintln(r.w, "sparkform will perform the following actions:")
	}
	r.shownEdits = map[string]string{}
	defer func() { r.shownEdits, r.cur = nil, "" }()
	for _, c := range changes {
		r.cur = c.Addr
		tw.WriteString("\n  # ")
		tw.WriteString(r.c(bold, termSafe(c.Addr)))
		tw.WriteByte(' ')
		tw.WriteString(verb(c.Action))
		if c.NodeName() != "" {
			tw.WriteString(" on ")
			tw.WriteString(termSafe(c.NodeName()))
		}
		tw.WriteByte('\n')
		if c.Reason != "" {
			fmt.Fprintf(tw, "  # (because %s)\n", termSafe(c.Reason))
		}
		if from, ok := movedFrom[c.Addr]; ok {
			fmt.Fprintf(tw, "  # (moved from %s)\n", termSafe(from))
		}
		for _, n := range c.Notes {
			fmt.Fprintf(tw, "  %s %s\n", r.c(boldYellow, "# Note:"), termSafe(n))
		}
		tw.WriteString(r.symbol(c.Action))
		tw.WriteString(" resource ")
		r.quoted(c.Type)
		tw.WriteByte(' ')
		r.quoted(nameOf(c.Addr))
		tw.WriteString(" {\n")
		r.attrs(c.Before, c.After, c.RequiresReplace, sensitivity{before: c.BeforeSensitive(), after: c.SensitiveAttrs}, c.SummaryAttrs, "      ", c.Action)
		tw.WriteString("    }\n")
	}
	add, change, destroy := p.Counts()
	fmt.Fprintf(r.w, "\n%s %d to add, %d to change, %d to destroy.\n", r.c(bold, "Plan:"), add, change, destroy)
	if outputsChange(p) {
		fmt.Fprintln(r.w, "\nChanges to Outputs:")
		names := make([]string, 0, len(p.Outputs))
		for n := range p.Outputs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			o := p.Outputs[n]
			if sdk.ValuesEqual(o.Before, o.After) {
				continue
			}
			val := r.value(o.After, "  ")
			if o.Sensitive {
				val = "(sensitive value)"
			}
			if o.After.IsNull() {
				before := r.value(o.Before, "  ")
				if o.Sensitive {
					before = "(sensitive value)"
				}
				fmt.Fprintf(r.w, "  %s %s = %s -> null\n", r.c(red, "-"), n, before)
				continue
			}
			if o.Before != cty.NilVal && !o.Before.IsNull() {
				before := r.value(o.Before, "  ")
				if o.Sensitive {
					before = "(sensitive value)"
				}
				fmt.Fprintf(r.w, "  %s %s = %s -> %s\n", r.c(yellow, "~"), n, before, val)
				continue
			}
			fmt.Fprintf(r.w, "  %s %s = %s\n", r.c(green, "+"), n, val)
		}
	}
}

// driftFollowed reports whether the plan keeps what changed outside
// sparkform (a hub ref that moved, which the manifest follows) rather than
// putting it back: every attribute the drift changed has, in the plan,
// the value the node has now.
func driftFollowed(d *plans.Drift, c *plans.ResourceChange) bool {
	if c == nil || d.After.IsNull() {
		return false
	}
	if c.Action == plans.NoOp {
		return true
	}
	if c.Action != plans.Update {
		return false
	}
	for _, n := range attrNames(d.Before, d.After) {
		b, a := attrOf(d.Before, n), attrOf(d.After, n)
		if sdk.ValuesEqual(b, a) {
			continue
		}
		pa := attrOf(c.After, n)
		if !pa.IsWhollyKnown() || !sdk.ValuesEqual(pa, a) {
			return false
		}
	}
	return true
}

func outputsChange(p *plans.Plan) bool {
	for _, o := range p.Outputs {
		if o.Before != cty.NilVal && !sdk.ValuesEqual(o.Before, o.After) && !(o.Before.IsNull() && o.After.IsNull()) {
			return true
		}
	}
	return false
}

// nameOf is the resource name in an instance address. A module address
// is read by scanning when it is in the canonical form the engine writes
// (parsing it as a traversal, per instance, was most of rendering a
// module's plan), by the address parser otherwise.
func nameOf(addr string) string {
	if strings.HasPrefix(addr, "module.") {
		// A deposed suffix, not the first '#': a key may hold one.
		a := strings.TrimSuffix(addr, plans.DeposedSuffix)
		if _, name, ok := addrs.ScanModuleResourceInstance(a); ok {
			return name
		}
		if ri, d := addrs.ParseResourceInstance(a); !d.HasErrors() {
			return ri.Resource.Name
		}
	}
	res := addr
	if i := strings.IndexByte(res, '['); i >= 0 {
		res = res[:i]
	}
	if i := strings.IndexByte(res, '.'); i >= 0 {
		return res[i+1:]
	}
	return res
}

func attrNames(vals ...cty.Value) []string {
	seen := map[string]bool{}
	var names []string
	for _, v := range vals {
		if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() {
			continue
		}
		for n := range v.Type().AttributeTypes() {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

func attrOf(v cty.Value, name string) cty.Value {
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() || !v.Type().HasAttribute(name) {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return v.GetAttr(name)
}

// attrs renders the attribute lines of one resource block (inside plan:
// it writes to r.tw).
// sensitivity is what attrs hides: the sensitive paths of before and of
// after.
type sensitivity struct{ before, after []string }

func (r *renderer) attrs(before, after cty.Value, replace []cty.Path, sensitive sensitivity, summary []string, indent string, action plans.Action) {
	var forces map[string]bool
	for _, p := range replace {
		if len(p) > 0 {
			if s, ok := p[0].(cty.GetAttrStep); ok {
				if forces == nil {
					forces = map[string]bool{}
				}
				forces[s.Name] = true
			}
		}
	}
	// sens: attributes sensitive whole; sensIn: those with a sensitive
	// part (input.env["TOKEN"]), shown from copies marked where it is.
	var sens, sensIn map[string]bool
	for _, s := range append(slices.Clip(sensitive.before), sensitive.after...) {
		root, whole := config.SplitSensitivePath(s)
		if whole {
			if sens == nil {
				sens = map[string]bool{}
			}
			sens[root] = true
			continue
		}
		if sensIn == nil {
			sensIn = map[string]bool{}
		}
		sensIn[root] = true
	}
	markedB, markedA := before, after
	if sensIn != nil {
		markedB, markedA = engine.MarkSensitive(before, sensitive.before), engine.MarkSensitive(after, sensitive.after)
	}
	// A changed summarised list points at the summary line: show that line
	// even when it did not change itself (the refresh already carried it).
	showSummary := false
	if action != plans.Create && action != plans.Delete {
		for _, n := range summary {
			if !sdk.ValuesEqual(attrOf(before, n), attrOf(after, n)) {
				showSummary = true
			}
		}
	}
	names := r.attrNames(before, after)
	width := 0
	if showSummary {
		width = len(sdk.SummaryAttribute)
	}
	for _, n := range names {
		b, a := attrOf(before, n), attrOf(after, n)
		switch action {
		case plans.Create:
			if a.IsKnown() && a.IsNull() {
				continue
			}
		case plans.Delete:
			if b.IsNull() {
				continue
			}
		default:
			if sdk.ValuesEqual(b, a) || (b.IsNull() && a.IsKnown() && a.IsNull()) {
				continue
			}
		}
		if len(n) > width {
			width = len(n)
		}
	}
	tw := r.tw
	// line starts an attribute line: indent, the sign, the padded name, " = ".
	line := func(sign string, n string) {
		tw.WriteString(indent)
		tw.WriteString(sign)
		tw.WriteByte(' ')
		tw.WriteString(n)
		for range width - len(n) {
			tw.WriteByte(' ')
		}
		tw.WriteString(" = ")
	}
	show := func(n string, v cty.Value, marked cty.Value) {
		if sens[n] && v.IsKnown() && !v.IsNull() {
			tw.WriteString("(sensitive value)")
			return
		}
		if slices.Contains(summary, n) && v.IsKnown() && !v.IsNull() && v.CanIterateElements() {
			// A snapshot's 10,000 files: the summary line says what changed.
			tw.WriteString(r.c(faint, fmt.Sprintf("[ %d %s, see %s ]", v.LengthInt(), plural(v.LengthInt(), "element", "elements"), sdk.SummaryAttribute)))
			return
		}
		if sensIn[n] {
			v = attrOf(marked, n)
		}
		r.writeValue(tw, v, indent)
	}
	hidden := 0
	for _, n := range names {
		b, a := attrOf(before, n), attrOf(after, n)
		if showSummary && n == sdk.SummaryAttribute && sdk.ValuesEqual(b, a) && !a.IsNull() {
			line(" ", n)
			show(n, a, markedA)
			tw.WriteByte('\n')
			continue
		}
		switch action {
		case plans.Create:
			if a.IsKnown() && a.IsNull() {
				continue
			}
			if !sens[n] && !sensIn[n] && isSeq(a) && !slices.Contains(summary, n) {
				if where := r.seenElsewhere(cty.NilVal, a, r.cur+"."+n); where != "" {
					line(r.c(green, "+"), n)
					tw.WriteString(r.c(faint, fmt.Sprintf("[ %d elements, as in %s above ]", a.LengthInt(), where)))
					tw.WriteByte('\n')
					continue
				}
			}
			line(r.c(green, "+"), n)
			show(n, a, markedA)
			tw.WriteByte('\n')
		case plans.Delete:
			if b.IsNull() {
				continue
			}
			line(r.c(red, "-"), n)
			show(n, b, markedB)
			tw.WriteString(" -> null\n")
		default:
			if sdk.ValuesEqual(b, a) || (b.IsNull() && a.IsKnown() && a.IsNull()) {
				hidden++
				continue
			}
			suffix := ""
			if forces[n] {
				suffix = r.c(red, " # forces replacement")
			}
			switch {
			case b.IsNull():
				line(r.c(green, "+"), n)
				show(n, a, markedA)
			case a.IsKnown() && a.IsNull():
				line(r.c(red, "-"), n)
				show(n, b, markedB)
				tw.WriteString(" -> null")
			default:
				if !sens[n] && !sensIn[n] && isSeq(b) && isSeq(a) && !slices.Contains(summary, n) {
					line(r.c(yellow, "~"), n)
					if where := r.seenElsewhere(b, a, r.cur+"."+n); where != "" {
						tw.WriteString(r.c(faint, fmt.Sprintf("[ the same changed elements as %s above ]", where)))
					} else {
						tw.WriteString(r.listDiff(b, a, indent))
					}
					tw.WriteString(suffix)
					tw.WriteByte('\n')
					continue
				}
				line(r.c(yellow, "~"), n)
				if d, ok := r.sensitiveDiffOf(sensIn[n] && !sens[n], attrOf(markedB, n), attrOf(markedA, n), indent); ok {
					tw.WriteString(d)
					break
				}
				show(n, b, markedB)
				tw.WriteString(" -> ")
				show(n, a, markedA)
			}
			tw.WriteString(suffix)
			tw.WriteByte('\n')
		}
	}
	if hidden > 0 && action != plans.Create && action != plans.Delete {
		fmt.Fprintf(tw, "%s  # (%d unchanged %s hidden)\n", indent, hidden, plural(hidden, "attribute", "attributes"))
	}
}

// attrNames is attrNames(before, after) without its map, slice and sort
// when each object among them has exactly the attributes of the last
// call's (every instance of a resource has one type): r.names again.
func (r *renderer) attrNames(before, after cty.Value) []string {
	same, objects := r.names != nil, 0
	for _, v := range [2]cty.Value{before, after} {
		if !same {
			break
		}
		if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() {
			continue
		}
		objects++
		ty := v.Type()
		if len(ty.AttributeTypes()) != len(r.names) {
			same = false
			break
		}
		for _, n := range r.names {
			if !ty.HasAttribute(n) {
				same = false
				break
			}
		}
	}
	if same && objects > 0 {
		return r.names
	}
	r.names = attrNames(before, after)
	return r.names
}

// value renders a value as HCL-ish text.
func (r *renderer) value(v cty.Value, indent string) string {
	var b strings.Builder
	r.writeValue(&b, v, indent)
	return b.String()
}

// quoted writes s as a Go-quoted string to r.tw.
func (r *renderer) quoted(s string) { r.writeQuoted(r.tw, s) }

func (r *renderer) writeQuoted(b textWriter, s string) {
	r.scratch = strconv.AppendQuote(r.scratch[:0], s)
	b.Write(r.scratch)
}

// writeValue renders v into b. Every level writes into the one builder:
// a level that returned its own string, copied by its parent, made a
// value nested d deep cost O(d³) for its O(d²) bytes of text.
func (r *renderer) writeValue(b textWriter, v cty.Value, indent string) {
	if v == cty.NilVal {
		b.WriteString("null")
		return
	}
	if v.HasMark(config.SensitiveMark) {
		b.WriteString(r.c(faint, "(sensitive value)"))
		return
	}
	if !v.IsKnown() {
		b.WriteString(r.c(faint, "(known after apply)"))
		return
	}
	if v.IsNull() {
		b.WriteString("null")
		return
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		s := v.AsString()
		if strings.Contains(s, "\n") && len(s) > 0 {
			lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
			b.WriteString("<<-EOT\n")
			for _, l := range lines {
				b.WriteString(indent)
				b.WriteString("    ")
				b.WriteString(l)
				b.WriteByte('\n')
			}
			b.WriteString(indent)
			b.WriteString("EOT")
			return
		}
		r.writeQuoted(b, s)
	case ty == cty.Number:
		b.WriteString(v.AsBigFloat().Text('f', -1)) // as jsonValue writes numbers
	case ty == cty.Bool:
		if v.True() {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		n := v.LengthInt()
		if n == 0 {
			b.WriteString("[]")
			return
		}
		if n > bigListThreshold {
			fmt.Fprintf(b, "[ %d elements ]", n)
			return
		}
		inner := indent + "    "
		b.WriteString("[\n")
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			b.WriteString(inner)
			r.writeValue(b, e, inner)
			b.WriteString(",\n")
		}
		b.WriteString(indent + "]")
	case ty.IsMapType() || ty.IsObjectType():
		if v.LengthInt() == 0 {
			b.WriteString("{}")
			return
		}
		m := v.AsValueMap()
		keys := make([]string, 0, len(m))
		width := 0
		for k := range m {
			keys = append(keys, k)
			if len(k) > width {
				width = len(k)
			}
		}
		sort.Strings(keys)
		if len(keys) > bigListThreshold*5 {
			fmt.Fprintf(b, "{ %d entries }", len(keys))
			return
		}
		inner := indent + "    "
		b.WriteString("{\n")
		for _, k := range keys {
			key := k
			if !isIdent(k) {
				key = strconv.Quote(k)
			}
			b.WriteString(inner)
			b.WriteString(key)
			for range width - len(key) {
				b.WriteByte(' ')
			}
			b.WriteString(" = ")
			r.writeValue(b, m[k], inner)
			b.WriteString("\n")
		}
		b.WriteString(indent + "}")
	default:
		b.WriteString(v.GoString())
	}
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '-')) {
			return false
		}
	}
	return true
}
