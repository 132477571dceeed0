package config

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"

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
// each/count only inside blocks with for_each/count.
func (m *Module) CheckReferences() hcl.Diagnostics {
	var diags hcl.Diagnostics
	// Bodies left by PartialContent still hold the meta-arguments the
	// caller checks separately, so each source range is checked once.
	seen := map[hcl.Range]bool{}
	check := func(k blockKind, travs []hcl.Traversal) {
		for _, tr := range travs {
			if rng := tr.SourceRange(); seen[rng] {
				continue
			} else {
				seen[rng] = true
			}
			ref, d := addrs.ParseRef(tr)
			diags = append(diags, d...)
			if ref != nil {
				if dd := m.checkRef(k, ref); dd != nil {
					diags = append(diags, dd)
				}
			}
		}
	}
	for _, name := range sortedKeys(m.Locals) {
		check(blockKind{what: "local." + name}, ExprReferences(m.Locals[name].Expr))
	}
	for _, name := range sortedKeys(m.Outputs) {
		check(blockKind{what: "output " + name}, ExprReferences(m.Outputs[name].Expr))
	}
	for _, name := range sortedKeys(m.Nodes) {
		n := m.Nodes[name]
		k := blockKind{what: "node." + name, forEach: n.ForEach != nil, counted: n.Count != nil}
		// for_each/count are evaluated before each/count exist.
		check(blockKind{what: "the for_each or count of node." + name}, ExprReferences(n.ForEach, n.Count))
		check(k, syntaxTraversals(n.Config, nil))
	}
	for _, key := range sortedKeys(m.Resources) {
		r := m.Resources[key]
		k := blockKind{what: "resource " + key, forEach: r.ForEach != nil, counted: r.Count != nil}
		check(blockKind{what: "the for_each or count of " + key}, ExprReferences(r.ForEach, r.Count))
		check(k, ExprReferences(r.NodeExpr))
		check(k, syntaxTraversals(r.Config, map[string]bool{"lifecycle": true}))
		check(k, r.DependsOn)
	}
	for _, name := range sortedKeys(m.ModuleCalls) {
		mc := m.ModuleCalls[name]
		check(blockKind{what: "the for_each or count of module." + name}, ExprReferences(mc.ForEach, mc.Count))
		k := blockKind{what: "module." + name, forEach: mc.ForEach != nil, counted: mc.Count != nil}
		for _, an := range sortedKeys(mc.Args) {
			check(k, mc.Args[an].Expr.Variables())
		}
		check(k, mc.DependsOn)
	}
	for _, name := range sortedKeys(m.Children) {
		diags = append(diags, m.Children[name].CheckReferences()...)
	}
	return diags
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
			return undeclared("input variable", s.Name, sortedKeys(m.Variables), fmt.Sprintf("Declare it with a variable %q {} block.", s.Name))
		}
	case addrs.LocalValue:
		if _, ok := m.Locals[s.Name]; !ok {
			return undeclared("local value", s.Name, sortedKeys(m.Locals), "Define it in a locals {} block.")
		}
	case addrs.NodeBlock:
		n, ok := m.Nodes[s.Name]
		if !ok {
			return undeclared("node", s.Name, sortedKeys(m.Nodes), fmt.Sprintf("Declare it with a node %q {} block.", s.Name))
		}
		return keyCheck(s.String(), n.ForEach != nil, n.Count != nil, ref)
	case addrs.Resource:
		r, ok := m.Resources[s.String()]
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
			} else if sug := addrs.Suggest(s.String(), sortedKeys(m.Resources)); sug != "" {
				d.Detail = fmt.Sprintf("There is no resource named %q in this configuration. Did you mean %q?", s.String(), sug)
			}
			return d
		}
		return keyCheck(s.String(), r.ForEach != nil, r.Count != nil, ref)
	case addrs.ModuleCall:
		mc, ok := m.ModuleCalls[s.Name]
		if !ok {
			return undeclared("module", s.Name, sortedKeys(m.ModuleCalls), fmt.Sprintf("Declare it with a module %q { source = \"./...\" } block.", s.Name))
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
				d := undeclared("output", a.Name, sortedKeys(child.Outputs), fmt.Sprintf("Module %q (%s) has no such output; declare it there with an output %q {} block.", s.Name, mc.Source, a.Name))
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
