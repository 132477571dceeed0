// This file builds the graph a plan or apply walks from the configuration
// graph. Resource blocks whose instance keys are known before the walk
// (expandStatic) are walked instance by instance: each instance is a vertex
// of its own, and one that indexes another block by its own key
// (node.x[each.key], kit[each.key].path) waits only for that instance. So a
// failure on one node stops what depends on it on that node, and the other
// node's stack goes on. The block's own vertex then only gathers its
// instances, for the blocks that use it whole.

package engine

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
)

// walkGraph is the graph one walk runs.
type walkGraph struct {
	*vgraph
	// instances holds every instance vertex's block and key, by address.
	// The one instance of a static block without for_each or count has
	// no vertex of its own: the block's vertex (same address) walks it.
	instances map[string]*instanceVertex
}

// instanceVertex is one resource instance walked as a vertex of its own.
type instanceVertex struct {
	block string
	key   addrs.InstanceKey
	addr  string
	// sameKeyDeps are the blocks this instance takes one instance of (by
	// its own key) rather than whole.
	sameKeyDeps []string
}

// sameKeyReferences finds the resources r references only through its
// own key: every mention of A in r's block is A[each.key] (for_each) or
// A[count.index] (count).
func sameKeyReferences(r *config.Resource) map[string]bool {
	if r.ForEach == nil && r.Count == nil {
		return nil
	}
	body, ok := r.Body().(*hclsyntax.Body)
	if !ok {
		return nil
	}
	keyRoot, keyAttr := "each", "key"
	if r.Count != nil {
		keyRoot, keyAttr = "count", "index"
	}
	total := map[string]int{}
	same := map[string]int{}
	isOwnKey := func(e hclsyntax.Expression) bool {
		st, ok := e.(*hclsyntax.ScopeTraversalExpr)
		if !ok || len(st.Traversal) != 2 {
			return false
		}
		root, ok1 := st.Traversal[0].(hcl.TraverseRoot)
		attr, ok2 := st.Traversal[1].(hcl.TraverseAttr)
		return ok1 && ok2 && root.Name == keyRoot && attr.Name == keyAttr
	}
	hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		switch n := n.(type) {
		case *hclsyntax.ScopeTraversalExpr:
			if a, ok := traversalResource(r.Scope.FlatTraversal(n.Traversal)); ok {
				total[a]++
			}
		case *hclsyntax.IndexExpr:
			if st, ok := n.Collection.(*hclsyntax.ScopeTraversalExpr); ok && len(st.Traversal) == 2 && isOwnKey(n.Key) {
				if a, ok := traversalResource(r.Scope.FlatTraversal(st.Traversal)); ok {
					same[a]++
				}
			}
		}
		return nil
	})
	out := map[string]bool{}
	for a, n := range total {
		if n > 0 && same[a] == n && a != r.Addr.String() {
			out[a] = true
		}
	}
	return out
}

// traversalResource is the resource ("type.name") a traversal starts with.
func traversalResource(t hcl.Traversal) (string, bool) {
	if len(t) < 2 {
		return "", false
	}
	root, ok := t[0].(hcl.TraverseRoot)
	if !ok || addrs.ReservedRoot(root.Name) {
		return "", false
	}
	// A resource of a module instance, flattened: TYPE["MODULE.NAME"].
	if _, ok := t[1].(hcl.TraverseIndex); ok {
		if ref, d := addrs.ParseRef(t[:2]); !d.HasErrors() {
			if r, ok := ref.Subject.(addrs.Resource); ok && r.Module != "" {
				return r.String(), true
			}
		}
		return "", false
	}
	attr, ok := t[1].(hcl.TraverseAttr)
	if !ok {
		return "", false
	}
	return root.Name + "." + attr.Name, true
}

// expandStatic evaluates, before the walk, the locals and nodes that
// depend on no resource, and the instance keys of every resource block
// whose for_each/count needs nothing more.
func (e *Engine) expandStatic(cg *configGraph, ev *evaluator) hcl.Diagnostics {
	cg.expansions = map[string]*config.Expansion{}
	return evalStatic(cg, ev, func(v vertex, blocked map[vertex]bool) hcl.Diagnostics {
		return e.expandStaticResource(cg, ev, v, blocked)
	})
}

// evalStatic evaluates, before the walk, the locals and nodes that depend
// on no resource, and calls resource (when not nil) for each resource
// block in dependency order.
func evalStatic(cg *configGraph, ev *evaluator, resource func(v vertex, blocked map[vertex]bool) hcl.Diagnostics) hcl.Diagnostics {
	order, err := cg.g.topoOrder()
	if err != nil {
		return nil // the walk reports the cycle
	}
	blocked := map[vertex]bool{}
	var diags hcl.Diagnostics
	for _, v := range order {
		for _, d := range cg.g.dependsOn(v) {
			if blocked[d] {
				blocked[v] = true
			}
		}
		switch v.kind {
		case localVertex:
			if !blocked[v] && ev.evalLocal(v.addr).HasErrors() {
				blocked[v] = true // the walk reports it
			}
		case nodeVertex:
			if !blocked[v] && ev.evalNode(v.addr).HasErrors() {
				blocked[v] = true
			}
		case resourceVertex:
			if resource != nil {
				diags = append(diags, resource(v, blocked)...)
			}
			blocked[v] = true // resources have no value before the walk
		}
	}
	return diags
}

// expandStaticResource records the instance keys of resource block v when
// its for_each/count references nothing blocked and no resource.
func (e *Engine) expandStaticResource(cg *configGraph, ev *evaluator, v vertex, blocked map[vertex]bool) hcl.Diagnostics {
	r := e.module.Resources[v.addr]
	refs, _ := addrs.References(config.ExprReferences(nonNil(r.ForEach, r.Count)...))
	for _, ref := range refs {
		if dep, ok := refVertex(ref); ok && (blocked[dep] || dep.kind == resourceVertex) {
			return nil
		}
	}
	var ctx *hcl.EvalContext
	if r.ForEach != nil || r.Count != nil {
		// A block without either has its one instance: no context.
		ctx = ev.scope(v)
	}
	exp, diags := config.Expand(r.ForEach, r.Count, ctx)
	if diags.HasErrors() {
		return diags
	}
	cg.expansions[v.addr] = exp
	ev.block(ev.res, v.addr, modeOf(r.ForEach, r.Count))
	return nil
}

// walkGraph is the graph a plan or apply walks: the config graph, limited
// to what keep and keepInstance accept, with each statically expanded
// resource block split into instance vertices.
func (cg *configGraph) walkGraph(m *config.Module, keep func(vertex) bool, keepInstance func(string) bool) *walkGraph {
	// kept holds each kept instance's address, by block and key.
	kept := map[string]map[addrs.InstanceKey]string{}
	n := cg.g.g.Len()
	for block, exp := range cg.expansions {
		if !keep(resourceV(block)) {
			continue
		}
		ks := make(map[addrs.InstanceKey]string, len(exp.Keys))
		r := m.Resources[block]
		for _, k := range exp.Keys {
			if addr := r.Addr.Instance(k).String(); keepInstance(addr) {
				ks[k] = addr
			}
		}
		kept[block] = ks
		n += len(ks)
	}
	wg := &walkGraph{vgraph: newVGraphSized(n), instances: make(map[string]*instanceVertex, n-cg.g.g.Len())}
	for _, v := range cg.g.vertices() {
		if !keep(v) {
			continue
		}
		wg.add(v)
		deps := cg.g.dependsOn(v)
		if _, static := cg.expansions[v.addr]; !static || v.kind != resourceVertex {
			for _, d := range deps {
				if !keep(d) {
					continue
				}
				if keys := cg.literalKeys(v, d, kept); keys != nil {
					// A local that takes only named instances of a
					// block walked instance by instance (a module input
					// such as kit[each.key] of its instance) waits for
					// just those, so a failure elsewhere in the block
					// holds back only what uses the failed instance.
					for _, k := range keys {
						wg.connect(v, instanceV(m.Resources[d.addr].Addr.Instance(k).String()))
					}
					continue
				}
				wg.connect(v, d)
			}
			continue
		}
		cg.addInstanceVertices(wg, v, keep, kept)
	}
	return wg
}

// literalKeys returns the instance keys local v takes of resource block d
// when every reference of v to d names one instance by a literal key that
// the walk has as a vertex; nil otherwise (v takes d whole).
func (cg *configGraph) literalKeys(v, d vertex, kept map[string]map[addrs.InstanceKey]string) []addrs.InstanceKey {
	if v.kind != localVertex || d.kind != resourceVertex || kept[d.addr] == nil {
		return nil
	}
	var keys []addrs.InstanceKey
	seen := map[addrs.InstanceKey]bool{}
	for _, ref := range cg.refs[v] {
		r, ok := ref.subject.(addrs.Resource)
		if !ok || r.String() != d.addr {
			continue
		}
		if _, ok := kept[d.addr][ref.key]; ref.key == nil || !ok {
			return nil
		}
		if !seen[ref.key] {
			seen[ref.key] = true
			keys = append(keys, ref.key)
		}
	}
	return keys
}

// addInstanceVertices adds the kept instances of static block v: each
// depends on the same-key instance of a block it takes by key, and on the
// other blocks whole; v depends on all of them.
func (cg *configGraph) addInstanceVertices(wg *walkGraph, v vertex, keep func(vertex) bool, kept map[string]map[addrs.InstanceKey]string) {
	deps := cg.g.dependsOn(v)
	if keys := cg.expansions[v.addr].Keys; len(keys) == 1 && keys[0] == addrs.NoKey {
		// A block of one unkeyed instance: its own vertex is the
		// instance's (same address), one vertex instead of two.
		if addr, ok := kept[v.addr][addrs.NoKey]; ok { // addr == v.addr
			wg.instances[addr] = &instanceVertex{block: v.addr, key: addrs.NoKey, addr: addr}
		}
		for _, d := range deps {
			if keep(d) {
				wg.connect(v, d)
			}
		}
		return
	}
	for _, k := range cg.expansions[v.addr].Keys {
		addr, ok := kept[v.addr][k]
		if !ok {
			continue
		}
		iv := &instanceVertex{block: v.addr, key: k, addr: addr}
		wg.instances[iv.addr] = iv
		// The instance's vertex name is built once for all its edges.
		ivName := wg.addNamed(instanceV(iv.addr))
		wg.g.Connect(wg.addNamed(v), ivName)
		for _, d := range deps {
			if !keep(d) {
				continue
			}
			if dk, ok := kept[d.addr][k]; ok && d.kind == resourceVertex && cg.sameKeyDeps[v.addr][d.addr] {
				wg.g.Connect(ivName, wg.addNamed(instanceV(dk)))
				iv.sameKeyDeps = append(iv.sameKeyDeps, d.addr)
				continue
			}
			wg.g.Connect(ivName, wg.addNamed(d))
		}
	}
}
