// This file holds the configuration's side of a resource instance: a
// resource block expanded into instances, each decoded (node and
// configuration) in its evaluation context.

package engine

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// configInstance is one resource instance as the configuration gives it:
// its address and key, the node it lives on and its evaluated
// configuration, ready for planning or applying. (The state's side of an
// instance is a stateObject; its walk vertex an instanceVertex.)
type configInstance struct {
	Addr   string
	Key    addrs.InstanceKey
	Node   sdk.Node
	Config cty.Value
	// SensitiveAttrs are the attributes whose value came from sensitive().
	SensitiveAttrs []string
}

// expandResource evaluates a resource block's instances: keys, node and
// configuration value of each.
func (ev *evaluator) expandResource(key string, keep func(addr string) bool) ([]*configInstance, *blockValues, hcl.Diagnostics) {
	r := ev.mod.Resources[key]
	base := ev.scope(resourceV(key))
	exp, diags := config.Expand(r.ForEach, r.Count, base)
	if diags.HasErrors() {
		return nil, nil, diags
	}
	b := ev.block(ev.res, key, modeOf(r.ForEach, r.Count))
	dec := ev.decoder(r)
	out := make([]*configInstance, 0, len(exp.Keys))
	for _, k := range exp.Keys {
		addr := r.Addr.Instance(k).String()
		if keep != nil && !keep(addr) {
			continue
		}
		ri, d := ev.decodeInstance(r, dec, addr, k, &instanceEval{ctx: ev.instanceScope(base, exp, k)})
		diags = append(diags, d...)
		if ri != nil {
			out = append(out, ri)
		}
	}
	return out, b, diags
}

// decoder is the decoder of r's body against its type's schema.
func (ev *evaluator) decoder(r *config.Resource) *config.ResourceDecoder {
	return ev.cg.decoderOf(r)
}

// decoderOf is the decoder of r's body against its type's schema: the one
// r kept when it let its body go (releaseRootBodies), or the one
// made once per body.
func (cg *configGraph) decoderOf(r *config.Resource) *config.ResourceDecoder {
	b := cg.schemas[r.Addr.Type].Block
	if d := r.KeptDecoder(b); d != nil {
		return d
	}
	return cg.decoders.Get(r.Body(), b)
}

// instanceEval is where an instance's expressions are evaluated: in its
// context, which build makes on first use when ctx is not given, and,
// for a plain reference, through resolve when it is set
// (config.ResourceDecoder.DecodeRefs).
type instanceEval struct {
	ctx     *hcl.EvalContext
	build   func() *hcl.EvalContext
	resolve func(hcl.Traversal) (cty.Value, bool)
}

func (ie *instanceEval) context() *hcl.EvalContext {
	if ie.build != nil {
		ie.ctx, ie.build = ie.build(), nil
	}
	return ie.ctx
}

// decodeInstance evaluates one instance's node and configuration in ie.
func (ev *evaluator) decodeInstance(r *config.Resource, dec *config.ResourceDecoder, addr string, k addrs.InstanceKey, ie *instanceEval) (*configInstance, hcl.Diagnostics) {
	node, diags := ev.instanceNode(r, ie)
	if diags.HasErrors() {
		return nil, diags
	}
	cfg, sens, d := dec.DecodeRefs(ie.resolve, func() *hcl.EvalContext {
		if r.Scope == nil { // a root block's body may be let go
			return ie.context()
		}
		return r.Scope.BodyContext(r.Body(), ie.context())
	})
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	return &configInstance{Addr: addr, Key: k, Node: node, Config: cfg, SensitiveAttrs: sens}, diags
}

// instanceNode evaluates an instance's node argument in ictx. The usual
// one, node = node.NAME of a single node block (in a module, also a
// variable the caller set to one: Resource.NodeBlock), is that block's
// value for every instance: it is read as a node once
// (blockValues.asNode).
func (ev *evaluator) instanceNode(r *config.Resource, ie *instanceEval) (sdk.Node, hcl.Diagnostics) {
	var node sdk.Node
	var err error
	var diags hcl.Diagnostics
	var b *blockValues
	name, ok := r.NodeBlock, r.NodeBlock != "" // a module's: the flattener saw through its names
	if !ok && r.Scope == nil {
		name, ok = config.RefNode(r.NodeExpr)
	}
	if ok {
		ev.mu.RLock()
		b = ev.nodes[name]
		ev.mu.RUnlock()
	}
	if b != nil && b.mode == singleMode {
		node, err = b.asNode()
	} else {
		var nv cty.Value
		if nv, diags = r.NodeExpr.Value(ie.context()); diags.HasErrors() {
			return node, diags
		}
		node, err = nodeOf(nv)
	}
	if err != nil {
		rng := r.NodeExpr.Range()
		return node, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node",
			Detail: err.Error() + " The node argument takes a node block, e.g. node = node.spark or node = node.spark[each.key].", Subject: &rng})
	}
	return node, diags
}

// nodeOf reads a node argument's value as a node.
func nodeOf(v cty.Value) (sdk.Node, error) {
	if sdk.HasMarks(v) { // UnmarkDeep rebuilds the node's whole object
		v, _ = v.UnmarkDeep()
	}
	return nodeFromValue(v)
}

// evalInstance evaluates one instance vertex's node and configuration.
// A block of one instance, root or in a module instance (most blocks of a
// generated configuration), builds its context only for what is neither
// a constant nor a plain reference (resolveRef, resolveScoped).
func (ev *evaluator) evalInstance(iv *instanceVertex) (*configInstance, hcl.Diagnostics) {
	r := ev.mod.Resources[iv.block]
	if r.Count != nil || r.ForEach != nil || len(iv.sameKeyDeps) > 0 {
		return ev.decodeInstance(r, ev.decoder(r), iv.addr, iv.key, &instanceEval{ctx: ev.instanceContext(iv)})
	}
	ie := &instanceEval{build: func() *hcl.EvalContext { return ev.instanceContext(iv) }, resolve: ev.resolveRef}
	if r.Scope != nil {
		ie.resolve = func(tr hcl.Traversal) (cty.Value, bool) { return ev.resolveScoped(r.Scope, tr) }
	}
	return ev.decodeInstance(r, ev.decoder(r), iv.addr, iv.key, ie)
}

// resolveScoped is resolveRef for a block of a module instance, whose
// references are in the module's own names: the flat local or block tr
// reads (config.InstanceScope.FlatRef), then the rest of tr from its
// value, as in the context BodyContext builds.
func (ev *evaluator) resolveScoped(s *config.InstanceScope, tr hcl.Traversal) (cty.Value, bool) {
	key, local, rest, ok := s.FlatRef(tr)
	if !ok {
		return cty.NilVal, false
	}
	var v cty.Value
	if local {
		v, ok = ev.localValue(key)
	} else {
		ev.mu.RLock()
		b := ev.res[key]
		ev.mu.RUnlock()
		if ok = b != nil; ok {
			v = b.value()
		}
	}
	if !ok {
		return cty.NilVal, false
	}
	return followRest(v, rest)
}

// resolveRef is the value that tr, a root-module reference to a resource
// block or a local (TYPE.NAME or local.NAME, then any attributes and
// indexes), has in the evaluation context of an instance of a
// single-instance root block (scope): there TYPE (local) is an object
// whose attribute NAME is the block's (local's) value, so following tr
// gives what following tr[2:] from that value gives, with the same
// diagnostics. It reads the value without building the context. False
// for any other reference, a block or local with no value in this walk,
// or a traversal with diagnostics: evaluating it in the context reports
// them.
func (ev *evaluator) resolveRef(tr hcl.Traversal) (cty.Value, bool) {
	if len(tr) < 2 {
		return cty.NilVal, false
	}
	root, ok := tr[0].(hcl.TraverseRoot)
	if !ok || root.Name == "module" || (root.Name != "local" && addrs.ReservedRoot(root.Name)) {
		return cty.NilVal, false
	}
	name, ok := tr[1].(hcl.TraverseAttr)
	if !ok || cty.NormalizeString(name.Name) != name.Name {
		return cty.NilVal, false
	}
	var v cty.Value
	if root.Name == "local" {
		if v, ok = ev.localValue(name.Name); !ok {
			return cty.NilVal, false
		}
	} else {
		// The key as scope finds it (addrs.Resource.String), built
		// without a heap allocation for names up to the buffer's size.
		var buf [64]byte
		key := addrs.Resource{Type: root.Name, Name: name.Name}.AppendKey(buf[:0])
		ev.mu.RLock()
		b := ev.res[string(key)]
		ev.mu.RUnlock()
		if b == nil {
			return cty.NilVal, false
		}
		v = b.value()
	}
	return followRest(v, tr[2:])
}

// localValue is the walk's value of the (flat) local name.
func (ev *evaluator) localValue(name string) (cty.Value, bool) {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	v, ok := ev.locals[name]
	return v, ok
}

// followRest is v followed by rest, false when that has diagnostics.
func followRest(v cty.Value, rest hcl.Traversal) (cty.Value, bool) {
	v, diags := rest.TraverseRel(v)
	if len(diags) > 0 {
		return cty.NilVal, false
	}
	return v, true
}
