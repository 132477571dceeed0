package config

import (
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
)

// Every instance of a module shares the module's syntax, parsed once
// when the configuration is loaded: a call with for_each over K keys
// keeps one copy of the module's bodies and expressions, not K. What
// differs per instance is how the module's own names (var.x, local.y,
// TYPE.NAME, node.n, module.m, path.module) map to the flat names the
// engine evaluates (see Flatten). An InstanceScope holds that mapping:
//
//   - references: Flat turns the module's traversals into flat ones, so
//     the engine's graph sees an instance's blocks as it sees root blocks;
//   - evaluation: Context turns the engine's flat evaluation context into
//     the module's own names for one body or expression, built from just
//     the traversals it makes, so it costs O(references).
//
// Expressions (locals, outputs, for_each, count, node, module arguments)
// are wrapped so they do both themselves; a resource's or node's body is
// decoded by the engine in BodyContext.

// InstanceScope is one module instance's view of its module's shared
// syntax. A nil *InstanceScope is the root module's: every method then
// returns its input.
type InstanceScope struct {
	rw  *rewriter // prefix and module; no flattener (nothing is recorded)
	syn *sharedSyntax
}

// sharedSyntax caches, per body or expression of one module, the
// traversals it makes in the module's own names: every instance's
// evaluation asks for them.
type sharedSyntax struct {
	travs sync.Map // hclsyntax node -> []hcl.Traversal
}

func newInstanceScope(mod *Module, prefix string, syn *sharedSyntax) *InstanceScope {
	return &InstanceScope{rw: &rewriter{mod: mod, prefix: prefix}, syn: syn}
}

// Prefix is the module instance's address (module.m["k"]); "" for the root.
func (s *InstanceScope) Prefix() string {
	if s == nil {
		return ""
	}
	return s.rw.prefix
}

// Flat maps the module's traversals to flat ones (a new slice; the shared
// traversals are not changed).
func (s *InstanceScope) Flat(travs []hcl.Traversal) []hcl.Traversal {
	if s == nil || len(travs) == 0 {
		return travs
	}
	out := make([]hcl.Traversal, len(travs))
	for i, tr := range travs {
		out[i] = s.rw.traversal(tr)
	}
	return out
}

// FlatTraversal maps one traversal of the module to its flat form.
func (s *InstanceScope) FlatTraversal(tr hcl.Traversal) hcl.Traversal {
	if s == nil {
		return tr
	}
	return s.rw.traversal(tr)
}

// BodyContext is the context to decode body (a resource's or node's
// configuration, in the module's own names) in, from the engine's flat
// context.
func (s *InstanceScope) BodyContext(body hcl.Body, ctx *hcl.EvalContext) *hcl.EvalContext {
	if s == nil || ctx == nil {
		return ctx
	}
	return s.context(ctx, s.syn.traversals(body, func() []hcl.Traversal { return syntaxTraversals(body, nil) }))
}

// FlatRef is what tr, a reference in the module's own names, reads in
// the flat configuration, for the engine to read it without
// BodyContext's context: a flat local (var.NAME, local.NAME,
// path.module; local is true and key is the local's flat name) or one of
// the module's resource blocks (TYPE.NAME; key is the block's address),
// and the traversal after that name. In BodyContext's context tr has
// exactly that value followed by rest. ok is false for any other
// reference (module.*, node.*, each, count, a block the module does not
// define), which only the context evaluates. (A variable or local the
// module does not define is a flat local the walk has no value of.)
func (s *InstanceScope) FlatRef(tr hcl.Traversal) (key string, local bool, rest hcl.Traversal, ok bool) {
	if s == nil || tr.RootName() == "module" {
		return "", false, nil, false
	}
	root, name, rest, ok := s.rw.flatName(tr)
	switch {
	case !ok || root == "node":
		return "", false, nil, false
	case root == "local":
		return name, true, rest, true
	}
	p := s.rw.prefix
	return addrs.Resource{Module: p, Type: root, Name: name[len(p)+1:]}.String(), false, rest, true
}

// wrap is e as this instance sees it: flat references, evaluated in the
// module's own names.
func (s *InstanceScope) wrap(e hcl.Expression) hcl.Expression {
	if s == nil || e == nil {
		return e
	}
	return &scopedExpr{Expression: e, s: s}
}

func (c *sharedSyntax) traversals(key any, compute func() []hcl.Traversal) []hcl.Traversal {
	if _, ok := key.(hclsyntax.Node); !ok {
		return compute() // not a pointer we may key on
	}
	if v, ok := c.travs.Load(key); ok {
		return v.([]hcl.Traversal)
	}
	travs := compute()
	c.travs.Store(key, travs)
	return travs
}

// context builds the module's names that travs use from the flat context:
// each (root, attribute) pair takes the value of its flat name, as the
// rewriter maps it; each and count pass through.
func (s *InstanceScope) context(flat *hcl.EvalContext, travs []hcl.Traversal) *hcl.EvalContext {
	ctx := &hcl.EvalContext{Variables: make(map[string]cty.Value, 4)}
	for c := flat; c != nil; c = c.Parent() {
		if c.Functions != nil {
			ctx.Functions = c.Functions
			break
		}
	}
	lookup := func(name string) (cty.Value, bool) {
		for c := flat; c != nil; c = c.Parent() {
			if v, ok := c.Variables[name]; ok {
				return v, true
			}
		}
		return cty.NilVal, false
	}
	objs := map[string]map[string]cty.Value{}
	var mods map[string]*moduleValue
	for _, tr := range travs {
		root := tr.RootName()
		attr, ok := traversalAttr(tr)
		if !ok || root == "each" || root == "count" {
			if v, ok := lookup(root); ok {
				ctx.Variables[root] = v
			}
			continue
		}
		froot, fkey, _, flat := s.rw.flatName(tr)
		if !flat {
			froot, fkey = root, attr
		}
		fv, ok := lookup(froot)
		if !ok {
			continue
		}
		v, ok := attrOf(fv, fkey)
		if !ok {
			continue
		}
		if root == "module" {
			if mods == nil {
				mods = map[string]*moduleValue{}
			}
			m := mods[attr]
			if m == nil {
				m = &moduleValue{}
				mods[attr] = m
			}
			m.add(tr, v)
			continue
		}
		if objs[root] == nil {
			objs[root] = map[string]cty.Value{}
		}
		objs[root][attr] = v
	}
	for name, m := range mods {
		if objs["module"] == nil {
			objs["module"] = map[string]cty.Value{}
		}
		objs["module"][name] = m.value()
	}
	for root, attrs := range objs {
		ctx.Variables[root] = cty.ObjectVal(attrs)
	}
	return ctx
}

// traversalAttr is the attribute a traversal takes of its root (var.x: x).
func traversalAttr(tr hcl.Traversal) (string, bool) {
	if len(tr) < 2 {
		return "", false
	}
	a, ok := tr[1].(hcl.TraverseAttr)
	return a.Name, ok
}

// attrOf is v's attribute or element name; unknown when v is.
func attrOf(v cty.Value, name string) (cty.Value, bool) {
	v, marks := v.Unmark()
	ty := v.Type()
	switch {
	case !v.IsKnown() || ty == cty.DynamicPseudoType:
		return cty.DynamicVal, true
	case v.IsNull():
		return cty.NilVal, false
	case ty.IsObjectType() && ty.HasAttribute(name):
		return v.GetAttr(name).WithMarks(marks), true
	case ty.IsMapType():
		if k := cty.StringVal(name); v.HasIndex(k).True() {
			return v.Index(k).WithMarks(marks), true
		}
	}
	return cty.NilVal, false
}

// moduleValue gathers module.m as an instance's expressions use it: the
// whole call (module.m), or the instances they name by literal key
// (module.m["a"], module.m[0]), which are all the flat context holds.
type moduleValue struct {
	whole cty.Value
	byKey map[addrs.InstanceKey]cty.Value
}

func (m *moduleValue) add(tr hcl.Traversal, v cty.Value) {
	if len(tr) > 2 {
		if ix, ok := tr[2].(hcl.TraverseIndex); ok {
			if k, err := addrs.KeyFromValue(ix.Key); err == nil {
				if m.byKey == nil {
					m.byKey = map[addrs.InstanceKey]cty.Value{}
				}
				m.byKey[k] = v
				return
			}
		}
	}
	m.whole = v
}

func (m *moduleValue) value() cty.Value {
	if m.whole != cty.NilVal {
		return m.whole
	}
	n, strs := 0, map[string]cty.Value{}
	for k, v := range m.byKey {
		switch k := k.(type) {
		case addrs.IntKey:
			if int(k)+1 > n {
				n = int(k) + 1
			}
		case addrs.StringKey:
			strs[string(k)] = v
		}
	}
	if len(strs) > 0 {
		return cty.ObjectVal(strs)
	}
	elems := make([]cty.Value, n)
	for i := range elems {
		elems[i] = cty.DynamicVal
		if v, ok := m.byKey[addrs.IntKey(i)]; ok {
			elems[i] = v
		}
	}
	return cty.TupleVal(elems)
}

// scopedExpr is a module expression as one instance sees it.
type scopedExpr struct {
	hcl.Expression
	s *InstanceScope
}

var _ hcl.Expression = (*scopedExpr)(nil)

func (e *scopedExpr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if ctx == nil {
		return e.Expression.Value(nil)
	}
	return e.Expression.Value(e.s.context(ctx, e.s.syn.traversals(e.Expression, e.Expression.Variables)))
}

func (e *scopedExpr) Variables() []hcl.Traversal { return e.s.Flat(e.Expression.Variables()) }

// unwrapScoped is the module's own expression behind e.
func unwrapScoped(e hcl.Expression) hcl.Expression {
	if s, ok := e.(*scopedExpr); ok {
		return s.Expression
	}
	return e
}
