package config

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/sparkform/sparkform/engine/addrs"
)

// keywordRoots are the reference roots that are not resource types.
var keywordRoots = []string{"var", "local", "node", "each", "count", "path"}

// blockKind says what a referencing block allows: each.* needs for_each,
// count.index needs count.
type blockKind struct {
	what             string // for messages: "resource gitkit_checkout.kit"
	forEach, counted bool
}

// CheckReferences statically checks every reference in the module, without
// evaluating anything and without provider schemas: each reference must
// name a declared variable, local, node or resource (with a "Did you mean"
// suggestion when one is close), index it the way it is expanded, and use
// each/count only inside blocks with for_each/count; and every function
// called must exist.
func (m *Module) CheckReferences() hcl.Diagnostics {
	var diags hcl.Diagnostics
	// Bodies left by PartialContent still hold the meta-arguments the
	// caller checks separately, so each source range is checked once: a
	// block's checks skip the ranges that block has checked already
	// (block), which the next block starts afresh (a map of every range
	// of the module was a third of a 10,000-block check's allocation).
	var seen []hcl.Range
	block := func() { seen = seen[:0] }
	check := func(k blockKind, travs []hcl.Traversal) {
		for _, tr := range travs {
			rng := tr.SourceRange()
			if slices.Contains(seen, rng) {
				continue
			}
			seen = append(seen, rng)
			ref, d := addrs.ParseRef(tr)
			diags = append(diags, d...)
			if ref != nil {
				if dd := m.checkRef(k, ref); dd != nil {
					diags = append(diags, dd)
				}
			}
		}
	}
	calls := functionCallCheck{files: m.Files, seen: map[hcl.Range]bool{}, diags: &diags}
	for _, name := range slices.Sorted(maps.Keys(m.Variables)) {
		for _, val := range m.Variables[name].Validations {
			calls.check(val.Condition, val.ErrorMessage)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Locals)) {
		block()
		check(blockKind{what: "local." + name}, ExprReferences(m.Locals[name].Expr))
		calls.check(m.Locals[name].Expr)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Outputs)) {
		block()
		check(blockKind{what: "output " + name}, ExprReferences(m.Outputs[name].Expr))
		calls.check(m.Outputs[name].Expr)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Nodes)) {
		block()
		n := m.Nodes[name]
		k := blockKind{what: "node." + name, forEach: n.ForEach != nil, counted: n.Count != nil}
		// for_each/count are evaluated before each/count exist.
		check(blockKind{what: "the for_each or count of node." + name}, ExprReferences(n.ForEach, n.Count))
		check(k, syntaxTraversals(n.Config, nil))
		calls.check(n.ForEach, n.Count, n.Config)
	}
	for _, key := range slices.Sorted(maps.Keys(m.Resources)) {
		block()
		r := m.Resources[key]
		k := blockKind{what: "resource " + key, forEach: r.ForEach != nil, counted: r.Count != nil}
		check(blockKind{what: "the for_each or count of " + key}, ExprReferences(r.ForEach, r.Count))
		check(k, ExprReferences(r.NodeExpr))
		check(k, syntaxTraversals(r.Body(), map[string]bool{"lifecycle": true}))
		check(k, r.DependsOn)
		calls.check(r.ForEach, r.Count, r.NodeExpr, r.Body())
	}
	for _, name := range slices.Sorted(maps.Keys(m.ModuleCalls)) {
		block()
		mc := m.ModuleCalls[name]
		check(blockKind{what: "the for_each or count of module." + name}, ExprReferences(mc.ForEach, mc.Count))
		k := blockKind{what: "module." + name, forEach: mc.ForEach != nil, counted: mc.Count != nil}
		calls.check(mc.ForEach, mc.Count)
		for _, an := range slices.Sorted(maps.Keys(mc.Args)) {
			check(k, mc.Args[an].Expr.Variables())
			calls.check(mc.Args[an].Expr)
		}
		check(k, mc.DependsOn)
	}
	for _, name := range slices.Sorted(maps.Keys(m.Children)) {
		diags = append(diags, m.Children[name].CheckReferences()...)
	}
	return diags
}

// languageFunctions are the names of the language's functions, sorted.
var languageFunctions = sync.OnceValue(func() []string { return slices.Sorted(maps.Keys(Functions("."))) })

// functionCallCheck reports calls to functions the language does not
// have. Evaluation would report them too, but hcl suggests the first close
// name in Go map order, so a misspelling two edits from two functions
// ("ive": "file", "one") would get a different "Did you mean" from run to
// run; this one is stable.
type functionCallCheck struct {
	files map[string]*hcl.File
	seen  map[hcl.Range]bool // a remain body repeats its meta-arguments
	diags *hcl.Diagnostics
}

// check walks native-syntax expressions and bodies; others (JSON, nil)
// are left to evaluation.
func (c functionCallCheck) check(nodes ...any) {
	for _, n := range nodes {
		sn, ok := n.(hclsyntax.Node)
		if !ok || sn == nil || !c.mayCall(sn.Range()) {
			continue
		}
		hclsyntax.VisitAll(sn, func(n hclsyntax.Node) hcl.Diagnostics {
			call, ok := n.(*hclsyntax.FunctionCallExpr)
			if !ok || c.seen[call.NameRange] {
				return nil
			}
			c.seen[call.NameRange] = true
			if d := unknownFunction(call); d != nil {
				*c.diags = append(*c.diags, d)
			}
			return nil
		})
	}
}

// mayCall is false when the source of rng holds no "(", so no call:
// most resource bodies, which then cost no walk.
func (c functionCallCheck) mayCall(rng hcl.Range) bool {
	f := c.files[rng.Filename]
	if f == nil || rng.Start.Byte < 0 || rng.Start.Byte > rng.End.Byte || rng.End.Byte > len(f.Bytes) {
		return true
	}
	return bytes.IndexByte(f.Bytes[rng.Start.Byte:rng.End.Byte], '(') >= 0
}

// unknownFunction says what hcl's evaluation would say of a call to a
// function that does not exist, with a stable suggestion; nil when it does.
func unknownFunction(call *hclsyntax.FunctionCallExpr) *hcl.Diagnostic {
	names := languageFunctions()
	if i := sort.SearchStrings(names, call.Name); i < len(names) && names[i] == call.Name {
		return nil
	}
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Call to unknown function",
		Subject: call.NameRange.Ptr(), Context: call.Range().Ptr()}
	if i := strings.LastIndex(call.Name, "::"); i >= 0 {
		d.Detail = fmt.Sprintf("There are no functions in namespace %q.", call.Name[:i+2])
	} else if s := addrs.Suggest(call.Name, names); s != "" {
		d.Detail = fmt.Sprintf("There is no function named %q. Did you mean %q?", call.Name, s)
	} else {
		d.Detail = fmt.Sprintf("There is no function named %q.", call.Name)
	}
	return d
}

func (m *Module) checkRef(k blockKind, ref *addrs.Reference) *hcl.Diagnostic {
	rng := ref.SourceRange
	undeclared := func(what, name string, names []string, hint string) *hcl.Diagnostic {
		detail := fmt.Sprintf("There is no %s named %q in this configuration.", what, name)
		if s := addrs.Suggest(name, names); s != "" {
			detail += fmt.Sprintf(" Did you mean %q?", s)
		} else {
			detail += " " + hint
		}
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared " + what, Detail: detail, Subject: &rng}
	}
	switch s := ref.Subject.(type) {
	case addrs.InputVariable:
		if _, ok := m.Variables[s.Name]; !ok {
			return undeclared("input variable", s.Name, slices.Sorted(maps.Keys(m.Variables)), fmt.Sprintf("Declare it with a variable %q {} block.", s.Name))
		}
	case addrs.LocalValue:
		if _, ok := m.Locals[s.Name]; !ok {
			return undeclared("local value", s.Name, slices.Sorted(maps.Keys(m.Locals)), "Define it in a locals {} block.")
		}
	case addrs.NodeBlock:
		n, ok := m.Nodes[s.Name]
		if !ok {
			return undeclared("node", s.Name, slices.Sorted(maps.Keys(m.Nodes)), fmt.Sprintf("Declare it with a node %q {} block.", s.Name))
		}
		return keyCheck(s.String(), n.ForEach != nil, n.Count != nil, ref)
	case addrs.Resource:
		var buf [96]byte
		r, ok := m.Resources[string(s.AppendKey(buf[:0]))]
		if !ok {
			var names []string
			for _, r := range m.Resources {
				if r.Addr.Type == s.Type {
					names = append(names, r.Addr.Name)
				}
			}
			d := undeclared("resource", s.String(), nil, fmt.Sprintf("Declare it with a resource %q %q {} block.", s.Type, s.Name))
			if kw := addrs.Suggest(s.Type, keywordRoots); kw != "" && len(names) == 0 {
				// "vars.x" or "locals.x" is a misspelled keyword, not a resource.
				d.Summary = "Reference to undeclared object"
				d.Detail = fmt.Sprintf("There is no object named %q. Did you mean %q?", s.Type, kw+"."+s.Name)
			} else if sug := addrs.Suggest(s.Name, names); sug != "" {
				d.Detail = fmt.Sprintf("There is no resource named %q in this configuration. Did you mean %q?", s.String(), s.Type+"."+sug)
			} else if sug := addrs.Suggest(s.String(), slices.Sorted(maps.Keys(m.Resources))); sug != "" {
				d.Detail = fmt.Sprintf("There is no resource named %q in this configuration. Did you mean %q?", s.String(), sug)
			}
			return d
		}
		return keyCheck(s.String(), r.ForEach != nil, r.Count != nil, ref)
	case addrs.ModuleCall:
		mc, ok := m.ModuleCalls[s.Name]
		if !ok {
			return undeclared("module", s.Name, slices.Sorted(maps.Keys(m.ModuleCalls)), fmt.Sprintf("Declare it with a module %q { source = \"./...\" } block.", s.Name))
		}
		if d := keyCheck(s.String(), mc.ForEach != nil, mc.Count != nil, ref); d != nil {
			return d
		}
		child := m.Children[s.Name]
		if child == nil || len(ref.Remaining) == 0 || (mc.ForEach != nil || mc.Count != nil) && ref.Key == nil {
			return nil
		}
		if a, ok := ref.Remaining[0].(hcl.TraverseAttr); ok {
			if _, ok := child.Outputs[a.Name]; !ok {
				d := undeclared("output", a.Name, slices.Sorted(maps.Keys(child.Outputs)), fmt.Sprintf("Module %q (%s) has no such output; declare it there with an output %q {} block.", s.Name, mc.Source, a.Name))
				d.Summary = "Reference to undeclared module output"
				return d
			}
		}
	case addrs.EachKey, addrs.EachValue:
		if !k.forEach {
			return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to \"each\" in context without for_each",
				Detail: fmt.Sprintf("%s can only be used in a block with for_each, and %s has none. Add for_each, or use a fixed value.", s, k.what), Subject: &rng}
		}
	case addrs.CountIndex:
		if !k.counted {
			return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to \"count\" in non-counted context",
				Detail: fmt.Sprintf("count.index can only be used in a block with count, and %s has none. Add count, or use a fixed value.", k.what), Subject: &rng}
		}
	}
	return nil
}

// keyCheck matches a literal instance key with how the block expands.
func keyCheck(addr string, forEach, counted bool, ref *addrs.Reference) *hcl.Diagnostic {
	if ref.Key == nil {
		return nil
	}
	rng := ref.SourceRange
	bad := func(detail string) *hcl.Diagnostic {
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid instance key", Detail: detail, Subject: &rng}
	}
	switch ref.Key.(type) {
	case addrs.StringKey:
		if !forEach {
			if counted {
				return bad(fmt.Sprintf("%s uses count, so its instances are indexed by number, e.g. %s[0].", addr, addr))
			}
			return bad(fmt.Sprintf("%s has no for_each, so it has one instance: refer to it as %s without a key.", addr, addr))
		}
	case addrs.IntKey:
		if !counted {
			if forEach {
				return bad(fmt.Sprintf("%s uses for_each, so its instances are indexed by key, e.g. %s[\"a\"] or %s[each.key].", addr, addr, addr))
			}
			return bad(fmt.Sprintf("%s has no count, so it has one instance: refer to it as %s without an index.", addr, addr))
		}
	}
	return nil
}
