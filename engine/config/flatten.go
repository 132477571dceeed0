package config

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/sparkform/sparkform/engine/addrs"
)

// Modules are flattened before the engine sees them: every module
// instance's nodes, locals and resources become blocks of one flat Module,
// named with the instance's address, and every reference inside them is
// rewritten to the flat name. The engine then walks one graph whose
// vertices are the instances of every module, so a module instance is no
// barrier: a resource waits only for what it really uses, across module
// boundaries, instance by instance.
//
// Flat names (P is the module instance, e.g. module.dsv41["a"]):
//
//	var.x inside P           local["P.var.x"]      (the caller's argument, converted and validated)
//	local.x inside P         local["P.local.x"]
//	path.module inside P     local["P.path.module"]
//	output "o" of P          local["P.output.o"]
//	module.m / module.m[k]   local["Q.module.m"] / local["Q.module.m[k]"] in the caller Q
//	node.n inside P          node["P.n"]           (rendered P.node.n)
//	TYPE.NAME inside P       TYPE["P.NAME"]        (address P.TYPE.NAME)
//
// Root blocks keep their names; only their module.* references change.

// Flatten returns root with every module instance brought in. vars are
// the root's variable values; module for_each and count must be known from
// them (and from locals that need nothing else). With vars nil (validate),
// a module whose expansion is not known yet gets one instance whose
// each.key, each.value and count.index are unknown. A root without module
// blocks is returned as it is.
func Flatten(root *Module, vars map[string]cty.Value) (*Module, hcl.Diagnostics) {
	if len(root.ModuleCalls) == 0 {
		return root, nil
	}
	flat := &Module{
		Dir: root.Dir, Files: root.Files, Variables: root.Variables, Outputs: map[string]*Output{},
		Locals: map[string]*Local{}, Nodes: map[string]*Node{}, Resources: map[string]*Resource{},
		Backend: root.Backend, Moved: root.Moved, ModuleCalls: root.ModuleCalls, Children: root.Children,
	}
	f := &flattener{flat: flat, vars: vars, static: map[string]cty.Value{}, busy: map[string]bool{}}
	if vars == nil {
		// Validate: defaults are what plan would use without -var.
		f.vars = map[string]cty.Value{}
		for n, v := range root.Variables {
			if v.Default != cty.NilVal {
				f.vars[n] = v.Default
			}
		}
		f.validate = true
	}
	// Sensitive root variables keep their mark before the walk too, so a
	// call's for_each or count made from one is refused (its keys are
	// printed) as a resource's is.
	f.vars = MarkVariables(root, f.vars)
	rw := &rewriter{mod: root, f: f}
	for n, l := range root.Locals {
		rw.expr(l.Expr)
		flat.Locals[n] = l
	}
	for n, nd := range root.Nodes {
		rw.node(nd)
		flat.Nodes[n] = nd
	}
	for k, r := range root.Resources {
		rw.resource(r)
		flat.Resources[k] = r
	}
	for n, o := range root.Outputs {
		rw.expr(o.Expr)
		flat.Outputs[n] = o
	}
	var diags hcl.Diagnostics
	diags = append(diags, f.calls(root, nil, rw)...)
	diags = append(diags, f.moduleDependsOn()...)
	// Module arguments known before the plan (made of variables and
	// literals) are checked now, so a recipe that does not fit is refused
	// before any node is contacted; the rest are checked as the walk
	// evaluates them.
	if !f.validate && !diags.HasErrors() {
		for _, name := range slices.Sorted(maps.Keys(flat.Locals)) {
			ve, ok := flat.Locals[name].Expr.(*moduleVarExpr)
			if !ok || ve.inner == nil {
				continue
			}
			_, d := ve.Value(f.staticContext(ve))
			for _, x := range d {
				if x.Summary == "Invalid value for module argument" {
					diags = append(diags, x)
				}
			}
		}
	}
	// References to a module instance that is not there: a key the call
	// does not have (validate, which cannot know the keys, lets them be).
	for _, r := range f.refs {
		if _, ok := flat.Locals[r.name]; ok {
			continue
		}
		if f.validate {
			flat.Locals[r.name] = &Local{Name: r.name, Expr: hcl.StaticExpr(cty.DynamicVal, r.rng), DeclRange: r.rng}
			continue
		}
		rng := r.rng
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared module instance",
			Detail:  fmt.Sprintf("There is no module instance %s: check the key against the module block's for_each or count.", r.name),
			Subject: &rng})
	}
	return flat, diags
}

// callMode says how a module call's instances are keyed.
type callMode int

const (
	singleMode callMode = iota
	forEachMode
	countMode
)

type flattener struct {
	flat *Module
	vars map[string]cty.Value
	// static caches locals evaluated before the walk (for module
	// for_each/count); busy guards against cycles among them.
	static map[string]cty.Value
	busy   map[string]bool
	// pending are depends_on entries naming a module, resolved once every
	// module is in.
	pending []pendingDep
	// refs are the module instances references name, checked at the end.
	refs     []moduleRef
	validate bool
	// varNodes maps a module instance's variable (its flat local name,
	// P.var.x) to the node block its argument names (see staticNode).
	varNodes map[string]string
	// modules holds what every call of one module shares: its syntax's
	// traversals (LoadDir loads a folder once for all its calls).
	modules map[*Module]*calledModule
}

// calledModule is what the calls of one module share.
type calledModule struct {
	syn        *sharedSyntax
	moduleRefs []hcl.Traversal // moduleTraversals
}

func (f *flattener) called(m *Module) *calledModule {
	if c := f.modules[m]; c != nil {
		return c
	}
	if f.modules == nil {
		f.modules = map[*Module]*calledModule{}
	}
	c := &calledModule{syn: &sharedSyntax{}, moduleRefs: moduleTraversals(m)}
	f.modules[m] = c
	return c
}

type moduleRef struct {
	name string
	rng  hcl.Range
}

type pendingDep struct {
	r      *Resource
	module string // flat prefix of the call or instance
	rng    hcl.Range
}

// calls brings in every module m calls, as instances of path.
func (f *flattener) calls(m *Module, path addrs.ModuleInstance, rw *rewriter) hcl.Diagnostics {
	var diags hcl.Diagnostics
	names := make([]string, 0, len(m.ModuleCalls))
	for n := range m.ModuleCalls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		diags = append(diags, f.call(m, path, rw, m.ModuleCalls[n])...)
	}
	return diags
}

func (f *flattener) call(parent *Module, path addrs.ModuleInstance, rw *rewriter, mc *ModuleCall) hcl.Diagnostics {
	child := parent.Children[mc.Name]
	if child == nil {
		return nil // loading reported why
	}
	var diags hcl.Diagnostics
	// The caller's expressions as the caller's instance sees them: a root
	// call's are rewritten in place (the root's syntax is its own), a
	// module instance's are wrapped (its module's syntax is shared).
	args := make(map[string]hcl.Expression, len(mc.Args))
	keyed := map[string]bool{} // the arguments that read each or count
	for n, a := range mc.Args {
		args[n] = rw.wrap(a.Expr)
		for _, tr := range a.Expr.Variables() {
			if root := tr.RootName(); root == "each" || root == "count" {
				keyed[n] = true
			}
		}
	}
	forEach, count := rw.wrap(mc.ForEach), rw.wrap(mc.Count)
	var deps []hcl.Traversal
	for _, tr := range mc.DependsOn {
		deps = append(deps, rw.traversal(tr))
	}
	// Unknown arguments, and required ones left out, before anything else.
	for _, an := range slices.Sorted(maps.Keys(mc.Args)) {
		if _, ok := child.Variables[an]; !ok {
			a := mc.Args[an]
			detail := fmt.Sprintf("Module %q (%s) has no variable named %q.", mc.Name, mc.Source, an)
			if s := addrs.Suggest(an, slices.Sorted(maps.Keys(child.Variables))); s != "" {
				detail += fmt.Sprintf(" Did you mean %q?", s)
			} else {
				detail += " Declare it in the module with a variable block, or remove the argument."
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsupported argument", Detail: detail, Subject: a.NameRange.Ptr()})
		}
	}
	for _, vn := range slices.Sorted(maps.Keys(child.Variables)) {
		if _, ok := mc.Args[vn]; !ok && child.Variables[vn].Default == cty.NilVal {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing required argument",
				Detail:  fmt.Sprintf("Module %q (%s) needs the argument %q: its variable has no default. Add %s = ... to the module block.", mc.Name, mc.Source, vn, vn),
				Subject: mc.DeclRange.Ptr()})
		}
	}
	if diags.HasErrors() {
		return diags
	}

	callPrefix := addrs.Prefix(path.String(), "module."+mc.Name)
	exp, mode, d := f.expandCall(mc, forEach, count)
	diags = append(diags, d...)
	if d.HasErrors() {
		return diags
	}
	// Every instance, of this call and of every other call of the same
	// module, shares child's syntax, parsed once by LoadDir; an
	// InstanceScope maps its names to the instance's flat ones.
	cm := f.called(child)
	syn, moduleRefs := cm.syn, cm.moduleRefs
	for _, k := range exp.Keys {
		ipath := path.Child(mc.Name, k)
		p := ipath.String()
		inst := child
		var each *EachValues
		countIndex := cty.NilVal
		if ev, ok := exp.Each[k]; ok {
			each = &ev
		} else if k != addrs.NoKey {
			countIndex = k.Value()
		} else if mode != singleMode {
			// Validate, expansion not known: one instance, unknown key.
			if mode == forEachMode {
				each = &EachValues{Key: cty.UnknownVal(cty.String), Value: cty.DynamicVal}
			} else {
				countIndex = cty.UnknownVal(cty.Number)
			}
		}
		for _, vn := range slices.Sorted(maps.Keys(inst.Variables)) {
			v := inst.Variables[vn]
			ve := &moduleVarExpr{v: v, each: each, countIndex: countIndex, instance: p, rng: mc.DeclRange}
			if a, ok := mc.Args[vn]; ok {
				ve.inner, ve.rng, ve.keyed = args[vn], a.Expr.Range(), keyed[vn]
			}
			f.flat.Locals[p+".var."+vn] = &Local{Name: p + ".var." + vn, Expr: ve, DeclRange: v.DeclRange}
			if ve.inner != nil && v.Type == cty.DynamicPseudoType && v.typeDefaults == nil && len(v.Validations) == 0 {
				if n := f.staticNode(ve.inner); n != "" {
					if f.varNodes == nil {
						f.varNodes = map[string]string{}
					}
					f.varNodes[p+".var."+vn] = n
				}
			}
		}
		abs, _ := filepath.Abs(inst.Dir)
		f.flat.Locals[p+".path.module"] = &Local{Name: p + ".path.module", Expr: hcl.StaticExpr(cty.StringVal(abs), mc.DeclRange), DeclRange: mc.DeclRange}
		scope := newInstanceScope(inst, p, syn)
		irw := &rewriter{mod: inst, prefix: p, f: f, scope: scope}
		// The module.* references of the instance, checked at the end.
		for _, tr := range moduleRefs {
			irw.traversal(tr)
		}
		for n, l := range inst.Locals {
			f.flat.Locals[p+".local."+n] = &Local{Name: p + ".local." + n, Expr: scope.wrap(l.Expr), DeclRange: l.DeclRange}
		}
		for n, nd := range inst.Nodes {
			c := *nd
			c.Name, c.Scope = p+"."+n, scope
			c.ForEach, c.Count = scope.wrap(nd.ForEach), scope.wrap(nd.Count)
			f.flat.Nodes[c.Name] = &c
		}
		rs := make([]*Resource, 0, len(inst.Resources))
		for _, key := range slices.Sorted(maps.Keys(inst.Resources)) {
			r := inst.Resources[key]
			c := *r
			c.Addr.Module, c.Scope = p, scope
			c.src = nil // the module's body, shared by every instance: never released
			c.ForEach, c.Count, c.NodeExpr = scope.wrap(r.ForEach), scope.wrap(r.Count), scope.wrap(r.NodeExpr)
			c.NodeBlock = f.staticNode(c.NodeExpr)
			c.DependsOn = make([]hcl.Traversal, 0, len(r.DependsOn)+len(deps))
			for _, tr := range r.DependsOn {
				c.DependsOn = append(c.DependsOn, irw.traversal(tr))
			}
			c.DependsOn = append(c.DependsOn, deps...)
			f.flat.Resources[c.Addr.String()] = &c
			rs = append(rs, &c)
		}
		outs := make([]string, 0, len(inst.Outputs))
		for n, o := range inst.Outputs {
			f.flat.Locals[p+".output."+n] = &Local{Name: p + ".output." + n, Expr: &moduleOutputExpr{Expression: scope.wrap(o.Expr), out: o, instance: p}, DeclRange: o.DeclRange}
			outs = append(outs, n)
		}
		sort.Strings(outs)
		// module.m[k] as the caller sees it: an object of the outputs.
		obj := &hclsyntax.ObjectConsExpr{Items: make([]hclsyntax.ObjectConsItem, 0, len(outs)), SrcRange: mc.DeclRange, OpenRange: mc.DeclRange}
		for _, o := range outs {
			obj.Items = append(obj.Items, objectItem(o, p+".output."+o, mc.DeclRange))
		}
		f.syntheticLocal(callPrefix+k.String(), obj, mc.DeclRange)
		diags = append(diags, f.calls(inst, ipath, irw)...)
		for _, r := range rs {
			f.queueModuleDeps(r, irw)
		}
	}
	// module.m: the instance itself (defined above under the same name,
	// as is the one instance of a call whose expansion validate cannot
	// know), an object by key, or a tuple.
	if len(exp.Keys) == 1 && exp.Keys[0] == addrs.NoKey {
		return diags
	}
	// Built as a syntax tree, not written out and parsed again: hclsyntax
	// parses a large object constructor in more than linear time and
	// memory, and a call has as many items as instances.
	rng := mc.DeclRange
	switch mode {
	case forEachMode:
		obj := &hclsyntax.ObjectConsExpr{Items: make([]hclsyntax.ObjectConsItem, 0, len(exp.Keys)), SrcRange: rng, OpenRange: rng}
		for _, k := range exp.Keys {
			obj.Items = append(obj.Items, objectItem(string(k.(addrs.StringKey)), callPrefix+k.String(), rng))
		}
		f.syntheticLocal(callPrefix, obj, rng)
	case countMode:
		tup := &hclsyntax.TupleConsExpr{Exprs: make([]hclsyntax.Expression, 0, len(exp.Keys)), SrcRange: rng, OpenRange: rng}
		for _, k := range exp.Keys {
			tup.Exprs = append(tup.Exprs, localRef(callPrefix+k.String(), rng))
		}
		f.syntheticLocal(callPrefix, tup, rng)
	default:
		// Unreachable (a single instance returned above); keep what the
		// text form did: an empty expression that does not parse.
		panic(fmt.Sprintf("config: module call %s: no synthetic value for mode %d", callPrefix, mode))
	}
	return diags
}

// localRef is local["name"], as hclsyntax parses it.
func localRef(name string, rng hcl.Range) *hclsyntax.ScopeTraversalExpr {
	return &hclsyntax.ScopeTraversalExpr{
		Traversal: hcl.Traversal{hcl.TraverseRoot{Name: "local", SrcRange: rng}, hcl.TraverseIndex{Key: cty.StringVal(name), SrcRange: rng}},
		SrcRange:  rng,
	}
}

// objectItem is `"key" = local["name"]` in an object constructor.
func objectItem(key, name string, rng hcl.Range) hclsyntax.ObjectConsItem {
	return hclsyntax.ObjectConsItem{
		KeyExpr:   &hclsyntax.ObjectConsKeyExpr{Wrapped: &hclsyntax.LiteralValueExpr{Val: cty.StringVal(key), SrcRange: rng}},
		ValueExpr: localRef(name, rng),
	}
}

// queueModuleDeps records depends_on entries of r that name a module:
// they become every resource of that module once all are in.
func (f *flattener) queueModuleDeps(r *Resource, rw *rewriter) {
	kept := r.DependsOn[:0]
	for _, tr := range r.DependsOn {
		if mod, ok := rw.moduleDep(tr); ok {
			f.pending = append(f.pending, pendingDep{r: r, module: mod, rng: tr.SourceRange()})
			continue
		}
		kept = append(kept, tr)
	}
	r.DependsOn = kept
}

// moduleDependsOn resolves depends_on entries that name modules, in root
// resources and module resources alike.
func (f *flattener) moduleDependsOn() hcl.Diagnostics {
	rw := &rewriter{mod: &Module{}}
	for _, k := range slices.Sorted(maps.Keys(f.flat.Resources)) {
		r := f.flat.Resources[k]
		if r.Addr.Module == "" {
			f.queueModuleDeps(r, rw)
		}
	}
	var diags hcl.Diagnostics
	keys := slices.Sorted(maps.Keys(f.flat.Resources))
	for _, p := range f.pending {
		found := false
		for _, k := range keys {
			o := f.flat.Resources[k]
			if !addrs.WithinModule(o.Addr.String(), p.module) || o == p.r {
				continue
			}
			found = true
			p.r.DependsOn = append(p.r.DependsOn, hcl.Traversal{
				hcl.TraverseRoot{Name: o.Addr.Type, SrcRange: p.rng},
				hcl.TraverseIndex{Key: cty.StringVal(o.Addr.ScopeKey()), SrcRange: p.rng},
			})
		}
		if !found {
			if _, ok := f.flat.Locals[p.module]; !ok {
				rng := p.rng
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared module",
					Detail: fmt.Sprintf("depends_on names %s, which is not a module instance of this configuration.", p.module), Subject: &rng})
			}
		}
	}
	return diags
}

func (f *flattener) syntheticLocal(name string, expr hclsyntax.Expression, rng hcl.Range) {
	f.flat.Locals[name] = &Local{Name: name, Expr: &rangedExpr{Expression: expr, rng: rng}, DeclRange: rng}
}

// moduleOutputExpr is a module instance's output as its caller sees it:
// marked when declared sensitive, and refused when it holds a sensitive
// value but is not declared so (as a root output is).
type moduleOutputExpr struct {
	hcl.Expression
	out      *Output
	instance string
}

func (e *moduleOutputExpr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	v, diags := e.Expression.Value(ctx)
	switch {
	case e.out.Sensitive:
		v = v.Mark(SensitiveMark)
	case HasSensitive(v):
		rng := e.Expression.Range()
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Output refers to sensitive values",
			Detail: fmt.Sprintf("The value of output %q of %s is sensitive: it comes from a sensitive variable or sensitive(), directly or through a resource attribute set from one, or from an attribute its provider marks sensitive. "+
				"A module output that holds sensitive data must say so: add sensitive = true to the output block (or wrap the value in nonsensitive() if it is safe to show).", e.out.Name, e.instance),
			Subject: &rng})
	}
	return v, diags
}

// rangedExpr reports diagnostics at the module block rather than at
// positions of the generated text.
type rangedExpr struct {
	hcl.Expression
	rng hcl.Range
}

func (e *rangedExpr) Range() hcl.Range      { return e.rng }
func (e *rangedExpr) StartRange() hcl.Range { return e.rng }

// expandCall evaluates a call's for_each or count before the walk.
// forEach and count are the call's, as its caller's instance sees them.
func (f *flattener) expandCall(mc *ModuleCall, forEach, count hcl.Expression) (*Expansion, callMode, hcl.Diagnostics) {
	mode := singleMode
	switch {
	case forEach != nil:
		mode = forEachMode
	case count != nil:
		mode = countMode
	default:
		return &Expansion{Keys: []addrs.InstanceKey{addrs.NoKey}}, mode, nil
	}
	expr := forEach
	if expr == nil {
		expr = count
	}
	ctx := f.staticContext(expr)
	v, _ := expr.Value(ctx)
	if !v.IsWhollyKnown() {
		if f.validate {
			return &Expansion{Keys: []addrs.InstanceKey{addrs.NoKey}}, mode, nil
		}
		what := "for_each"
		if count != nil {
			what = "count"
		}
		return nil, mode, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid module " + what,
			Detail:  fmt.Sprintf("The %s of module %q must be known before the plan: it may use variables, literals and locals made of those, not values of resources or nodes.", what, mc.Name),
			Subject: expr.Range().Ptr()}}
	}
	exp, d := Expand(forEach, count, ctx)
	return exp, mode, d
}

// staticContext evaluates what expr needs that is known before the walk:
// root variables and the locals made of them; anything else is unknown.
func (f *flattener) staticContext(expr hcl.Expression) *hcl.EvalContext {
	locals := map[string]cty.Value{}
	for _, tr := range expr.Variables() {
		if name, ok := localName(tr); ok {
			locals[name] = f.staticLocal(name)
		}
	}
	vars := map[string]cty.Value{}
	for n, v := range f.flat.Variables {
		if val, ok := f.vars[n]; ok {
			vars[n] = val
		} else {
			vars[n] = cty.UnknownVal(v.Type)
		}
	}
	s := &Scope{BaseDir: f.flat.Dir, Variables: vars, Locals: locals, Nodes: map[string]cty.Value{}, Resources: map[string]map[string]cty.Value{}}
	ctx := s.EvalContext()
	for _, tr := range expr.Variables() {
		root := tr.RootName()
		if _, ok := ctx.Variables[root]; !ok && !ReservedRootName(root) {
			ctx.Variables[root] = cty.DynamicVal
		}
	}
	ctx.Variables["node"] = cty.DynamicVal
	return ctx
}

// ReservedRootName reports whether name is a keyword root of references.
func ReservedRootName(name string) bool { return addrs.ReservedRoot(name) }

func (f *flattener) staticLocal(name string) cty.Value {
	if v, ok := f.static[name]; ok {
		return v
	}
	l, ok := f.flat.Locals[name]
	if !ok || f.busy[name] {
		return cty.DynamicVal
	}
	f.busy[name] = true
	v, d := l.Expr.Value(f.staticContext(l.Expr))
	delete(f.busy, name)
	if d.HasErrors() {
		v = cty.DynamicVal
	}
	f.static[name] = v
	return v
}

func localName(tr hcl.Traversal) (string, bool) {
	if tr.RootName() != "local" {
		return "", false
	}
	return stepName(tr)
}

// stepName is the name a flat traversal's first step takes of its root:
// ROOT.NAME or ROOT["NAME"].
func stepName(tr hcl.Traversal) (string, bool) {
	if len(tr) < 2 {
		return "", false
	}
	switch s := tr[1].(type) {
	case hcl.TraverseAttr:
		return s.Name, true
	case hcl.TraverseIndex:
		if s.Key.Type() == cty.String && s.Key.IsKnown() && !s.Key.IsNull() {
			return s.Key.AsString(), true
		}
	}
	return "", false
}

// rewriter turns the references of one module instance's blocks into
// flat names. The root's syntax trees are rewritten in place (only their
// module.* references change); a module instance's are shared with the
// other instances of its module, so they are wrapped instead (see
// InstanceScope).
type rewriter struct {
	f      *flattener
	mod    *Module
	prefix string // the module instance; "" for the root
	// scope is the instance's InstanceScope; nil for the root.
	scope *InstanceScope
}

// wrap is e with flat references: rewritten in place for the root,
// wrapped for a module instance.
func (rw *rewriter) wrap(e hcl.Expression) hcl.Expression {
	if rw.scope == nil {
		rw.expr(e)
		return e
	}
	return rw.scope.wrap(e)
}

// staticNode is the flat name of the node block e names by syntax alone:
// node.NAME, or a module instance's var.X whose argument names one
// (varNodes); "" for anything else. The names are the rewriter's (a
// module's node.n is node["P.n"], its var.x local["P.var.x"]). Whether
// that block has count or for_each is for the engine to see.
func (f *flattener) staticNode(e hcl.Expression) string {
	var scope *InstanceScope // nil: the root's names are flat already
	if s, ok := e.(*scopedExpr); ok {
		e, scope = s.Expression, s.s
	}
	st, ok := e.(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(st.Traversal) != 2 {
		return ""
	}
	tr := scope.FlatTraversal(st.Traversal)
	switch tr.RootName() {
	case "node":
		name, _ := stepName(tr)
		return name
	case "local":
		if name, ok := stepName(tr); ok {
			return f.varNodes[name]
		}
	}
	return ""
}

// moduleTraversals are the module.* references m's blocks make (in its
// own names): each instance checks that the instances they name exist.
func moduleTraversals(m *Module) []hcl.Traversal {
	var out []hcl.Traversal
	add := func(travs []hcl.Traversal) {
		for _, tr := range travs {
			if tr.RootName() == "module" {
				out = append(out, tr)
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(m.Locals)) {
		add(ExprReferences(m.Locals[n].Expr))
	}
	for _, n := range slices.Sorted(maps.Keys(m.Nodes)) {
		nd := m.Nodes[n]
		add(ExprReferences(nd.ForEach, nd.Count))
		add(syntaxTraversals(nd.Config, nil))
	}
	for _, k := range slices.Sorted(maps.Keys(m.Resources)) {
		r := m.Resources[k]
		add(ExprReferences(r.ForEach, r.Count, r.NodeExpr))
		add(syntaxTraversals(r.Body(), nil)) // depends_on: rewritten per instance
	}
	for _, n := range slices.Sorted(maps.Keys(m.Outputs)) {
		add(ExprReferences(m.Outputs[n].Expr))
	}
	for _, n := range slices.Sorted(maps.Keys(m.ModuleCalls)) {
		mc := m.ModuleCalls[n]
		add(ExprReferences(mc.ForEach, mc.Count))
		for _, an := range slices.Sorted(maps.Keys(mc.Args)) {
			add(mc.Args[an].Expr.Variables())
		}
	}
	return out
}

func (rw *rewriter) expr(e hcl.Expression) {
	if e == nil {
		return
	}
	if n, ok := e.(hclsyntax.Node); ok {
		rw.visit(n)
	}
}

// visit rewrites every reference under n in place, and reports whether it
// rewrote any.
func (rw *rewriter) visit(n hclsyntax.Node) bool {
	changed := false
	hclsyntax.VisitAll(n, func(n hclsyntax.Node) hcl.Diagnostics {
		if st, ok := n.(*hclsyntax.ScopeTraversalExpr); ok {
			tr := rw.traversal(st.Traversal)
			if len(tr) > 0 && len(st.Traversal) > 0 && &tr[0] != &st.Traversal[0] {
				changed = true
			}
			st.Traversal = tr
		}
		return nil
	})
	return changed
}

func (rw *rewriter) node(n *Node) {
	rw.expr(n.ForEach)
	rw.expr(n.Count)
	if b, ok := n.Config.(*hclsyntax.Body); ok {
		rw.visit(b)
	}
}

func (rw *rewriter) resource(r *Resource) {
	rw.expr(r.ForEach)
	rw.expr(r.Count)
	rw.expr(r.NodeExpr)
	if b, ok := r.Body().(*hclsyntax.Body); ok && rw.visit(b) {
		// Parsed again, the body would lack the rewrite.
		r.src = nil
	}
	for i, tr := range r.DependsOn {
		r.DependsOn[i] = rw.traversal(tr)
	}
}

// moduleDep reports whether tr (a depends_on entry, already rewritten)
// names a module call or instance, and which, as a flat prefix: depends_on
// refuses local.*, so a local there is a module reference.
func (rw *rewriter) moduleDep(tr hcl.Traversal) (string, bool) {
	if len(tr) == 2 {
		if name, ok := localName(tr); ok {
			return name, true
		}
	}
	return "", false
}

func (rw *rewriter) traversal(tr hcl.Traversal) hcl.Traversal {
	root, name, rest, ok := rw.flatName(tr)
	if !ok {
		return tr
	}
	out := make(hcl.Traversal, 0, 2+len(rest))
	out = append(out,
		hcl.TraverseRoot{Name: root, SrcRange: tr[0].SourceRange()},
		hcl.TraverseIndex{Key: cty.StringVal(name), SrcRange: tr[1].SourceRange()})
	return append(out, rest...)
}

// flatName is where traversal puts tr: ROOT["NAME"] followed by rest.
// ok is false when tr stays as it is (already flat, each, count, a name
// the module does not define, or an index the checks report). It builds
// no traversal: InstanceScope.context calls it per instance.
func (rw *rewriter) flatName(tr hcl.Traversal) (root, name string, rest hcl.Traversal, ok bool) {
	if len(tr) < 2 {
		return "", "", nil, false
	}
	r, ok := tr[0].(hcl.TraverseRoot)
	if !ok {
		return "", "", nil, false
	}
	attr, ok := tr[1].(hcl.TraverseAttr)
	if !ok {
		return "", "", nil, false // already flat, or an index the checks report
	}
	p := rw.prefix
	switch r.Name {
	case "module":
		name := addrs.Prefix(p, "module."+attr.Name)
		rest := tr[2:]
		if len(rest) > 0 {
			if ix, ok := rest[0].(hcl.TraverseIndex); ok {
				if k, err := addrs.KeyFromValue(ix.Key); err == nil {
					name += k.String()
					rest = rest[1:]
				}
			}
		}
		if rw.f != nil {
			rw.f.refs = append(rw.f.refs, moduleRef{name: name, rng: tr.SourceRange()})
		}
		return "local", name, rest, true
	}
	if p == "" {
		return "", "", nil, false
	}
	switch r.Name {
	case "var":
		return "local", p + ".var." + attr.Name, tr[2:], true
	case "local":
		return "local", p + ".local." + attr.Name, tr[2:], true
	case "path":
		if attr.Name == "module" {
			return "local", p + ".path.module", tr[2:], true
		}
		return "", "", nil, false
	case "node":
		if _, ok := rw.mod.Nodes[attr.Name]; ok {
			return "node", p + "." + attr.Name, tr[2:], true
		}
		return "", "", nil, false
	case "each", "count":
		return "", "", nil, false
	}
	if _, ok := rw.mod.Resources[r.Name+"."+attr.Name]; ok {
		return r.Name, p + "." + attr.Name, tr[2:], true
	}
	return "", "", nil, false
}

// moduleVarExpr is a module instance's input variable: the caller's
// argument (evaluated where the caller is, with the instance's each and
// count), or the default, converted to the variable's type and checked by
// its validations.
type moduleVarExpr struct {
	v          *Variable
	inner      hcl.Expression // nil: the default
	each       *EachValues
	countIndex cty.Value
	// keyed says inner reads each or count: only then is it evaluated
	// in a context that adds them (an object and a map per evaluation).
	keyed    bool
	instance string
	rng      hcl.Range
}

var _ hcl.Expression = (*moduleVarExpr)(nil)

func (e *moduleVarExpr) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	v, diags := e.value(ctx)
	if e.v.Sensitive && v != cty.NilVal {
		v = v.Mark(SensitiveMark)
	}
	return v, diags
}

func (e *moduleVarExpr) value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if e.inner == nil {
		return e.v.Default, nil
	}
	child := ctx
	if e.keyed && (e.each != nil || e.countIndex != cty.NilVal) {
		child = ctx.NewChild()
		child.Variables = map[string]cty.Value{}
		if e.each != nil {
			child.Variables["each"] = cty.ObjectVal(map[string]cty.Value{"key": e.each.Key, "value": e.each.Value})
		}
		if e.countIndex != cty.NilVal {
			child.Variables["count"] = cty.ObjectVal(map[string]cty.Value{"index": e.countIndex})
		}
	}
	val, diags := e.inner.Value(child)
	if diags.HasErrors() {
		return cty.UnknownVal(e.v.Type), diags
	}
	if val.IsNull() && e.v.Default != cty.NilVal {
		return e.v.Default, diags
	}
	if e.v.typeDefaults != nil {
		val = e.v.typeDefaults.Apply(val)
	}
	cv, err := convert.Convert(val, e.v.Type)
	if err != nil {
		return cty.UnknownVal(e.v.Type), append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for module argument",
			Detail:  fmt.Sprintf("The argument %q of %s does not match the type of its variable, %s: %s. The variable is declared at %s.", e.v.Name, e.instance, typeString(e.v.Type), convErr(err), posString(e.v.DeclRange)),
			Subject: e.rng.Ptr()})
	}
	if len(e.v.Validations) == 0 {
		return cv, diags
	}
	// Validations run on what is known: a condition that depends on an
	// unknown part (validate, values known only after apply) is skipped.
	vctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{e.v.Name: cv})}, Functions: ctx.Functions}
	for _, val := range e.v.Validations {
		cond, d := val.Condition.Value(vctx)
		if d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		// A sensitive argument gives a marked result: whether it passed
		// is not secret, but the message may be.
		cond, _ = cond.UnmarkDeep()
		if cond.IsNull() || !cond.IsKnown() {
			continue
		}
		if c, err := convert.Convert(cond, cty.Bool); err != nil || c.True() {
			continue
		}
		msg := validationMessage(val.ErrorMessage, vctx, fmt.Sprintf("The value of var.%s failed its validation.", e.v.Name))
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for module argument",
			Detail:  fmt.Sprintf("%s\n\nThis is the argument %q of %s, checked by the validation rule at %s.", msg, e.v.Name, e.instance, posString(val.DeclRange)),
			Subject: e.rng.Ptr()})
	}
	return cv, diags
}

// validationMessage is a failed validation's error_message, or dflt when
// it cannot be had as a known string. One made from a sensitive value is
// not shown.
func validationMessage(expr hcl.Expression, ctx *hcl.EvalContext, dflt string) string {
	mv, d := expr.Value(ctx)
	if d.HasErrors() {
		return dflt
	}
	if HasSensitive(mv) {
		return dflt + " (Its error message refers to a sensitive value, so it is not shown.)"
	}
	mv, _ = mv.UnmarkDeep()
	if s, err := convert.Convert(mv, cty.String); err == nil && !s.IsNull() && s.IsKnown() {
		return s.AsString()
	}
	return dflt
}

func (e *moduleVarExpr) Variables() []hcl.Traversal {
	if e.inner == nil {
		return nil
	}
	// X[each.key] or X[count.index] names one instance of X: this
	// instance's key is known, so the reference says which (the engine
	// then waits for that instance only).
	keyed := map[hcl.Range]cty.Value{}
	if n, ok := unwrapScoped(e.inner).(hclsyntax.Node); ok {
		hclsyntax.VisitAll(n, func(n hclsyntax.Node) hcl.Diagnostics {
			ix, ok := n.(*hclsyntax.IndexExpr)
			if !ok {
				return nil
			}
			coll, ok := ix.Collection.(*hclsyntax.ScopeTraversalExpr)
			key, ok2 := ix.Key.(*hclsyntax.ScopeTraversalExpr)
			if !ok || !ok2 || len(key.Traversal) != 2 {
				return nil
			}
			root, attr := key.Traversal.RootName(), ""
			if a, ok := key.Traversal[1].(hcl.TraverseAttr); ok {
				attr = a.Name
			}
			switch {
			case root == "each" && attr == "key" && e.each != nil && e.each.Key.IsKnown():
				keyed[coll.Traversal.SourceRange()] = e.each.Key
			case root == "count" && attr == "index" && e.countIndex != cty.NilVal && e.countIndex.IsKnown():
				keyed[coll.Traversal.SourceRange()] = e.countIndex
			}
			return nil
		})
	}
	var out []hcl.Traversal
	for _, tr := range e.inner.Variables() {
		if k, ok := keyed[tr.SourceRange()]; ok {
			tr = append(append(hcl.Traversal(nil), tr...), hcl.TraverseIndex{Key: k, SrcRange: tr.SourceRange()})
		}
		switch tr.RootName() {
		case "each":
			if e.each != nil {
				continue
			}
		case "count":
			if e.countIndex != cty.NilVal {
				continue
			}
		}
		out = append(out, tr)
	}
	return out
}

func (e *moduleVarExpr) Range() hcl.Range      { return e.rng }
func (e *moduleVarExpr) StartRange() hcl.Range { return e.rng }
