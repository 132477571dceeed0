// This file holds Engine.Import: bring an existing object under
// management at an address, reading it by id on the node the
// configuration gives that instance.

package engine

import (
	"context"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Import brings an existing object under management at addr: the provider
// reads it by id on the node the configuration gives that instance, and
// the result is stored. Nothing on the node changes. Dependencies are
// evaluated from state, without provider calls.
func (e *Engine) Import(ctx context.Context, addr, id string, vars map[string]cty.Value) hcl.Diagnostics {
	ri, d := addrs.ParseResourceInstance(addr)
	if d.HasErrors() {
		return d
	}
	key := ri.Resource.String()
	r, ok := e.module.Resources[key]
	if !ok {
		return hcl.Diagnostics{errDiag("Resource not in configuration",
			fmt.Sprintf("Before importing %s, add a resource block for %s to the configuration: import needs it to know the node.", addr, key))}
	}
	objs, diags := e.loadState()
	if diags.HasErrors() {
		return diags
	}
	if _, ok := objs[addr]; ok {
		return hcl.Diagnostics{errDiag("Resource already managed",
			fmt.Sprintf("%s is already in state. Remove it first with `sparkform state rm %s` if you mean to import another object there.", addr, addr))}
	}
	cg, found, d := e.importTarget(ctx, key, addr, objs, vars)
	if diags = append(diags, d...); d.HasErrors() {
		return diags
	}
	prov, d := e.provider(ctx, sdk.ProviderNameOf(r.Addr.Type))
	if diags = append(diags, d...); d.HasErrors() {
		return diags
	}
	resp := prov.ImportResource(ctx, sdk.ImportRequest{TypeName: r.Addr.Type, Node: found.Node, ID: id})
	rng := r.DeclRange
	diags = append(diags, sdkDiags(resp.Diagnostics, addr, r.Body, &rng)...)
	if resp.Diagnostics.HasErrors() {
		return diags
	}
	if resp.State == cty.NilVal || resp.State.IsNull() {
		return append(diags, errDiag("Cannot import non-existent object",
			fmt.Sprintf("Provider %s found no object with id %q on %s.", sdk.ProviderNameOf(r.Addr.Type), id, nodeLabel(found.Node))))
	}
	in := &stateObject{Addr: addr, Resource: key, Type: r.Addr.Type, Provider: sdk.ProviderNameOf(r.Addr.Type), Node: found.Node,
		Value: unknownAsNull(resp.State), Private: resp.Private, Dependencies: cg.resourceDeps[key], SchemaVersion: cg.schemas[r.Addr.Type].Version,
		SensitiveAttrs: instanceSensitive(cg.schemas[r.Addr.Type].Block, found.SensitiveAttrs)}
	if err := e.putObject(in); err != nil {
		return append(diags, tfdiags.FromError("Cannot store "+addr, err, ""))
	}
	return diags
}

// importTarget evaluates the configuration of instance addr of block key,
// with every resource it depends on taken from state (no provider calls).
func (e *Engine) importTarget(ctx context.Context, key, addr string, objs map[string]*stateObject, vars map[string]cty.Value) (*configGraph, *configInstance, hcl.Diagnostics) {
	cg, diags := e.buildConfigGraph(ctx)
	if diags.HasErrors() {
		return nil, nil, diags
	}
	filter := &targetFilter{blocks: map[vertex]bool{}, instances: map[string]bool{addr: true}, whole: map[string]bool{}}
	filter.expand(cg)
	ev := newEvaluator(e.module, cg, vars)
	var found *configInstance
	fromState := func(_ context.Context, k string) hcl.Diagnostics {
		cis, b, d := ev.expandResource(k, nil)
		if d.HasErrors() {
			return d
		}
		schema := cg.schemas[e.module.Resources[k].Addr.Type]
		for _, ci := range cis {
			if k == key && ci.Addr == addr {
				found = ci
			}
			b.set(ci.Key, MarkSensitive(valueFromState(objs[ci.Addr], schema), instanceSensitive(schema.Block, ci.SensitiveAttrs)))
		}
		return d
	}
	g := &walkGraph{vgraph: cg.g.subgraph(func(v vertex) bool { return filter.vertex(v) && v.kind != outputVertex })}
	diags = append(diags, e.walk(ctx, g, ev, walkFuncs{resource: fromState})...)
	if diags.HasErrors() {
		return nil, nil, diags
	}
	if found == nil {
		return nil, nil, append(diags, errDiag("No such instance", fmt.Sprintf("The configuration does not produce %s (check its for_each/count keys).", addr)))
	}
	return cg, found, diags
}
