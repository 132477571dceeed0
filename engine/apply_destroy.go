// This file holds apply's deletes: a destroy step per instance deleted
// (and per replacement's old half), ordered against the rest of the walk,
// and the step itself.

package engine

import (
	"context"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/providers/sdk"
)

// addDestroySteps adds a vertex per delete (and per replace's delete half)
// and orders them: an instance is deleted only after everything that
// depends on it; delete-then-create deletes before its resource is created
// again; create-then-delete deletes after the new object and its
// dependents are in place.
func (ap *applier) addDestroySteps(g *walkGraph) {
	var dels []*plans.ResourceChange
	byRes := map[string][]string{}
	for _, c := range ap.plan.Changes {
		if c.Action == plans.Delete || c.Action.IsReplace() {
			dels = append(dels, c)
			byRes[c.Resource] = append(byRes[c.Resource], c.Addr)
		}
	}
	if len(dels) == 0 {
		return
	}
	for res, addrs := range byRes {
		if len(addrs) == 1 {
			continue // its one destroy step stands for it (destroyAll)
		}
		agg := destroyAllV(res)
		g.add(agg)
		for _, a := range addrs {
			g.connect(agg, destroyV(a))
		}
	}
	dependents := ap.dependents()
	for _, c := range dels {
		orderDestroy(g, c, dependents[c.Resource], byRes)
	}
}

// dependents maps each resource to the resources that depend on it, in
// the configuration now or as recorded in the plan and state.
func (ap *applier) dependents() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(user, dep string) {
		if out[dep] == nil {
			out[dep] = map[string]bool{}
		}
		out[dep][user] = true
	}
	if ap.cg != nil {
		for r, deps := range ap.cg.resourceDeps {
			for _, d := range deps {
				add(r, d)
			}
		}
	}
	for _, c := range ap.plan.Changes {
		for _, d := range c.Dependencies {
			add(c.Resource, d)
		}
	}
	for _, in := range ap.objs {
		for _, d := range in.Dependencies {
			add(in.Resource, d)
		}
	}
	return out
}

// destroyAll is the vertex that stands for every destroy step of
// resource res: its destroyAllVertex, or the step itself when there is
// one (a block of one instance: one vertex where there were two).
func destroyAll(res string, byRes map[string][]string) (vertex, bool) {
	switch addrs := byRes[res]; len(addrs) {
	case 0:
		return vertex{}, false
	case 1:
		return destroyV(addrs[0]), true
	}
	return destroyAllV(res), true
}

// orderDestroy adds c's destroy step and its edges; users are the
// resources that depend on c's, byRes the deletes per resource.
func orderDestroy(g *walkGraph, c *plans.ResourceChange, users map[string]bool, byRes map[string][]string) {
	v := destroyV(c.Addr)
	g.add(v)
	sorted := make([]string, 0, len(users))
	for u := range users {
		if u != c.Resource {
			sorted = append(sorted, u)
		}
	}
	sort.Strings(sorted)
	for _, u := range sorted {
		if all, ok := destroyAll(u, byRes); ok {
			g.connect(v, all)
		}
	}
	// What used the object is created or updated first, so it has moved off
	// before the object goes (delete, and create-then-delete).
	usersFirst := func() {
		for _, u := range sorted {
			if g.has(resourceV(u)) {
				g.connect(v, resourceV(u))
			}
		}
	}
	// The replaced instance: its own vertex when walked by instance, else
	// its block's.
	own := instanceV(c.Addr)
	if !g.has(own) {
		own = resourceV(c.Resource)
	}
	switch c.Action {
	case plans.Delete:
		usersFirst()
	case plans.DeleteThenCreate:
		if g.has(own) {
			g.connect(own, v)
		}
	case plans.CreateThenDelete:
		if g.has(own) {
			g.connect(v, own)
		}
		usersFirst()
	}
}

// destroyStep deletes one instance (or the old half of a replacement).
func (ap *applier) destroyStep(ctx context.Context, addr string) hcl.Diagnostics {
	c := ap.changes[addr]
	ap.reached(ap.deleted, addr)
	stateAddr := addr
	if c.Action == plans.CreateThenDelete {
		stateAddr = addr + deposedSuffix
	}
	prov, diags := ap.e.provider(ctx, c.Provider)
	if diags.HasErrors() {
		return diags
	}
	node := plans.NodeValue(c.Node)
	if c.PriorNode != nil {
		node = *c.PriorNode // the old object lives where state says it is
	}
	inst := &stateObject{Addr: stateAddr, Resource: c.Resource, Type: c.Type, Provider: c.Provider, Node: node,
		Value: c.Before, Private: c.PriorPrivate, Dependencies: c.Dependencies, SchemaVersion: c.SchemaVersion}
	if in, ok := ap.object(stateAddr); ok {
		inst.Tainted, inst.SensitiveAttrs = in.Tainted, in.SensitiveAttrs
	}
	// The intent records the object as the plan saw it: when that is the
	// value state holds, the intent takes its stored bytes (encoding every
	// value again was 0.1 CPU s of a 10,000-instance destroy).
	inst.stored = ap.e.storedValue(stateAddr, c.Before)
	// A delete is a provider call like any other: held to the type's
	// limiter (before, destroy steps ran as wide as the walk, 64 at once
	// whatever -parallelism said).
	var resp sdk.ApplyResponse
	var err error
	if lerr := ap.limiterFor(ctx, c.Type).run(ctx, node.Key(), func() {
		resp, err = ap.callApply(ctx, inst, nil, addr, "delete", destroySecrets(c), func(ctx context.Context, started func(time.Time), progress func(sdk.Progress)) sdk.ApplyResponse {
			started(time.Now())
			return prov.ApplyResourceChange(ctx, sdk.ApplyRequest{
				TypeName: c.Type, Address: addr, Node: node, Prior: c.Before, Planned: cty.NullVal(c.Before.Type()),
				Config: cty.NullVal(c.Before.Type()), Private: c.PriorPrivate,
			}, progress)
		})
	}); lerr != nil {
		// Worded as an apply's own, so that the CLI shows it once.
		return hcl.Diagnostics{tfdiags.FromError("Apply interrupted", lerr, "")}
	}
	inst.stored = nil // Value changes below
	var secrets []string
	if err != nil || len(resp.Diagnostics) > 0 {
		secrets = secretStrings(c.BeforeSensitive(), c.Before)
	}
	if err != nil {
		return hcl.Diagnostics{tfdiags.Attach(errDiag("Cannot destroy "+addr, redactString(err.Error(), secrets)), redactedError(err, secrets))}
	}
	diags = redact(sdkDiags(resp.Diagnostics, addr, nil, nil), secrets)
	if resp.OutcomeUnknown {
		ap.count(stateAddr, plans.Delete, true)
		return append(diags, keptIntent(addr))
	}
	if resp.NewState != cty.NilVal && !resp.NewState.IsNull() {
		// Not gone: keep the object and its restore data in state.
		inst.Value, inst.Private = unknownAsNull(resp.NewState), resp.Private
		if serr := ap.store(inst); serr != nil {
			diags = append(diags, tfdiags.FromError("Cannot store "+addr, serr, ""))
		}
		if !resp.Diagnostics.HasErrors() {
			diags = append(diags, errDiag("Provider did not destroy "+addr,
				"the provider returned without error but the object still exists; it stays in state"))
		}
	} else {
		inst.Value = cty.NullVal(c.Before.Type())
		if serr := ap.store(inst); serr != nil {
			diags = append(diags, tfdiags.FromError("Cannot update state for "+addr, serr, ""))
		}
	}
	ap.count(stateAddr, plans.Delete, diags.HasErrors())
	return diags
}

// destroySecrets is what a delete's progress is redacted of (nil: none).
func destroySecrets(c *plans.ResourceChange) func() []string {
	if len(c.SensitiveAttrs)+len(c.PriorSensitiveAttrs) == 0 {
		return nil
	}
	return func() []string { return secretStrings(c.BeforeSensitive(), c.Before) }
}
