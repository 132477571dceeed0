package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/graph"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// ApplyResult is what an apply produced besides state.
type ApplyResult struct {
	// Outputs are the outputs to store after this apply: what was stored
	// before, with only the values this apply really changed replaced. A
	// refused, failed, interrupted, partial or refresh-only apply keeps
	// the rest as they were; a complete destroy empties them.
	Outputs map[string]cty.Value
	// Applied counts instances changed per action.
	Applied map[plans.Action]int
}

// Apply carries out p. It refuses a plan made against another state
// (plans.ErrStalePlan). Each instance's result is stored the moment it
// lands; a journal intent brackets every provider call. On failure, what
// did not depend on the failed instance still runs and is stored.
func (e *Engine) Apply(ctx context.Context, p *plans.Plan) (*ApplyResult, hcl.Diagnostics) {
	prior := e.priorOutputs()
	res := &ApplyResult{Outputs: map[string]cty.Value{}, Applied: map[plans.Action]int{}}
	for name, v := range prior {
		res.Outputs[name] = v
	}
	meta, err := e.Store.Meta()
	if err != nil {
		return res, hcl.Diagnostics{errDiag("Cannot read state", err.Error())}
	}
	if err := p.CheckFresh(meta.Lineage, meta.Serial); err != nil {
		return res, hcl.Diagnostics{errDiag("Saved plan is stale", err.Error())}
	}
	insts, diags := e.loadState()
	if diags.HasErrors() {
		return res, diags
	}
	if p.Saved {
		if d := e.checkPlanSchema(ctx, p); d.HasErrors() {
			return res, append(diags, d...)
		}
	}
	if p.Saved && p.Mode != plans.RefreshOnlyMode {
		if d := e.checkPlanCurrent(ctx, p, insts); d.HasErrors() {
			return res, append(diags, d...)
		}
	}
	changes := make(map[string]*plans.ResourceChange, len(p.Changes))
	for _, c := range p.Changes {
		changes[c.Addr] = c
	}
	// What refresh found is the truth: store it first.
	diags = append(diags, e.storeDrift(p, insts, changes)...)
	if diags.HasErrors() || p.Mode == plans.RefreshOnlyMode {
		return res, diags
	}

	ap := &applier{e: e, plan: p, changes: changes, insts: insts, res: res, lim: make(limiter, e.parallelism())}
	var g *graph.Graph
	var ev *evaluator
	var cg *configGraph
	if p.Mode == plans.NormalMode {
		var d hcl.Diagnostics
		cg, d = e.buildConfigGraph(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return res, diags
		}
		filter, d := parseTargets(p.Targets)
		diags = append(diags, d...)
		filter.expand(cg)
		ap.filter = filter
		ev = newEvaluator(e.Module, cg, p.Variables)
		if d := e.expandStatic(cg, ev); d.HasErrors() {
			return res, append(diags, d...)
		}
		g = cg.walkGraph(e.Module, filter.vertex, filter.instance)
		ap.ev, ap.cg = ev, cg
	} else {
		g = graph.New()
	}
	ap.addDestroySteps(g, cg)
	if err := g.Validate(); err != nil {
		return res, append(diags, errDiag("Cannot order the changes", err.Error()))
	}
	wd := e.walk(ctx, g, ev, walkFuncs{resource: ap.applyResource, instance: ap.applyVertex,
		output: func(name string, v cty.Value) {
			// A value left unknown (what it refers to failed or was not
			// reached) keeps the stored one.
			if _, had := prior[name]; v.IsWhollyKnown() || !had {
				res.Outputs[name] = v
			}
		}, destroy: ap.destroyStep})
	diags = append(diags, wd...)
	switch {
	case p.Mode == plans.NormalMode:
		for name := range res.Outputs {
			if e.Module.Outputs[name] == nil {
				delete(res.Outputs, name) // removed from the configuration
			}
		}
	case p.Mode == plans.DestroyMode && !diags.HasErrors() && ctx.Err() == nil:
		res.Outputs = map[string]cty.Value{} // nothing left to describe
	}
	if ctx.Err() != nil {
		diags = append(diags, errDiag("Apply interrupted", "Work in flight was stopped; everything that finished is saved in state. Run plan to see what is left."))
	}
	return res, diags
}

// storeDrift writes refreshed values into state.
func (e *Engine) storeDrift(p *plans.Plan, insts map[string]*instance, changes map[string]*plans.ResourceChange) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, d := range p.Drift {
		in, ok := insts[d.Addr]
		if !ok {
			continue
		}
		if d.After.IsNull() {
			if err := e.Store.DeleteResource(d.Addr); err != nil && !isNotFound(err) {
				diags = append(diags, errDiag("Cannot update state for "+d.Addr, err.Error()))
			}
			delete(insts, d.Addr)
			continue
		}
		cp := *in
		cp.Value = d.After
		if c := changes[d.Addr]; c != nil && c.Before != cty.NilVal && !c.Before.IsNull() {
			cp.Private = c.PriorPrivate
		}
		rec, err := cp.record()
		if err == nil {
			err = e.Store.PutResource(rec)
		}
		if err != nil {
			diags = append(diags, errDiag("Cannot update state for "+d.Addr, err.Error()))
			continue
		}
		insts[d.Addr] = &cp
	}
	return diags
}

type applier struct {
	e       *Engine
	plan    *plans.Plan
	changes map[string]*plans.ResourceChange
	insts   map[string]*instance
	filter  *targetFilter
	ev      *evaluator
	cg      *configGraph

	lim limiter

	mu  sync.Mutex
	res *ApplyResult
}

func destroyVertex(addr string) string   { return "destroy " + addr }
func destroyAllVertex(res string) string { return "destroyall " + res }

// addDestroySteps adds a vertex per delete (and per replace's delete half)
// and orders them: an instance is deleted only after everything that
// depends on it; delete-then-create deletes before its resource is created
// again; create-then-delete deletes after the new object and its
// dependents are in place.
func (ap *applier) addDestroySteps(g *graph.Graph, cg *configGraph) {
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
	// dependents[r]: resources that depend on r (config now, or recorded).
	dependents := map[string]map[string]bool{}
	addDep := func(user, dep string) {
		if dependents[dep] == nil {
			dependents[dep] = map[string]bool{}
		}
		dependents[dep][user] = true
	}
	if cg != nil {
		for r, deps := range cg.resourceDeps {
			for _, d := range deps {
				addDep(r, d)
			}
		}
	}
	for _, c := range ap.plan.Changes {
		for _, d := range c.Dependencies {
			addDep(c.Resource, d)
		}
	}
	for _, in := range ap.insts {
		for _, d := range in.Dependencies {
			addDep(in.Resource, d)
		}
	}
	for res, addrs := range byRes {
		agg := destroyAllVertex(res)
		g.Add(agg)
		for _, a := range addrs {
			g.Connect(agg, destroyVertex(a))
		}
	}
	for _, c := range dels {
		v := destroyVertex(c.Addr)
		g.Add(v)
		users := make([]string, 0, len(dependents[c.Resource]))
		for u := range dependents[c.Resource] {
			users = append(users, u)
		}
		sort.Strings(users)
		for _, u := range users {
			if u == c.Resource {
				continue
			}
			if _, ok := byRes[u]; ok {
				g.Connect(v, destroyAllVertex(u))
			}
		}
		switch c.Action {
		case plans.Delete:
			// What used the object (per state) is created or updated
			// first, so it has moved off before the object goes.
			for _, u := range users {
				if g.Has(u) && u != c.Resource {
					g.Connect(v, u)
				}
			}
		case plans.DeleteThenCreate:
			if iv := instanceVertexName(c.Addr); g.Has(iv) {
				g.Connect(iv, v)
			} else if g.Has(c.Resource) {
				g.Connect(c.Resource, v)
			}
		case plans.CreateThenDelete:
			if iv := instanceVertexName(c.Addr); g.Has(iv) {
				g.Connect(v, iv)
			} else if g.Has(c.Resource) {
				g.Connect(v, c.Resource)
			}
			for _, u := range users {
				if g.Has(u) && u != c.Resource {
					g.Connect(v, u)
				}
			}
		}
	}
}

// applyResource creates or updates every instance of one resource block
// that the plan changes, and publishes every instance's value for the
// blocks that reference it.
func (ap *applier) applyResource(ctx context.Context, key string) hcl.Diagnostics {
	e := ap.e
	r := e.Module.Resources[key]
	schema := ap.cg.schemas[r.Addr.Type]
	ris, b, diags := ap.ev.expandResource(ctx, key, nil)
	if diags.HasErrors() {
		return diags
	}
	var work []*resourceInstance
	for _, ri := range ris {
		c := ap.changes[ri.Addr]
		switch {
		case c == nil || !ap.filter.instance(ri.Addr):
			if in, ok := ap.instance(ri.Addr); ok {
				b.set(ri.Key, in.Value)
			} else {
				b.set(ri.Key, cty.UnknownVal(schema.Block.ImpliedType()))
			}
		case c.Action == plans.NoOp || c.Action == plans.Delete:
			b.set(ri.Key, c.Before)
		default:
			work = append(work, ri)
		}
	}
	if len(work) == 0 {
		return diags
	}
	prov, err := e.Providers.Provider(ctx, sdk.ProviderNameOf(r.Addr.Type))
	if err != nil {
		return append(diags, errDiag("Cannot start provider "+sdk.ProviderNameOf(r.Addr.Type), err.Error()))
	}
	var mu sync.Mutex
	if err := forEachParallel(ctx, ap.lim, len(work), func(i int) {
		ri := work[i]
		val, d := ap.applyInstance(ctx, prov, key, schema, ri, ap.changes[ri.Addr])
		if val != cty.NilVal {
			b.set(ri.Key, val)
		}
		mu.Lock()
		diags = append(diags, d...)
		mu.Unlock()
	}); err != nil {
		diags = append(diags, errDiag("Apply interrupted", err.Error()))
	}
	return diags
}

// applyVertex creates or updates one instance vertex when the plan says so
// and publishes its value.
func (ap *applier) applyVertex(ctx context.Context, iv *instanceVertex) hcl.Diagnostics {
	e := ap.e
	r := e.Module.Resources[iv.Block]
	schema := ap.cg.schemas[r.Addr.Type]
	b := ap.ev.res[iv.Block]
	c := ap.changes[iv.Addr]
	switch {
	case c == nil || !ap.filter.instance(iv.Addr):
		if in, ok := ap.instance(iv.Addr); ok {
			b.set(iv.Key, in.Value)
		} else {
			b.set(iv.Key, cty.UnknownVal(schema.Block.ImpliedType()))
		}
		return nil
	case c.Action == plans.NoOp || c.Action == plans.Delete:
		b.set(iv.Key, c.Before)
		return nil
	}
	ri, diags := ap.ev.evalInstance(iv)
	if diags.HasErrors() {
		return diags
	}
	prov, err := e.Providers.Provider(ctx, sdk.ProviderNameOf(r.Addr.Type))
	if err != nil {
		return append(diags, errDiag("Cannot start provider "+sdk.ProviderNameOf(r.Addr.Type), err.Error()))
	}
	var val cty.Value
	var d hcl.Diagnostics
	if err := ap.lim.do(ctx, func() { val, d = ap.applyInstance(ctx, prov, iv.Block, schema, ri, c) }); err != nil {
		return append(diags, errDiag("Apply interrupted", err.Error()))
	}
	if val != cty.NilVal {
		b.set(iv.Key, val)
	}
	return append(diags, d...)
}

func (ap *applier) applyInstance(ctx context.Context, prov sdk.Provider, key string, schema *sdk.ResourceSchema, ri *resourceInstance, c *plans.ResourceChange) (cty.Value, hcl.Diagnostics) {
	e := ap.e
	r := e.Module.Resources[key]
	rng := r.DeclRange
	ty := schema.Block.ImpliedType()
	prior, priorPrivate := c.Before, c.PriorPrivate
	if c.Action != plans.Update {
		prior, priorPrivate = cty.NullVal(ty), nil
	}
	if c.Action == plans.CreateThenDelete {
		// The old object steps aside under a deposed address until the
		// new one is in place; then its destroy step removes it.
		if err := ap.moveToDeposed(c.Addr); err != nil {
			return cty.NilVal, hcl.Diagnostics{errDiag("Cannot depose "+c.Addr, err.Error())}
		}
	}
	// Re-plan with what is known now that dependencies are applied.
	cfg := applyIgnoreChanges(ri.Config, c.Before, r.Lifecycle.IgnoreAllChanges, r.Lifecycle.IgnoreChanges, schema.Block)
	planned, _, plannedPrivate, pd := planCall(ctx, prov, r.Addr.Type, ri, prior, priorPrivate, cfg, schema.Block, replacesOf(c), false)
	_, pd = planNotes(pd) // the plan showed them
	diags := sdkDiags(pd, ri.Addr, r.Config, &rng)
	if pd.HasErrors() {
		return cty.NilVal, diags
	}
	// What was reviewed is what runs: a value the plan knew may not differ now.
	if path, ok := consistentWithPlan(c.After, planned); !ok {
		return cty.NilVal, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Plan changed since it was made",
			Detail: fmt.Sprintf("%s: at apply time %s plans %s differently from the plan that was reviewed. Nothing was changed for this instance; run plan again to review the new values.",
				ri.Addr, c.Provider, describePath(path)), Subject: &rng})
	}
	action := c.Action
	inst := &instance{Addr: ri.Addr, Resource: key, Type: r.Addr.Type, Provider: c.Provider, Node: ri.Node,
		Value: planned, Private: plannedPrivate, Dependencies: ap.cg.resourceDeps[key], SchemaVersion: schema.Version}
	resp, err := ap.callApply(ctx, prov, inst, string(action), sdk.ApplyRequest{
		TypeName: r.Addr.Type, Address: ri.Addr, Node: ri.Node, Prior: prior, Planned: planned, Config: cfg, Private: plannedPrivate,
	})
	if err != nil {
		return cty.NilVal, append(diags, errDiag("Cannot apply "+ri.Addr, err.Error()))
	}
	diags = append(diags, sdkDiags(resp.Diagnostics, ri.Addr, r.Config, &rng)...)
	newVal := resp.NewState
	if newVal == cty.NilVal {
		newVal = cty.NullVal(ty)
	}
	if !newVal.IsNull() && !newVal.IsWhollyKnown() {
		newVal = unknownAsNull(newVal)
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Provider returned unknown values",
			Detail: fmt.Sprintf("provider %s left values unknown after applying %s; this is a bug in the provider. They are stored as null.", c.Provider, ri.Addr)})
	}
	inst.Value, inst.Private = newVal, resp.Private
	inst.Tainted = resp.Diagnostics.HasErrors() && action != plans.Update && !newVal.IsNull()
	if serr := ap.store(inst); serr != nil {
		diags = append(diags, errDiag("Cannot store "+ri.Addr, serr.Error()))
	}
	ap.count(action, resp.Diagnostics.HasErrors())
	if newVal.IsNull() {
		return cty.UnknownVal(ty), diags
	}
	return newVal, diags
}

// destroyStep deletes one instance (or the old half of a replacement).
func (ap *applier) destroyStep(ctx context.Context, v string) hcl.Diagnostics {
	if len(v) > len("destroyall ") && v[:len("destroyall ")] == "destroyall " {
		return nil
	}
	addr := v[len("destroy "):]
	c := ap.changes[addr]
	stateAddr := addr
	if c.Action == plans.CreateThenDelete {
		stateAddr = addr + deposedSuffix
	}
	prov, err := ap.e.Providers.Provider(ctx, c.Provider)
	if err != nil {
		return hcl.Diagnostics{errDiag("Cannot start provider "+c.Provider, err.Error())}
	}
	node := c.Node
	if c.PriorNode.Transport != "" {
		node = c.PriorNode // the old object lives where state says it is
	}
	inst := &instance{Addr: stateAddr, Resource: c.Resource, Type: c.Type, Provider: c.Provider, Node: node,
		Value: c.Before, Private: c.PriorPrivate, Dependencies: c.Dependencies, SchemaVersion: c.SchemaVersion}
	if in, ok := ap.instance(addr); ok {
		inst.Tainted = in.Tainted
	}
	resp, err := ap.callApply(ctx, prov, inst, "delete", sdk.ApplyRequest{
		TypeName: c.Type, Address: addr, Node: node, Prior: c.Before, Planned: cty.NullVal(c.Before.Type()),
		Config: cty.NullVal(c.Before.Type()), Private: c.PriorPrivate,
	})
	if err != nil {
		return hcl.Diagnostics{errDiag("Cannot destroy "+addr, err.Error())}
	}
	diags := sdkDiags(resp.Diagnostics, addr, nil, nil)
	if resp.NewState != cty.NilVal && !resp.NewState.IsNull() {
		// Not gone: keep the object and its restore data in state.
		inst.Value, inst.Private = unknownAsNull(resp.NewState), resp.Private
		if serr := ap.store(inst); serr != nil {
			diags = append(diags, errDiag("Cannot store "+addr, serr.Error()))
		}
		if !resp.Diagnostics.HasErrors() {
			diags = append(diags, errDiag("Provider did not destroy "+addr,
				"the provider returned without error but the object still exists; it stays in state"))
		}
	} else {
		inst.Value = cty.NullVal(c.Before.Type())
		if serr := ap.store(inst); serr != nil {
			diags = append(diags, errDiag("Cannot update state for "+addr, serr.Error()))
		}
	}
	ap.count(plans.Delete, diags.HasErrors())
	return diags
}

// callApply brackets one ApplyResourceChange with a journal intent and
// reports progress.
func (ap *applier) callApply(ctx context.Context, prov sdk.Provider, inst *instance, action string, req sdk.ApplyRequest) (sdk.ApplyResponse, error) {
	h := ap.e.hooks()
	intent, err := newIntent(inst, action)
	if err != nil {
		return sdk.ApplyResponse{}, err
	}
	if err := ap.e.Store.PutIntent(intent); err != nil {
		return sdk.ApplyResponse{}, fmt.Errorf("writing the journal intent: %w", err)
	}
	pa := plans.Action(action)
	if action == "delete" {
		pa = plans.Delete
	}
	h.PreApply(req.Address, pa)
	start := time.Now()
	// An operation in flight is never cut off by the caller's cancellation
	// (Ctrl-C): it finishes, or stops early through Provider.Stop, and
	// reports the state really left on the node, which is then saved.
	resp := prov.ApplyResourceChange(context.WithoutCancel(ctx), req, func(p sdk.Progress) {
		if p.Elapsed == 0 {
			p.Elapsed = time.Since(start)
		}
		h.Progress(req.Address, p)
	})
	h.PostApply(req.Address, pa, time.Since(start), resp.Diagnostics.Err())
	return resp, nil
}

// store writes the instance's result (a null value removes the record)
// and clears its journal intent.
func (ap *applier) store(inst *instance) error {
	gone := inst.Value == cty.NilVal || inst.Value.IsNull()
	var rec *state.Resource
	if !gone {
		var err error
		if rec, err = inst.record(); err != nil {
			return err
		}
	}
	// One durable commit stores the result and clears the intent.
	if err := ap.e.Store.Complete(inst.Addr, rec); err != nil {
		return err
	}
	ap.mu.Lock()
	if gone {
		delete(ap.insts, inst.Addr)
	} else {
		ap.insts[inst.Addr] = inst
	}
	ap.mu.Unlock()
	return nil
}

func (ap *applier) instance(addr string) (*instance, bool) {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	in, ok := ap.insts[addr]
	return in, ok
}

func (ap *applier) moveToDeposed(addr string) error {
	ap.mu.Lock()
	in, ok := ap.insts[addr]
	ap.mu.Unlock()
	if !ok {
		return nil
	}
	cp := *in
	cp.Addr = addr + deposedSuffix
	rec, err := cp.record()
	if err != nil {
		return err
	}
	if err := ap.e.Store.PutResource(rec); err != nil {
		return err
	}
	return ap.e.Store.DeleteResource(addr)
}

func (ap *applier) count(a plans.Action, failed bool) {
	if failed {
		return
	}
	ap.mu.Lock()
	ap.res.Applied[a]++
	ap.mu.Unlock()
}

// replacesOf is the object a replacement's create takes the place of.
func replacesOf(c *plans.ResourceChange) cty.Value {
	if c.Action.IsReplace() {
		return c.Before
	}
	return cty.NilVal
}

// consistentWithPlan reports whether planned keeps every value the
// reviewed plan knew; where the plan said "known after apply", anything
// goes. It returns the first path that differs.
func consistentWithPlan(reviewed, planned cty.Value) (cty.Path, bool) {
	if reviewed == cty.NilVal || planned == cty.NilVal {
		return nil, true
	}
	var bad cty.Path
	_ = cty.Walk(reviewed, func(p cty.Path, v cty.Value) (bool, error) {
		if bad != nil || !v.IsKnown() {
			return false, nil
		}
		nv, err := p.Apply(planned)
		if err != nil {
			bad = p.Copy()
			return false, nil
		}
		ty := v.Type()
		if !v.IsNull() && !ty.IsSetType() && (ty.IsObjectType() || ty.IsMapType() || ty.IsListType() || ty.IsTupleType()) {
			if !nv.IsKnown() || nv.IsNull() || (!ty.IsObjectType() && nv.LengthInt() != v.LengthInt()) {
				bad = p.Copy()
				return false, nil
			}
			return true, nil // compare the elements
		}
		if !nv.IsWhollyKnown() && v.IsWhollyKnown() || !sdk.ValuesEqual(v, nv) && v.IsWhollyKnown() {
			bad = p.Copy()
		}
		return false, nil
	})
	return bad, bad == nil
}

// describePath renders a value path for messages ("env[\"X\"]").
func describePath(p cty.Path) string {
	if len(p) == 0 {
		return "the whole object"
	}
	var b strings.Builder
	for _, st := range p {
		switch st := st.(type) {
		case cty.GetAttrStep:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(st.Name)
		case cty.IndexStep:
			if st.Key.Type() == cty.String {
				fmt.Fprintf(&b, "[%q]", st.Key.AsString())
			} else if st.Key.Type() == cty.Number {
				fmt.Fprintf(&b, "[%s]", st.Key.AsBigFloat().Text('f', -1))
			}
		}
	}
	return b.String()
}
