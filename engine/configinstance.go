// This file holds the configuration's side of a resource instance: a
// resource block expanded into instances, each decoded (node and
// configuration) in its evaluation context.

package engine

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
		ri, d := ev.decodeInstance(r, dec, addr, k, ev.instanceScope(base, exp, k))
		diags = append(diags, d...)
		if ri != nil {
			out = append(out, ri)
		}
	}
	return out, b, diags
}

// decoder is the decoder of r's body against its type's schema.
func (ev *evaluator) decoder(r *config.Resource) *config.ResourceDecoder {
	return ev.cg.decoders.Get(r.Body(), ev.cg.schemas[r.Addr.Type].Block)
}

// decodeInstance evaluates one instance's node and configuration in ictx.
func (ev *evaluator) decodeInstance(r *config.Resource, dec *config.ResourceDecoder, addr string, k addrs.InstanceKey, ictx *hcl.EvalContext) (*configInstance, hcl.Diagnostics) {
	node, diags := ev.instanceNode(r, ictx)
	if diags.HasErrors() {
		return nil, diags
	}
	cfg, sens, d := dec.Decode(r.Scope.BodyContext(r.Body(), ictx))
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
func (ev *evaluator) instanceNode(r *config.Resource, ictx *hcl.EvalContext) (sdk.Node, hcl.Diagnostics) {
	var node sdk.Node
	var err error
	var diags hcl.Diagnostics
	var b *blockValues
	name, ok := r.NodeBlock, r.NodeBlock != "" // a module's: the flattener saw through its names
	if !ok && r.Scope == nil {
		name, ok = nodeRefName(r.NodeExpr)
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
		if nv, diags = r.NodeExpr.Value(ictx); diags.HasErrors() {
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

// nodeRefName is NAME when e is exactly node.NAME.
func nodeRefName(e hcl.Expression) (string, bool) {
	st, ok := e.(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(st.Traversal) != 2 || st.Traversal.RootName() != "node" {
		return "", false
	}
	attr, ok := st.Traversal[1].(hcl.TraverseAttr)
	return attr.Name, ok
}

// nodeOf reads a node argument's value as a node.
func nodeOf(v cty.Value) (sdk.Node, error) {
	if sdk.HasMarks(v) { // UnmarkDeep rebuilds the node's whole object
		v, _ = v.UnmarkDeep()
	}
	return nodeFromValue(v)
}

// evalInstance evaluates one instance vertex's node and configuration.
func (ev *evaluator) evalInstance(iv *instanceVertex) (*configInstance, hcl.Diagnostics) {
	r := ev.mod.Resources[iv.block]
	return ev.decodeInstance(r, ev.decoder(r), iv.addr, iv.key, ev.instanceContext(iv))
}
