package engine

import (
	"context"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
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
	r, ok := e.Module.Resources[key]
	if !ok {
		return hcl.Diagnostics{errDiag("Resource not in configuration",
			fmt.Sprintf("Before importing %s, add a resource block for %s to the configuration: import needs it to know the node.", addr, key))}
	}
	insts, diags := e.loadState()
	if diags.HasErrors() {
		return diags
	}
	if _, ok := insts[addr]; ok {
		return hcl.Diagnostics{errDiag("Resource already managed",
			fmt.Sprintf("%s is already in state. Remove it first with `sparkform state rm %s` if you mean to import another object there.", addr, addr))}
	}
	cg, d := e.buildConfigGraph(ctx)
	diags = append(diags, d...)
	if d.HasErrors() {
		return diags
	}
	filter := &targetFilter{blocks: map[string]bool{}, instances: map[string]bool{addr: true}, whole: map[string]bool{}}
	filter.expand(cg)
	ev := newEvaluator(e.Module, cg, vars)
	var found *resourceInstance
	fromState := func(ctx context.Context, k string) hcl.Diagnostics {
		ris, b, d := ev.expandResource(ctx, k, nil)
		if d.HasErrors() {
			return d
		}
		schema := cg.schemas[e.Module.Resources[k].Addr.Type]
		for _, x := range ris {
			if k == key && x.Addr == addr {
				found = x
			}
			if in, ok := insts[x.Addr]; ok {
				b.set(x.Key, in.Value)
			} else {
				b.set(x.Key, cty.UnknownVal(schema.Block.ImpliedType()))
			}
		}
		return d
	}
	g := cg.subgraph(func(v string) bool { return filter.vertex(v) && v[:min(len(v), 7)] != "output." })
	diags = append(diags, e.walk(ctx, g, ev, walkFuncs{resource: fromState})...)
	if diags.HasErrors() {
		return diags
	}
	if found == nil {
		return append(diags, errDiag("No such instance", fmt.Sprintf("The configuration does not produce %s (check its for_each/count keys).", addr)))
	}
	schema := cg.schemas[r.Addr.Type]
	prov, err := e.Providers.Provider(ctx, sdk.ProviderNameOf(r.Addr.Type))
	if err != nil {
		return append(diags, errDiag("Cannot start provider", err.Error()))
	}
	resp := prov.ImportResource(ctx, sdk.ImportRequest{TypeName: r.Addr.Type, Node: found.Node, ID: id})
	rng := r.DeclRange
	diags = append(diags, sdkDiags(resp.Diagnostics, addr, r.Config, &rng)...)
	if resp.Diagnostics.HasErrors() {
		return diags
	}
	if resp.State == cty.NilVal || resp.State.IsNull() {
		return append(diags, errDiag("Cannot import non-existent object",
			fmt.Sprintf("Provider %s found no object with id %q on %s.", sdk.ProviderNameOf(r.Addr.Type), id, nodeLabel(found.Node))))
	}
	in := &instance{Addr: addr, Resource: key, Type: r.Addr.Type, Provider: sdk.ProviderNameOf(r.Addr.Type), Node: found.Node,
		Value: unknownAsNull(resp.State), Private: resp.Private, Dependencies: cg.resourceDeps[key], SchemaVersion: schema.Version}
	rec, err := in.record()
	if err == nil {
		err = e.Store.PutResource(rec)
	}
	if err != nil {
		return append(diags, errDiag("Cannot store "+addr, err.Error()))
	}
	return diags
}
