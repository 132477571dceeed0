// This file holds the evaluator: every value computed so far in one walk
// (locals, node instances, resource instances) and the HCL evaluation
// contexts built from them for a block or one of its instances.

package engine

import (
	"strconv"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// expansionMode says how a block's instances are addressed.
type expansionMode int

const (
	singleMode expansionMode = iota
	forEachMode
	countMode
)

// blockValues holds the values of one block's instances, for references.
type blockValues struct {
	mu   sync.Mutex
	mode expansionMode
	// one is the value of a block without for_each or count (NilVal until
	// set): most blocks of a generated configuration are such, and a map
	// of one entry per block cost ~400 B. vals holds keyed instances.
	one  cty.Value
	vals map[addrs.InstanceKey]cty.Value
	agg  cty.Value // cached aggregate, NilVal when stale
	// alone is {name: value()}, the object a context holds for a
	// reference to this block alone among its kind (node.local, or the
	// one sparkform_data a block references): most blocks reference one
	// node and one resource of a type, and each such context took a new
	// object (and object type) of its own. It is kept from the second
	// build on (aloneBuilt: built once since the last change): a block
	// that one other references (each link of a generated chain) built it
	// once and kept it to the walk's end, ~350 B per block for nothing.
	// NilVal when stale or not kept.
	alone      cty.Value
	aloneName  string
	aloneBuilt bool
	// node is a single node block's value read as a node (nodeFromValue),
	// for every resource whose node argument names the block; nil until
	// read and after a change. A pointer: only node blocks read it, and
	// an sdk.Node in every resource block's holder was ~200 B each.
	node *nodeRead
}

// nodeRead is a block's value read as a node, and the error of reading it.
type nodeRead struct {
	node sdk.Node
	err  error
}

func (b *blockValues) set(k addrs.InstanceKey, v cty.Value) {
	b.mu.Lock()
	if b.mode == singleMode && k == addrs.NoKey {
		b.one = v
	} else {
		if b.vals == nil {
			b.vals = map[addrs.InstanceKey]cty.Value{}
		}
		b.vals[k] = v
	}
	b.agg, b.alone, b.aloneBuilt, b.node = cty.NilVal, cty.NilVal, false, nil
	b.mu.Unlock()
}

// asNode is value() read as a node, once per change.
func (b *blockValues) asNode() (sdk.Node, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.node == nil {
		n, err := nodeOf(b.valueLocked())
		b.node = &nodeRead{node: n, err: err}
	}
	return b.node.node, b.node.err
}

// getLocked is instance k's value; b.mu is held.
func (b *blockValues) getLocked(k addrs.InstanceKey) (cty.Value, bool) {
	if b.mode == singleMode && k == addrs.NoKey {
		return b.one, b.one != cty.NilVal
	}
	v, ok := b.vals[k]
	return v, ok
}

// eachLocked calls fn with every instance's value; b.mu is held.
func (b *blockValues) eachLocked(fn func(cty.Value)) {
	if b.one != cty.NilVal {
		fn(b.one)
	}
	for _, v := range b.vals {
		fn(v)
	}
}

// valueAlone is {name: value()}, kept from its second build per change
// of the block (see alone).
func (b *blockValues) valueAlone(name string) cty.Value {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.alone != cty.NilVal && b.aloneName == name {
		return b.alone
	}
	v := cty.ObjectVal(map[string]cty.Value{name: b.valueLocked()})
	if b.aloneBuilt {
		b.alone, b.aloneName = v, name
	}
	b.aloneBuilt = true
	return v
}

// value is the block as references see it: the object itself, an object
// of for_each keys, or a tuple of count instances. Built once per change.
func (b *blockValues) value() cty.Value {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.valueLocked()
}

func (b *blockValues) valueLocked() cty.Value {
	if b.agg != cty.NilVal {
		return b.agg
	}
	switch b.mode {
	case singleMode:
		if v, ok := b.getLocked(addrs.NoKey); ok {
			b.agg = v
		} else {
			b.agg = cty.DynamicVal
		}
	case forEachMode:
		m := make(map[string]cty.Value, len(b.vals))
		for k, v := range b.vals {
			m[k.Value().AsString()] = v
		}
		b.agg = cty.ObjectVal(m)
	case countMode:
		vs := make([]cty.Value, len(b.vals))
		for k, v := range b.vals {
			i, _ := k.Value().AsBigFloat().Int64()
			if int(i) < len(vs) {
				vs[i] = v
			}
		}
		for i := range vs {
			if vs[i] == cty.NilVal {
				vs[i] = cty.DynamicVal
			}
		}
		b.agg = cty.TupleVal(vs)
	}
	return b.agg
}

// evaluator holds every value computed so far in one walk.
type evaluator struct {
	mod  *config.Module
	cg   *configGraph
	vars map[string]cty.Value

	mu     sync.RWMutex
	locals map[string]cty.Value
	nodes  map[string]*blockValues
	res    map[string]*blockValues

	rootOnce sync.Once
	root     *hcl.EvalContext

	baseMu sync.Mutex
	bases  map[string]*blockBase

	countMu sync.Mutex
	counts  map[addrs.InstanceKey]cty.Value // countObject's, by key
}

// blockBase is a block's context shared by its instances, and how many of
// them have yet to take it: the last one drops it, so a walk does not keep
// every block's context (and the values in it) to its end.
type blockBase struct {
	ctx  *hcl.EvalContext
	left int
	// refs are the resource blocks the block references, listed once
	// (by the first instance that takes one by key).
	refsOnce sync.Once
	refs     []resourceRef
}

// resourceRef is a resource block that another references.
type resourceRef struct {
	typ, name, addr string // name: its name in typ's object (ScopeKey)
	b               *blockValues
}

func newEvaluator(mod *config.Module, cg *configGraph, vars map[string]cty.Value) *evaluator {
	return &evaluator{mod: mod, cg: cg, vars: vars, locals: map[string]cty.Value{}, nodes: map[string]*blockValues{}, res: map[string]*blockValues{}}
}

func (ev *evaluator) block(m map[string]*blockValues, key string, mode expansionMode) *blockValues {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	b := m[key]
	if b == nil || b.mode != mode {
		b = &blockValues{mode: mode}
		m[key] = b
	}
	return b
}

// rootContext is the part of every context that is the same in one walk:
// var, path and the functions (see config.RootContext), built once.
func (ev *evaluator) rootContext() *hcl.EvalContext {
	ev.rootOnce.Do(func() { ev.root = config.RootContext(ev.mod.Dir, config.MarkVariables(ev.mod, ev.vars)) })
	return ev.root
}

// scope builds the evaluation context for vertex v from the values of
// exactly what v references: a child of the walk's root context that
// holds only the locals, nodes and resources v names, so building it
// costs O(references), not O(configuration). A vertex that references
// none of them gets the root itself.
func (ev *evaluator) scope(v vertex) *hcl.EvalContext {
	root := ev.rootContext()
	refs := ev.cg.refs[v]
	if len(refs) == 0 {
		return root
	}
	// Per kind (local, node, each resource type): the names referenced
	// and their values; a kind with one block takes its cached object.
	type named struct {
		name string
		b    *blockValues
		v    cty.Value
	}
	var locals, nodes []named
	var res map[string][]named
	add := func(list []named, n named) []named {
		for _, x := range list {
			if x.name == n.name {
				return list
			}
		}
		return append(list, n)
	}
	ev.mu.RLock()
	for _, ref := range refs {
		switch subj := ref.subject.(type) {
		case addrs.LocalValue:
			if val, ok := ev.locals[subj.Name]; ok {
				locals = add(locals, named{name: subj.Name, v: val})
			}
		case addrs.NodeBlock:
			if b, ok := ev.nodes[subj.Name]; ok {
				nodes = add(nodes, named{name: subj.Name, b: b})
			}
		case addrs.Resource:
			if b, ok := ev.res[subj.String()]; ok {
				if res == nil {
					res = map[string][]named{}
				}
				res[subj.Type] = add(res[subj.Type], named{name: subj.ScopeKey(), b: b})
			}
		}
	}
	ev.mu.RUnlock()
	if locals == nil && nodes == nil && res == nil {
		return root
	}
	object := func(list []named) cty.Value {
		if len(list) == 1 && list[0].b != nil {
			return list[0].b.valueAlone(list[0].name)
		}
		m := make(map[string]cty.Value, len(list))
		for _, n := range list {
			if n.b != nil {
				m[n.name] = n.b.value()
			} else {
				m[n.name] = n.v
			}
		}
		return cty.ObjectVal(m)
	}
	vars := make(map[string]cty.Value, 2+len(res))
	if locals != nil {
		vars["local"] = object(locals)
	}
	if nodes != nil {
		vars["node"] = object(nodes)
	}
	for typ, list := range res {
		vars[typ] = object(list)
	}
	// Functions too, not only through the parent: code that builds a
	// context of its own from this one (a module input's validation)
	// takes ctx.Functions.
	child := root.NewChild()
	child.Variables, child.Functions = vars, root.Functions
	return child
}

// instanceScope adds each/count for one instance.
func instanceScope(base *hcl.EvalContext, exp *config.Expansion, k addrs.InstanceKey) *hcl.EvalContext {
	return instanceScopeWith(base, exp, k, countObject)
}

// instanceScopeWith is instanceScope with count's object made by count.
func instanceScopeWith(base *hcl.EvalContext, exp *config.Expansion, k addrs.InstanceKey, count func(addrs.InstanceKey) cty.Value) *hcl.EvalContext {
	if k == addrs.NoKey || k == nil {
		return base
	}
	child := base.NewChild()
	child.Variables, child.Functions = map[string]cty.Value{}, base.Functions
	if ev, ok := exp.Each[k]; ok {
		child.Variables["each"] = cty.ObjectVal(map[string]cty.Value{"key": ev.Key, "value": ev.Value})
	} else {
		child.Variables["count"] = count(k)
	}
	return child
}

// countObject is count's object for instance key k: {index = k}.
func countObject(k addrs.InstanceKey) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"index": k.Value()})
}

// instanceScope is instanceScope with count's object of each key built
// once per walk: it is the same in every counted block.
func (ev *evaluator) instanceScope(base *hcl.EvalContext, exp *config.Expansion, k addrs.InstanceKey) *hcl.EvalContext {
	return instanceScopeWith(base, exp, k, ev.countObject)
}

func (ev *evaluator) countObject(k addrs.InstanceKey) cty.Value {
	ev.countMu.Lock()
	defer ev.countMu.Unlock()
	v, ok := ev.counts[k]
	if !ok {
		if ev.counts == nil {
			ev.counts = map[addrs.InstanceKey]cty.Value{}
		}
		v = countObject(k)
		ev.counts[k] = v
	}
	return v
}

func modeOf(forEach, count hcl.Expression) expansionMode {
	switch {
	case forEach != nil:
		return forEachMode
	case count != nil:
		return countMode
	}
	return singleMode
}

// evalLocal evaluates one local value.
func (ev *evaluator) evalLocal(name string) hcl.Diagnostics {
	l := ev.mod.Locals[name]
	val, diags := l.Expr.Value(ev.scope(localV(name)))
	ev.mu.Lock()
	ev.locals[name] = val
	ev.mu.Unlock()
	return diags
}

// evalNode expands a node block and decodes each instance's connection.
func (ev *evaluator) evalNode(name string) hcl.Diagnostics {
	n := ev.mod.Nodes[name]
	base := ev.scope(nodeV(name))
	exp, diags := config.Expand(n.ForEach, n.Count, base)
	if diags.HasErrors() {
		return diags
	}
	b := ev.block(ev.nodes, name, modeOf(n.ForEach, n.Count))
	for _, k := range exp.Keys {
		nc, d := config.DecodeNode(n.Config, n.Scope.BodyContext(n.Config, ev.instanceScope(base, exp, k)))
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		b.set(k, config.NodeValue(addrs.NodeBlock{Name: name}.Instance(k).String(), nc))
	}
	return diags
}

// evalOutput evaluates one output.
func (ev *evaluator) evalOutput(name string) (cty.Value, hcl.Diagnostics) {
	o := ev.mod.Outputs[name]
	v, diags := o.Expr.Value(ev.scope(outputV(name)))
	if config.HasSensitive(v) && !o.Sensitive {
		rng := o.Expr.Range()
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Output refers to sensitive values",
			Detail:  "The value of output \"" + name + "\" is sensitive: it comes from a sensitive variable or sensitive(), directly or through a resource attribute set from one, or from an attribute its provider marks sensitive. Outputs are printed after apply, so one that holds sensitive data must say so: add sensitive = true to the output block (or wrap the value in nonsensitive() if it is safe to show).",
			Subject: &rng})
	}
	v, _ = v.UnmarkDeep()
	return v, diags
}

// resourceValues is the value holder of resource block key, made by
// expandStatic or expandResource.
func (ev *evaluator) resourceValues(key string) *blockValues {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	return ev.res[key]
}

// instanceContext is the evaluation context of one instance vertex: the
// block's context (built once) plus each/count and, for the blocks it
// takes by key, just the instance with its own key.
func (ev *evaluator) instanceContext(iv *instanceVertex) *hcl.EvalContext {
	base, shared := ev.blockContext(iv.block)
	ctx := ev.instanceScope(base, ev.cg.expansions[iv.block], iv.key)
	if len(iv.sameKeyDeps) == 0 {
		return ctx
	}
	if ctx == base {
		ctx = base.NewChild()
		ctx.Variables, ctx.Functions = map[string]cty.Value{}, base.Functions
	}
	var refs []resourceRef
	if shared != nil {
		shared.refsOnce.Do(func() { shared.refs = ev.resourceRefs(iv.block) })
		refs = shared.refs
	} else {
		refs = ev.resourceRefs(iv.block)
	}
	sameKeyResources(iv, refs, ctx.Variables)
	return ctx
}

// resourceRefs lists the resource blocks block references that have
// values (every one the walk has reached before block's instances).
func (ev *evaluator) resourceRefs(block string) []resourceRef {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	var out []resourceRef
	for _, ref := range ev.cg.refs[resourceV(block)] {
		subj, ok := ref.subject.(addrs.Resource)
		if !ok {
			continue
		}
		addr := subj.String()
		if b := ev.res[addr]; b != nil {
			out = append(out, resourceRef{typ: subj.Type, name: subj.ScopeKey(), addr: addr, b: b})
		}
	}
	return out
}

// sameKeyResources sets vars[TYPE], for each resource type that iv takes
// some block of by its own key, to the object of every block of that type
// iv references (refs): a same-key block holds only iv's key's instance,
// the others are whole. By type, not by address prefix: a module's
// resource is MODULE.TYPE.NAME. Each object's names go straight into the
// map cty.ObjectVal takes: a map of them per type first cost two more
// allocations per instance.
func sameKeyResources(iv *instanceVertex, refs []resourceRef, vars map[string]cty.Value) {
	for i, r := range refs {
		if !containsString(iv.sameKeyDeps, r.addr) || sameKeyTypeBefore(iv, refs[:i], r.typ) {
			continue
		}
		n := 0
		for _, o := range refs {
			if o.typ == r.typ {
				n++
			}
		}
		names := make(map[string]cty.Value, n)
		for _, o := range refs {
			if o.typ != r.typ {
				continue
			}
			if !containsString(iv.sameKeyDeps, o.addr) {
				names[o.name] = o.b.value()
				continue
			}
			o.b.mu.Lock()
			v, ok := o.b.getLocked(iv.key)
			o.b.mu.Unlock()
			if !ok {
				v = cty.DynamicVal
			}
			names[o.name] = cty.ObjectVal(map[string]cty.Value{keyText(iv.key): v})
		}
		vars[r.typ] = cty.ObjectVal(names)
	}
}

// sameKeyTypeBefore reports whether refs hold a same-key block of typ: its
// type's object is made already.
func sameKeyTypeBefore(iv *instanceVertex, refs []resourceRef, typ string) bool {
	for _, r := range refs {
		if r.typ == typ && containsString(iv.sameKeyDeps, r.addr) {
			return true
		}
	}
	return false
}

func keyText(k addrs.InstanceKey) string {
	switch k := k.(type) {
	case addrs.StringKey:
		return string(k)
	case addrs.IntKey:
		return strconv.Itoa(int(k))
	}
	return ""
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// blockContext is a block's evaluation context: every instance of the
// block shares it (the blocks it uses whole are complete by then). A block
// of one instance builds it for that instance alone; one of more builds it
// once, with what else its instances share (the blockBase), and drops it
// when its last instance has taken it.
func (ev *evaluator) blockContext(block string) (*hcl.EvalContext, *blockBase) {
	n := 1
	if exp := ev.cg.expansions[block]; exp != nil {
		n = len(exp.Keys)
	}
	if n <= 1 {
		return ev.scope(resourceV(block)), nil
	}
	ev.baseMu.Lock()
	defer ev.baseMu.Unlock()
	if ev.bases == nil {
		ev.bases = map[string]*blockBase{}
	}
	b := ev.bases[block]
	if b == nil {
		b = &blockBase{ctx: ev.scope(resourceV(block)), left: n}
		ev.bases[block] = b
	}
	if b.left--; b.left <= 0 {
		delete(ev.bases, block)
	}
	return b.ctx, b
}

// nodeInstances returns every node instance evaluated so far, by name.
func (ev *evaluator) nodeInstances() map[string]sdk.Node {
	out := map[string]sdk.Node{}
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	for _, b := range ev.nodes {
		b.mu.Lock()
		b.eachLocked(func(v cty.Value) {
			if n, err := nodeFromValue(v); err == nil && n.Name != "" {
				out[n.Name] = n
			}
		})
		b.mu.Unlock()
	}
	return out
}
