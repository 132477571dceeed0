package addrs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Reference is one reference found in an expression.
type Reference struct {
	Subject Referenceable
	// Key is set when the traversal indexes Subject (a node or resource)
	// with a literal key, e.g. gitkit_checkout.kit["a"]; nil otherwise.
	Key InstanceKey
	// SourceRange covers the subject and key.
	SourceRange hcl.Range
	// Remaining is what the expression reads from the subject (.path, ...).
	Remaining hcl.Traversal
}

// DisplayString renders the reference as written, up to its key.
func (r *Reference) DisplayString() string {
	return r.Subject.String() + keyString(r.Key)
}

// reservedRoots cannot be resource types: they are keywords of the language
// or of Terraform that sparkform does not have.
var reservedRoots = map[string]string{
	"var":       "",
	"local":     "",
	"node":      "",
	"each":      "",
	"count":     "",
	"path":      "",
	"self":      "sparkform has no provisioners, so there is no \"self\" object.",
	"terraform": "sparkform has no \"terraform\" object.",
	"data":      "sparkform has no data sources; use a resource or a variable.",
	"provider":  "providers are not referenceable.",
	"resource":  "refer to a resource as TYPE.NAME, e.g. gitkit_checkout.kit, without the word \"resource\".",
	"locals":    "local values are referenced as local.NAME (singular).",
	"variable":  "variables are referenced as var.NAME.",
	"output":    "outputs cannot be referenced from inside the configuration.",
}

// ReservedRoot reports whether name is a language keyword that cannot be
// a resource type (var, local, node, each, count, path, self, data, ...).
func ReservedRoot(name string) bool {
	_, ok := reservedRoots[name]
	return ok
}

// keywordRoots are the roots that are not resource types, for suggestions.
var keywordRoots = []string{"var", "local", "node", "each", "count", "path"}

// ParseRef classifies a static traversal such as var.x, node.spark["a"].host
// or gitkit_checkout.kit[0].path.
func ParseRef(traversal hcl.Traversal) (*Reference, hcl.Diagnostics) {
	if len(traversal) == 0 || traversal.IsRelative() {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid reference",
			Detail: "A reference must start with a name such as var, local, node or a resource type."}}
	}
	root := traversal.RootName()
	rootRng := traversal[0].SourceRange()
	attr := func(i int) (string, bool) {
		if len(traversal) <= i {
			return "", false
		}
		if a, ok := traversal[i].(hcl.TraverseAttr); ok {
			return a.Name, true
		}
		return "", false
	}
	errAt := func(rng hcl.Range, summary, detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}}
	}
	simple := func(mk func(string) Referenceable, what, example string) (*Reference, hcl.Diagnostics) {
		name, ok := attr(1)
		if !ok {
			return nil, errAt(traversal.SourceRange(), "Invalid reference",
				fmt.Sprintf("The %q object cannot be used on its own: name the %s, e.g. %s.", root, what, example))
		}
		return &Reference{Subject: mk(name), SourceRange: traversal[:2].SourceRange(), Remaining: traversal[2:]}, nil
	}
	keyed := func(subj Referenceable) (*Reference, hcl.Diagnostics) {
		ref := &Reference{Subject: subj, SourceRange: traversal[:2].SourceRange(), Remaining: traversal[2:]}
		if len(traversal) > 2 {
			if ix, ok := traversal[2].(hcl.TraverseIndex); ok {
				k, err := KeyFromValue(ix.Key)
				if err != nil {
					return nil, errAt(ix.SrcRange, "Invalid instance key", fmt.Sprintf("In %s: %s.", subj, err))
				}
				ref.Key = k
				ref.SourceRange = traversal[:3].SourceRange()
				ref.Remaining = traversal[3:]
			}
		}
		return ref, nil
	}

	// Flattened module references: local["NAME"], node["MODULE.NAME"],
	// TYPE["MODULE.NAME"] (see config.Flatten).
	if len(traversal) > 1 {
		if ix, ok := traversal[1].(hcl.TraverseIndex); ok && ix.Key.Type() == cty.String && ix.Key.IsKnown() && !ix.Key.IsNull() {
			name := ix.Key.AsString()
			switch {
			case root == "local":
				return &Reference{Subject: LocalValue{Name: name}, SourceRange: traversal[:2].SourceRange(), Remaining: traversal[2:]}, nil
			case root == "node":
				return keyed(NodeBlock{Name: name})
			case !ReservedRoot(root) && root != "module":
				if mod, n, ok := splitScoped(name); ok {
					return keyed(Resource{Type: root, Name: n, Module: mod})
				}
			}
		}
	}

	switch root {
	case "module":
		name, ok := attr(1)
		if !ok {
			return nil, errAt(traversal.SourceRange(), "Invalid reference",
				"The \"module\" object cannot be used on its own: name the module block, e.g. module.dsv41.OUTPUT or module.dsv41[\"a\"].OUTPUT.")
		}
		return keyed(ModuleCall{Name: name})
	case "var":
		return simple(func(n string) Referenceable { return InputVariable{Name: n} }, "variable", "var.nodes")
	case "local":
		return simple(func(n string) Referenceable { return LocalValue{Name: n} }, "local value", "local.image")
	case "node":
		name, ok := attr(1)
		if !ok {
			return nil, errAt(traversal.SourceRange(), "Invalid reference",
				"The \"node\" object cannot be used on its own: name the node block, e.g. node.spark or node.spark[each.key].")
		}
		return keyed(NodeBlock{Name: name})
	case "each":
		name, _ := attr(1)
		switch name {
		case "key":
			return &Reference{Subject: EachKey{}, SourceRange: traversal[:2].SourceRange(), Remaining: traversal[2:]}, nil
		case "value":
			return &Reference{Subject: EachValue{}, SourceRange: traversal[:2].SourceRange(), Remaining: traversal[2:]}, nil
		}
		return nil, errAt(traversal.SourceRange(), "Invalid \"each\" attribute",
			"The \"each\" object has two attributes: each.key and each.value.")
	case "count":
		if name, _ := attr(1); name == "index" {
			return &Reference{Subject: CountIndex{}, SourceRange: traversal[:2].SourceRange(), Remaining: traversal[2:]}, nil
		}
		return nil, errAt(traversal.SourceRange(), "Invalid \"count\" attribute",
			"The \"count\" object has one attribute: count.index.")
	case "path":
		name, _ := attr(1)
		switch name {
		case "module", "cwd", "root":
			return &Reference{Subject: PathAttr{Name: name}, SourceRange: traversal[:2].SourceRange(), Remaining: traversal[2:]}, nil
		}
		return nil, errAt(traversal.SourceRange(), "Invalid \"path\" attribute",
			"The \"path\" object has the attributes path.module (the configuration directory), path.root (the same) and path.cwd (the working directory).")
	}
	if why, ok := reservedRoots[root]; ok {
		return nil, errAt(rootRng, "Unsupported reference", fmt.Sprintf("%q cannot be referenced: %s", root, why))
	}
	name, ok := attr(1)
	if !ok {
		detail := fmt.Sprintf("There is no object named %q. A resource is referenced as TYPE.NAME, e.g. gitkit_checkout.kit.path.", root)
		if s := Suggest(root, keywordRoots); s != "" {
			detail += fmt.Sprintf(" Did you mean %q?", s)
		}
		return nil, errAt(traversal.SourceRange(), "Invalid reference", detail)
	}
	return keyed(Resource{Type: root, Name: name})
}

// References parses every traversal, collecting every diagnostic.
func References(traversals []hcl.Traversal) ([]*Reference, hcl.Diagnostics) {
	var refs []*Reference
	var diags hcl.Diagnostics
	for _, t := range traversals {
		ref, d := ParseRef(t)
		diags = append(diags, d...)
		if ref != nil {
			refs = append(refs, ref)
		}
	}
	return refs, diags
}

// ParseResourceInstance parses a command-line instance address such as
// gitkit_checkout.kit or gitkit_checkout.kit["spark-01"] (for -replace,
// state show/rm/mv). An address without a key is the NoKey instance.
func ParseResourceInstance(s string) (ResourceInstance, hcl.Diagnostics) {
	r, k, diags := ParseTarget(s)
	if diags.HasErrors() {
		return ResourceInstance{}, diags
	}
	return r.Instance(k), nil
}

// ParseTarget parses a -target address: TYPE.NAME (key nil: every
// instance) or TYPE.NAME[KEY].
func ParseTarget(s string) (Resource, InstanceKey, hcl.Diagnostics) {
	bad := func(why string) (Resource, InstanceKey, hcl.Diagnostics) {
		return Resource{}, nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid resource address",
			Detail: fmt.Sprintf("%q is not a resource address: %s. Write TYPE.NAME or TYPE.NAME[KEY], e.g. gitkit_checkout.kit or gitkit_checkout.kit[\"spark-01\"] (quote it for the shell).", s, why)}}
	}
	if strings.TrimSpace(s) == "" {
		return bad("the address is empty")
	}
	trav, pd := hclsyntax.ParseTraversalAbs([]byte(s), "", hcl.InitialPos)
	if pd.HasErrors() {
		why := pd[0].Summary
		if pd[0].Detail != "" {
			why = strings.TrimSuffix(pd[0].Detail, ".")
		}
		return bad(why)
	}
	mod, trav, why := moduleSteps(trav)
	if why != "" {
		return bad(why)
	}
	if len(trav) < 2 || len(trav) > 3 {
		return bad("it must have a type, a name and at most one key")
	}
	root := trav.RootName()
	if _, ok := reservedRoots[root]; ok {
		return bad(fmt.Sprintf("%q is not a resource type", root))
	}
	a, ok := trav[1].(hcl.TraverseAttr)
	if !ok {
		return bad("the type must be followed by .NAME")
	}
	r := Resource{Type: root, Name: a.Name, Module: mod.String()}
	if len(trav) == 2 {
		return r, nil, nil
	}
	ix, ok := trav[2].(hcl.TraverseIndex)
	if !ok {
		return bad("only a [KEY] may follow TYPE.NAME")
	}
	k, err := KeyFromValue(ix.Key)
	if err != nil {
		return bad(err.Error())
	}
	return r, k, nil
}

// Target is a -target address: a resource (every instance when Key is
// nil), or a module call or instance with everything in it (Resource nil).
type Target struct {
	Module   string
	Resource *Resource
	Key      InstanceKey
}

// String is the address as the user writes it: the module, the resource
// or the instance.
func (t Target) String() string {
	switch {
	case t.Resource == nil:
		return t.Module
	case t.Key == nil:
		return t.Resource.String()
	}
	return t.Resource.Instance(t.Key).String()
}

// ParseTargets parses -target addresses (ParseTargetAny), in order; the
// diagnostics are every address's.
func ParseTargets(ss []string) ([]Target, hcl.Diagnostics) {
	var out []Target
	var diags hcl.Diagnostics
	for _, s := range ss {
		t, d := ParseTargetAny(s)
		if diags = append(diags, d...); !d.HasErrors() {
			out = append(out, t)
		}
	}
	return out, diags
}

// ParseResourceInstances parses -replace addresses (ParseResourceInstance),
// in order; the diagnostics are every address's.
func ParseResourceInstances(ss []string) ([]ResourceInstance, hcl.Diagnostics) {
	var out []ResourceInstance
	var diags hcl.Diagnostics
	for _, s := range ss {
		r, d := ParseResourceInstance(s)
		if diags = append(diags, d...); !d.HasErrors() {
			out = append(out, r)
		}
	}
	return out, diags
}

// ParseTargetAny parses a -target address: a resource address as
// ParseTarget reads it, or a module address, module.NAME or
// module.NAME[KEY] (nested: module.a.module.b).
func ParseTargetAny(s string) (Target, hcl.Diagnostics) {
	if trav, pd := hclsyntax.ParseTraversalAbs([]byte(s), "", hcl.InitialPos); !pd.HasErrors() {
		if mod, rest, why := moduleSteps(trav); why == "" && len(rest) == 0 && len(mod) > 0 {
			return Target{Module: mod.String()}, nil
		}
	}
	r, k, diags := ParseTarget(s)
	if diags.HasErrors() {
		return Target{}, diags
	}
	return Target{Module: r.Module, Resource: &r, Key: k}, nil
}

// Suggest returns the candidate closest to given (edit distance at most 2,
// or a case-only difference), or "" when none is close. Ties go to the
// alphabetically first candidate so messages are stable.
func Suggest(given string, candidates []string) string {
	cs := append([]string(nil), candidates...)
	sort.Strings(cs)
	best, bestD := "", 3
	for _, c := range cs {
		if d := distance(given, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, in runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
