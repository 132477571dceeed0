// This file holds the configuration's side of a resource instance: a
// resource block expanded into instances, each decoded (node and
// configuration) in its evaluation context.

package engine

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

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
	out := make([]*configInstance, 0, len(exp.Keys))
	for _, k := range exp.Keys {
		addr := r.Addr.Instance(k).String()
		if keep != nil && !keep(addr) {
			continue
		}
		ri, d := ev.decodeInstance(r, addr, k, instanceScope(base, exp, k))
		diags = append(diags, d...)
		if ri != nil {
			out = append(out, ri)
		}
	}
	return out, b, diags
}

// decodeInstance evaluates one instance's node and configuration in ictx.
func (ev *evaluator) decodeInstance(r *config.Resource, addr string, k addrs.InstanceKey, ictx *hcl.EvalContext) (*configInstance, hcl.Diagnostics) {
	schema := ev.cg.schemas[r.Addr.Type]
	nv, diags := r.NodeExpr.Value(ictx)
	if diags.HasErrors() {
		return nil, diags
	}
	if hasMarks(nv) { // UnmarkDeep rebuilds the node's whole object
		nv, _ = nv.UnmarkDeep()
	}
	node, err := nodeFromValue(nv)
	if err != nil {
		rng := r.NodeExpr.Range()
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node",
			Detail: err.Error() + " The node argument takes a node block, e.g. node = node.spark or node = node.spark[each.key].", Subject: &rng})
	}
	cfg, d := config.DecodeResource(r.Config, schema.Block, r.Scope.BodyContext(r.Config, ictx))
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	cfg, sens := config.TakeSensitive(cfg)
	return &configInstance{Addr: addr, Key: k, Node: node, Config: conform(cfg, ev.cg.types[r.Addr.Type]), SensitiveAttrs: sens}, diags
}

// evalInstance evaluates one instance vertex's node and configuration.
func (ev *evaluator) evalInstance(iv *instanceVertex) (*configInstance, hcl.Diagnostics) {
	r := ev.mod.Resources[iv.block]
	return ev.decodeInstance(r, iv.addr, iv.key, ev.instanceContext(iv))
}

// conform makes v an object with exactly the block's attributes (computed
// attributes the decoder left out become null), converted to their types;
// ty is the block's implied type.
func conform(v cty.Value, ty cty.Type) cty.Value {
	if v.IsNull() || !v.IsKnown() {
		return v
	}
	vals := make(map[string]cty.Value, len(ty.AttributeTypes()))
	for name, aty := range ty.AttributeTypes() {
		var av cty.Value
		if v.Type().IsObjectType() && v.Type().HasAttribute(name) {
			av = v.GetAttr(name)
		} else {
			av = cty.NullVal(aty)
		}
		if cv, err := convert.Convert(av, aty); err == nil {
			av = cv
		}
		vals[name] = av
	}
	return cty.ObjectVal(vals)
}

// hasMarks says whether v or anything in it is marked (sensitive). Unlike
// cty's ContainsMarked it builds no paths, and an object's attributes are
// read in place: it runs on each instance's node value.
func hasMarks(v cty.Value) bool {
	if v.IsMarked() {
		return true
	}
	if v.IsNull() || !v.IsKnown() {
		return false
	}
	ty := v.Type()
	switch {
	case ty.IsObjectType():
		for name := range ty.AttributeTypes() {
			if hasMarks(v.GetAttr(name)) {
				return true
			}
		}
	case ty.IsCollectionType() || ty.IsTupleType():
		for it := v.ElementIterator(); it.Next(); {
			if _, e := it.Element(); hasMarks(e) {
				return true
			}
		}
	}
	return false
}
