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
		ri, d := ev.decodeInstance(r, dec, addr, k, instanceScope(base, exp, k))
		diags = append(diags, d...)
		if ri != nil {
			out = append(out, ri)
		}
	}
	return out, b, diags
}

// decoder is the decoder of r's body against its type's schema.
func (ev *evaluator) decoder(r *config.Resource) *config.ResourceDecoder {
	return config.NewResourceDecoder(r.Config, ev.cg.schemas[r.Addr.Type].Block)
}

// decodeInstance evaluates one instance's node and configuration in ictx.
func (ev *evaluator) decodeInstance(r *config.Resource, dec *config.ResourceDecoder, addr string, k addrs.InstanceKey, ictx *hcl.EvalContext) (*configInstance, hcl.Diagnostics) {
	nv, diags := r.NodeExpr.Value(ictx)
	if diags.HasErrors() {
		return nil, diags
	}
	if config.HasMarks(nv) { // UnmarkDeep rebuilds the node's whole object
		nv, _ = nv.UnmarkDeep()
	}
	node, err := nodeFromValue(nv)
	if err != nil {
		rng := r.NodeExpr.Range()
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node",
			Detail: err.Error() + " The node argument takes a node block, e.g. node = node.spark or node = node.spark[each.key].", Subject: &rng})
	}
	cfg, sens, d := dec.Decode(r.Scope.BodyContext(r.Config, ictx))
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	return &configInstance{Addr: addr, Key: k, Node: node, Config: cfg, SensitiveAttrs: sens}, diags
}

// evalInstance evaluates one instance vertex's node and configuration.
func (ev *evaluator) evalInstance(iv *instanceVertex) (*configInstance, hcl.Diagnostics) {
	ctx, dec := ev.instanceContext(iv)
	return ev.decodeInstance(ev.mod.Resources[iv.block], dec, iv.addr, iv.key, ctx)
}
