package engine

import (
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/graph"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Resource blocks whose instance keys are known before the walk are walked
// instance by instance: each instance is a vertex of its own, and one that
// indexes another block by its own key (node.x[each.key],
// kit[each.key].path) waits only for that instance. So a failure on one
// node stops what depends on it on that node, and the other node's stack
// goes on. The block's own vertex then only gathers its instances, for the
// blocks that use it whole.

// instanceVertexName is the walk vertex of one resource instance.
func instanceVertexName(addr string) string { return "instance " + addr }

// instanceVertex is one resource instance in the walk.
type instanceVertex struct {
	Block string
	Key   addrs.InstanceKey
	Addr  string
	// Precise are the blocks this instance takes one instance of (by its
	// own key) rather than whole.
	Precise []string
}

// sameKeyReferences finds the resources r references only through its
// own key: every mention of A in r's block is A[each.key] (for_each) or
// A[count.index] (count).
func sameKeyReferences(r *config.Resource) map[string]bool {
	body, ok := r.Config.(*hclsyntax.Body)
	if !ok || (r.ForEach == nil && r.Count == nil) {
		return nil
	}
	keyRoot, keyAttr := "each", "key"
	if r.Count != nil {
		keyRoot, keyAttr = "count", "index"
	}
	total := map[string]int{}
	same := map[string]int{}
	resourceOf := func(t hcl.Traversal) (string, bool) {
		if len(t) < 2 {
			return "", false
		}
		root, ok1 := t[0].(hcl.TraverseRoot)
		if !ok1 || addrs.ReservedRoot(root.Name) {
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
		attr, ok2 := t[1].(hcl.TraverseAttr)
		if !ok2 {
			return "", false
		}
		return root.Name + "." + attr.Name, true
	}
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
			if a, ok := resourceOf(n.Traversal); ok {
				total[a]++
			}
		case *hclsyntax.IndexExpr:
			if st, ok := n.Collection.(*hclsyntax.ScopeTraversalExpr); ok && len(st.Traversal) == 2 && isOwnKey(n.Key) {
				if a, ok := resourceOf(st.Traversal); ok {
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

// expandStatic evaluates, before the walk, the locals and nodes that
// depend on no resource, and the instance keys of every resource block
// whose for_each/count needs nothing more.
func (e *Engine) expandStatic(cg *configGraph, ev *evaluator) hcl.Diagnostics {
	cg.expansions = map[string]*config.Expansion{}
	order, err := cg.g.TopoOrder()
	if err != nil {
		return nil // the walk reports the cycle
	}
	blocked := map[string]bool{}
	var diags hcl.Diagnostics
	for _, v := range order {
		for _, d := range cg.g.DependsOn(v) {
			if blocked[d] {
				blocked[v] = true
			}
		}
		switch {
		case strings.HasPrefix(v, "output."):
			continue
		case strings.HasPrefix(v, "local."):
			if !blocked[v] && ev.evalLocal(strings.TrimPrefix(v, "local.")).HasErrors() {
				blocked[v] = true // the walk reports it
			}
		case strings.HasPrefix(v, "node."):
			if !blocked[v] && ev.evalNode(strings.TrimPrefix(v, "node.")).HasErrors() {
				blocked[v] = true
			}
		default:
			r := e.Module.Resources[v]
			static := true
			refs, _ := addrs.References(config.ExprReferences(nonNil(r.ForEach, r.Count)...))
			for _, ref := range refs {
				if dep, ok := refVertex(ref); ok && (blocked[dep] || isResourceVertex(dep)) {
					static = false
				}
			}
			if static {
				exp, d := config.Expand(r.ForEach, r.Count, ev.scope(v))
				if d.HasErrors() {
					diags = append(diags, d...)
				} else {
					cg.expansions[v] = exp
					ev.block(ev.res, v, modeOf(exp, r.ForEach, r.Count))
				}
			}
			blocked[v] = true // resources have no value before the walk
		}
	}
	return diags
}

// walkGraph is the graph a plan or apply walks: the config graph with each
// statically expanded resource block split into instance vertices.
func (cg *configGraph) walkGraph(m *config.Module, keep func(string) bool, keepInstance func(string) bool) *graph.Graph {
	g := graph.New()
	cg.instances = map[string]*instanceVertex{}
	hasKey := map[string]map[addrs.InstanceKey]bool{}
	for block, exp := range cg.expansions {
		if !keep(block) {
			continue
		}
		ks := make(map[addrs.InstanceKey]bool, len(exp.Keys))
		r := m.Resources[block]
		for _, k := range exp.Keys {
			if keepInstance(r.Addr.Instance(k).String()) {
				ks[k] = true
			}
		}
		hasKey[block] = ks
	}
	for _, v := range cg.g.Vertices() {
		if !keep(v) {
			continue
		}
		g.Add(v)
		deps := cg.g.DependsOn(v)
		exp, static := cg.expansions[v]
		if !static {
			for _, d := range deps {
				if keep(d) {
					g.Connect(v, d)
				}
			}
			continue
		}
		r := m.Resources[v]
		for _, k := range exp.Keys {
			if !hasKey[v][k] {
				continue
			}
			addr := r.Addr.Instance(k).String()
			iv := &instanceVertex{Block: v, Key: k, Addr: addr}
			name := instanceVertexName(addr)
			cg.instances[name] = iv
			g.Connect(v, name)
			for _, d := range deps {
				if !keep(d) {
					continue
				}
				if cg.precise[v][d] && hasKey[d][k] {
					dr := m.Resources[d]
					g.Connect(name, instanceVertexName(dr.Addr.Instance(k).String()))
					iv.Precise = append(iv.Precise, d)
					continue
				}
				g.Connect(name, d)
			}
		}
	}
	return g
}

// instanceContext is the evaluation context of one instance vertex: the
// block's context (built once) plus each/count and, for the blocks it
// takes by key, just the instance with its own key.
func (ev *evaluator) instanceContext(iv *instanceVertex) *hcl.EvalContext {
	base := ev.blockContext(iv.Block)
	exp := ev.cg.expansions[iv.Block]
	ctx := instanceScope(base, exp, iv.Key)
	if len(iv.Precise) == 0 {
		return ctx
	}
	if ctx == base {
		ctx = base.NewChild()
		ctx.Variables = map[string]cty.Value{}
	}
	byType := map[string]map[string]cty.Value{}
	preciseTypes := map[string]bool{}
	ev.mu.RLock()
	for _, ref := range ev.cg.refs[iv.Block] {
		subj, ok := ref.Subject.(addrs.Resource)
		if !ok {
			continue
		}
		b := ev.res[subj.String()]
		if b == nil {
			continue
		}
		if byType[subj.Type] == nil {
			byType[subj.Type] = map[string]cty.Value{}
		}
		if containsString(iv.Precise, subj.String()) {
			// By type, not by address prefix: a module's resource is
			// MODULE.TYPE.NAME.
			preciseTypes[subj.Type] = true
			b.mu.Lock()
			v, ok := b.vals[iv.Key]
			b.mu.Unlock()
			if !ok {
				v = cty.DynamicVal
			}
			byType[subj.Type][subj.ScopeKey()] = cty.ObjectVal(map[string]cty.Value{keyText(iv.Key): v})
		} else {
			byType[subj.Type][subj.ScopeKey()] = b.value()
		}
	}
	ev.mu.RUnlock()
	for typ, names := range byType {
		if preciseTypes[typ] {
			ctx.Variables[typ] = cty.ObjectVal(names)
		}
	}
	return ctx
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

// blockContext builds a block's evaluation context once: every instance
// of the block shares it (the blocks it uses whole are complete by then).
func (ev *evaluator) blockContext(block string) *hcl.EvalContext {
	ev.baseMu.Lock()
	defer ev.baseMu.Unlock()
	if ev.bases == nil {
		ev.bases = map[string]*hcl.EvalContext{}
	}
	if c, ok := ev.bases[block]; ok {
		return c
	}
	c := ev.scope(block)
	ev.bases[block] = c
	return c
}

// evalInstance evaluates one instance vertex's node and configuration.
func (ev *evaluator) evalInstance(iv *instanceVertex) (*resourceInstance, hcl.Diagnostics) {
	r := ev.mod.Resources[iv.Block]
	return ev.decodeInstance(r, iv.Addr, iv.Key, ev.instanceContext(iv))
}

// nodeInstances returns every node instance evaluated so far, by name.
func (ev *evaluator) nodeInstances() map[string]sdk.Node {
	out := map[string]sdk.Node{}
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	for _, b := range ev.nodes {
		b.mu.Lock()
		for _, v := range b.vals {
			if n, err := nodeFromValue(v); err == nil && n.Name != "" {
				out[n.Name] = n
			}
		}
		b.mu.Unlock()
	}
	return out
}
