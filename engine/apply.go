// This file holds Engine.Apply: check the plan is current, store what
// refresh found, then walk the configuration creating and updating
// instances (applyInstance, the one per-instance path for blocks walked
// whole and instance vertices alike) and deleting (apply_destroy.go), each
// result stored the moment it lands.

package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/engine/tfdiags"
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
//
// Apply consumes p: once a create or update has been carried out, its
// change's values (Before, After and the private data) are let go, so
// that a large apply does not keep every reviewed value beside every
// result. The rest of each change (address, action, node) stays.
func (e *Engine) Apply(ctx context.Context, p *plans.Plan) (*ApplyResult, hcl.Diagnostics) {
	prior := e.priorOutputs()
	res := &ApplyResult{Outputs: map[string]cty.Value{}, Applied: map[plans.Action]int{}}
	for name, v := range prior {
		res.Outputs[name] = v
	}
	ap, diags := e.newApplier(ctx, p, res)
	if diags.HasErrors() {
		return res, diags
	}
	if p.Mode == plans.RefreshOnlyMode {
		return res, append(diags, excludedErrors(p)...)
	}
	g, d := ap.graph(ctx)
	if diags = append(diags, d...); d.HasErrors() {
		return res, diags
	}
	diags = append(diags, e.walk(ctx, g, ap.ev, walkFuncs{resource: ap.applyBlock, instance: ap.applyInstanceVertex,
		output: func(name string, v cty.Value) {
			// A value left unknown (what it refers to failed or was not
			// reached) keeps the stored one.
			if _, had := prior[name]; v.IsWhollyKnown() || !had {
				res.Outputs[name] = v
			}
		}, destroy: ap.destroyStep})...)
	if !diags.HasErrors() && ctx.Err() == nil {
		diags = append(diags, ap.unreached()...)
	}
	// A node the plan left out fails the apply, once, whatever else did.
	diags = append(diags, excludedErrors(p)...)
	// Results are queued (Store.Complete): all are durable before Apply
	// returns, and one that could not be stored is an error here.
	if err := e.store.Flush(); err != nil {
		diags = append(diags, tfdiags.FromError("Cannot store results", err,
			"\n\nThe journal still records each such instance: the next plan refreshes it from its node."))
		ap.uncountUnstored()
	}
	switch {
	case p.Mode == plans.NormalMode:
		for name := range res.Outputs {
			if e.module.Outputs[name] == nil {
				delete(res.Outputs, name) // removed from the configuration
			}
		}
	case p.Mode == plans.DestroyMode && !diags.HasErrors() && ctx.Err() == nil:
		res.Outputs = map[string]cty.Value{} // nothing left to describe
	}
	if ctx.Err() != nil {
		diags = append(diags, errDiag("Apply interrupted", "Work in flight was stopped; everything that finished is saved in state. Run plan to see what is left."))
	}
	if len(p.Targets) > 0 {
		diags = append(diags, targetedApplyWarning())
	}
	return res, diags
}

// applier carries out one plan's changes.
type applier struct {
	e       *Engine
	plan    *plans.Plan
	changes map[string]*plans.ResourceChange
	// objs are the objects in state the walk has yet to act on: what
	// state held when the apply started, and a replacement's deposed
	// half. A result, once stored, is not kept here (nothing reads it
	// again, and at 10,000 creates that was ~2.5 MB to the walk's end).
	objs map[string]*stateObject
	// filter, ev and cg are set in normal mode.
	filter *targetFilter
	ev     *evaluator
	cg     *configGraph

	// lim bounds provider calls that may reach a node; localLim those of
	// types whose applies reach none (sdk.ResourceSchema.LocalApply),
	// wider, and not journaled. Destroy steps go through the same two.
	lim      *nodeLimiter
	localLim limiter
	// localTypes memoises local: asked two or three times per instance,
	// each time through the host's locks and the schema's map.
	localTypes sync.Map // type name -> bool

	mu  sync.Mutex
	res *ApplyResult
	// created and deleted are the changes whose create (or update) and
	// whose delete the walk reached: a change it did not reach is an
	// error (unreached), never dropped without a word.
	created, deleted map[string]bool
	// uncounted are the addresses of this apply's provider calls that
	// Applied does not count (failed, outcome unknown), and of journal
	// intents already there when it started: after a failed Flush, an
	// intent left for any other address is a counted result that state
	// does not hold (uncountUnstored). Few: only failures go here.
	uncounted map[string]bool
}

// newApplier reads state, refuses a stale plan (or, for a saved plan, one
// whose values do not fit their schemas or that the nodes no longer
// match) and stores what refresh found.
func (e *Engine) newApplier(ctx context.Context, p *plans.Plan, res *ApplyResult) (*applier, hcl.Diagnostics) {
	meta, err := e.store.Meta()
	if err != nil {
		return nil, hcl.Diagnostics{tfdiags.FromError("Cannot read state", err, "")}
	}
	if err := p.CheckFresh(meta.Lineage, meta.Serial); err != nil {
		return nil, hcl.Diagnostics{tfdiags.FromError("Saved plan is stale", err, "")}
	}
	// The plan's moves first: its changes name the objects where they go.
	if d := e.applyMoves(p); d.HasErrors() {
		return nil, d
	}
	objs, diags := e.loadState()
	if diags.HasErrors() {
		return nil, diags
	}
	if p.Saved {
		if d := e.checkPlanSchema(ctx, p); d.HasErrors() {
			return nil, append(diags, d...)
		}
		d := e.checkPlanNodes(ctx, p, objs)
		if diags = append(diags, d...); d.HasErrors() {
			return nil, diags
		}
	}
	var storeOnly map[string]bool // nil: all the drift (a plan made in this process)
	if p.Saved {
		if d := e.checkPlanConfig(p); d.HasErrors() {
			return nil, append(diags, d...)
		}
		confirmed, d := e.checkPlanCurrent(ctx, p, objs)
		if d.HasErrors() {
			return nil, append(diags, d...)
		}
		storeOnly = confirmed
	}
	changes := make(map[string]*plans.ResourceChange, len(p.Changes))
	for _, c := range p.Changes {
		changes[c.Addr] = c
	}
	// What refresh found is the truth: store it first.
	diags = append(diags, e.storeDrift(p, objs, changes, storeOnly)...)
	ap := &applier{e: e, plan: p, changes: changes, objs: objs, res: res,
		lim: newNodeLimiter(e.parallelism), localLim: e.localLimiter(),
		created: map[string]bool{}, deleted: map[string]bool{}}
	// Intents already in the journal (usually none) are not this apply's
	// results: a failed Flush must not take them from the counts.
	if intents, err := e.store.Intents(); err == nil {
		for _, in := range intents {
			ap.notCounted(in.Address)
		}
	}
	return ap, diags
}

// graph is the walk graph of the apply: in normal mode the configuration's
// (within the plan's targets), and in every mode the destroy steps.
func (ap *applier) graph(ctx context.Context) (*walkGraph, hcl.Diagnostics) {
	g := &walkGraph{vgraph: newVGraph(), instances: map[string]*instanceVertex{}}
	var diags hcl.Diagnostics
	if ap.plan.Mode == plans.NormalMode {
		cg, d := ap.e.buildConfigGraph(ctx)
		if diags = append(diags, d...); d.HasErrors() {
			return nil, diags
		}
		targets, d := addrs.ParseTargets(ap.plan.Targets) // checked when the plan was made
		diags = append(diags, d...)
		filter := newTargetFilter(targets)
		filter.expand(cg)
		ev := newEvaluator(ap.e.module, cg, ap.plan.Variables)
		if d := ap.e.expandStatic(cg, ev); d.HasErrors() {
			return nil, append(diags, d...)
		}
		g = cg.walkGraph(ap.e.module, filter.vertex, filter.instance)
		// The walk needs the graph's references, schemas and decoders,
		// not its vertices and edges (this copy's; the engine's own is
		// let go below).
		cg.g = nil
		ap.filter, ap.ev, ap.cg = filter, ev, cg
		ap.e.releaseRootBodies(cg)
	}
	// An apply is a run's last walk: the engine's configuration graph
	// (~1 KB per block; a destroy walks without it) is not kept alive
	// through it. A later phase on this engine builds it again.
	ap.e.releaseGraph()
	ap.addDestroySteps(g)
	if err := g.g.Validate(); err != nil {
		return nil, append(diags, tfdiags.FromError("Cannot order the changes", err, ""))
	}
	return g, diags
}

// storeDrift writes refreshed values into state: of a saved plan, only
// the drift that the refresh at apply confirmed (only; checkPlanCurrent).
func (e *Engine) storeDrift(p *plans.Plan, insts map[string]*stateObject, changes map[string]*plans.ResourceChange, only map[string]bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, d := range p.Drift {
		in, ok := insts[d.Addr]
		if !ok || only != nil && !only[d.Addr] {
			continue
		}
		if d.After.IsNull() {
			if err := e.store.DeleteResource(d.Addr); err != nil && !isNotFound(err) {
				diags = append(diags, tfdiags.FromError("Cannot update state for "+d.Addr, err, ""))
			}
			delete(insts, d.Addr)
			continue
		}
		cp := *in
		cp.Value, cp.stored = d.After, nil
		if c := changes[d.Addr]; c != nil && c.Before != cty.NilVal && !c.Before.IsNull() {
			cp.Private = c.PriorPrivate
		}
		if err := e.putObject(&cp); err != nil {
			diags = append(diags, tfdiags.FromError("Cannot update state for "+d.Addr, err, ""))
			continue
		}
		insts[d.Addr] = &cp
	}
	return diags
}

// applyBlock applies a resource block walked whole (its keys known only
// now): every instance the plan changes, and publishes every instance's
// value for the blocks that reference it.
func (ap *applier) applyBlock(ctx context.Context, key string) hcl.Diagnostics {
	cis, b, diags := ap.ev.expandResource(key, nil)
	if diags.HasErrors() {
		return diags
	}
	var work []*configInstance
	for _, ci := range cis {
		done, d := ap.settled(key, b, ci.Key, ci.Addr)
		diags = append(diags, d...)
		if !done {
			work = append(work, ci)
		}
	}
	return append(diags, ap.applyInstances(ctx, key, b, work)...)
}

// applyInstanceVertex applies one instance of a statically expanded block
// when the plan changes it, and publishes its value.
func (ap *applier) applyInstanceVertex(ctx context.Context, iv *instanceVertex) hcl.Diagnostics {
	b := ap.ev.resourceValues(iv.block)
	if done, d := ap.settled(iv.block, b, iv.key, iv.addr); done {
		return d
	}
	ci, diags := ap.ev.evalInstance(iv)
	if diags.HasErrors() {
		return diags
	}
	return append(diags, ap.applyInstances(ctx, iv.block, b, []*configInstance{ci})...)
}

// settled publishes the value of an instance that this apply does not
// create or update (no change, a no-op, a delete, or outside -target) and
// reports true; it reports false for one to apply.
func (ap *applier) settled(key string, b *blockValues, k addrs.InstanceKey, addr string) (bool, hcl.Diagnostics) {
	c := ap.changes[addr]
	switch {
	case c == nil || !ap.filter.instance(addr):
		obj, _ := ap.object(addr)
		schema := ap.cg.schemas[ap.e.module.Resources[key].Addr.Type]
		// An instance outside -target is not evaluated: what its last
		// change hid is in its state.
		sens := instanceSensitive(schema.Block, nil)
		if obj != nil {
			sens = unionSorted(sens, obj.SensitiveAttrs)
		}
		if c != nil {
			sens = unionSorted(sens, c.SensitiveAttrs)
		}
		b.set(k, MarkSensitive(valueFromState(obj, schema), sens))
	case c.Action == plans.NoOp || c.Action == plans.Delete:
		b.set(k, MarkSensitive(c.Before, c.SensitiveAttrs))
		if obj, ok := ap.object(addr); ok && c.Action == plans.NoOp && !slices.Equal(obj.SensitiveAttrs, c.SensitiveAttrs) {
			// What the plan hid changed (or state predates keeping it):
			// the record says so now, without a provider call.
			cp := *obj
			cp.SensitiveAttrs = c.SensitiveAttrs
			if err := ap.store(&cp); err != nil {
				return true, hcl.Diagnostics{tfdiags.FromError("Cannot store "+addr, err, "")}
			}
		}
	default:
		return false, nil
	}
	return true, nil
}

// applyInstances applies instances of block key, as many at once as the
// engine's parallelism allows, publishing each result in b.
func (ap *applier) applyInstances(ctx context.Context, key string, b *blockValues, cis []*configInstance) hcl.Diagnostics {
	if len(cis) == 0 {
		return nil
	}
	prov, diags := ap.e.provider(ctx, sdk.ProviderNameOf(ap.e.module.Resources[key].Addr.Type))
	if diags.HasErrors() {
		return diags
	}
	var mu sync.Mutex
	if err := forEachParallel(ctx, ap.limiterFor(ctx, ap.e.module.Resources[key].Addr.Type), len(cis), func(i int) string { return cis[i].Node.Key() }, func(i int) {
		ci := cis[i]
		c := ap.changes[ci.Addr]
		ap.reached(ap.created, ci.Addr)
		val, d := ap.applyInstance(ctx, prov, key, ci, c)
		if val != cty.NilVal {
			b.set(ci.Key, MarkSensitive(val, c.SensitiveAttrs))
		}
		ap.done(c)
		mu.Lock()
		diags = append(diags, d...)
		mu.Unlock()
	}); err != nil {
		diags = append(diags, tfdiags.FromError("Apply interrupted", err, ""))
	}
	return diags
}

// limiterFor is the limiter that bounds applies and deletes of typeName.
// A type whose schema cannot be had is bounded by the parallelism: the
// call that follows reports why.
func (ap *applier) limiterFor(ctx context.Context, typeName string) gate {
	if ap.local(ctx, typeName) {
		return ap.localLim
	}
	return ap.lim
}

// local says typeName's applies and deletes reach no node
// (sdk.ResourceSchema.LocalApply). A type whose schema cannot be had is
// treated as reaching one.
func (ap *applier) local(ctx context.Context, typeName string) bool {
	if v, ok := ap.localTypes.Load(typeName); ok {
		return v.(bool)
	}
	s, err := ap.e.schemaFor(ctx, typeName)
	if err != nil {
		return false // not kept: the call that follows reports why
	}
	ap.localTypes.Store(typeName, s.LocalApply)
	return s.LocalApply
}

// applyInstance creates, updates or replaces one instance as change c
// says: one provider call plans it again with what is known now, checks
// that plan against the reviewed one and only then applies it
// (sdk.PlanAndApply); the result is stored. It returns the value
// dependents see.
func (ap *applier) applyInstance(ctx context.Context, prov sdk.Provider, key string, ci *configInstance, c *plans.ResourceChange) (cty.Value, hcl.Diagnostics) {
	r := ap.e.module.Resources[key]
	schema := ap.cg.schemas[r.Addr.Type]
	ty := ap.cg.types[r.Addr.Type]
	rng := r.DeclRange
	if c.Action == plans.CreateThenDelete {
		// The old object steps aside under a deposed address until the
		// new one is in place; then its destroy step removes it.
		if err := ap.moveToDeposed(c.Addr); err != nil {
			return cty.NilVal, hcl.Diagnostics{tfdiags.FromError("Cannot depose "+c.Addr, err, "")}
		}
	}
	prior, priorPrivate := c.Before, c.PriorPrivate
	if c.Action != plans.Update {
		prior, priorPrivate = cty.NullVal(ty), nil
	}
	cfg := applyIgnoreChanges(ci.Config, c.Before, r.Lifecycle.IgnoreAllChanges, r.Lifecycle.IgnoreChanges, schema.Block)
	// The intent is written before the provider plans: it records the
	// reviewed value completed with the configuration known now, which
	// holds what recovery needs to find an interrupted create on its node
	// (its identity attributes come from configuration).
	obj := &stateObject{Addr: ci.Addr, Resource: key, Type: r.Addr.Type, Provider: c.Provider, Node: ci.Node,
		Private: c.PlannedPrivate, Dependencies: ap.cg.resourceDeps[key], SchemaVersion: schema.Version, SensitiveAttrs: c.SensitiveAttrs}
	intent := func() cty.Value { return intentValue(c.After, cfg) }
	var pr sdk.PlanApplyResponse
	var secretsOf func() []string // nil: nothing to redact progress of
	if len(c.SensitiveAttrs)+len(c.PriorSensitiveAttrs) > 0 {
		secretsOf = func() []string { return secretStrings(c.BeforeSensitive(), c.Before, cfg) }
	}
	resp, err := ap.callApply(ctx, obj, intent, ci.Addr, string(c.Action), secretsOf, func(ctx context.Context, started func(time.Time), progress func(sdk.Progress)) sdk.ApplyResponse {
		pr = sdk.PlanAndApply(ctx, prov, sdk.PlanApplyRequest{TypeName: r.Addr.Type, Address: ci.Addr, Node: ci.Node,
			Prior: prior, PriorPrivate: priorPrivate, Config: cfg, Replaces: replacesOf(c), Reviewed: c.After}, started, progress)
		return pr.ApplyResponse
	})
	var secrets []string
	if err != nil || len(resp.Diagnostics) > 0 {
		secrets = secretStrings(c.BeforeSensitive(), c.Before, cfg)
	}
	if err != nil {
		return cty.NilVal, hcl.Diagnostics{tfdiags.Attach(errDiag("Cannot apply "+ci.Addr, redactString(err.Error(), secrets)), redactedError(err, secrets))}
	}
	diags := redact(sdkDiags(resp.Diagnostics, ci.Addr, r.Body, &rng), secrets)
	if resp.OutcomeUnknown {
		ap.count(ci.Addr, c.Action, true)
		return cty.NilVal, append(diags, keptIntent(ci.Addr))
	}
	if !pr.Applied {
		// The apply never started: state stays as it was, the intent goes.
		if pr.PlanChanged {
			// What was reviewed is what runs: a value the plan knew may not differ now.
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Plan changed since it was made",
				Detail: fmt.Sprintf("%s: at apply time %s plans %s differently from the plan that was reviewed. Nothing was changed for this instance; run plan again to review the new values.",
					ci.Addr, c.Provider, sdk.DescribePath(pr.Changed)), Subject: &rng})
		}
		if !ap.local(ctx, r.Addr.Type) {
			if err := ap.e.store.DeleteIntent(ci.Addr); err != nil {
				diags = append(diags, tfdiags.FromError("Cannot clear the journal for "+ci.Addr, err, ""))
			}
		}
		return cty.NilVal, diags
	}
	return ap.storeApplied(obj, c, resp, ty, diags)
}

// resumesCreate reports whether typeName's schema says it resumes creates
// (sdk.ResourceSchema.ResumesCreate).
func (ap *applier) resumesCreate(typeName string) bool {
	s := ap.cg.schemas[typeName]
	return s != nil && s.ResumesCreate
}

// storeApplied stores what the provider left (an object that failed to
// create is kept tainted) and returns the value dependents see.
func (ap *applier) storeApplied(obj *stateObject, c *plans.ResourceChange, resp sdk.ApplyResponse, ty cty.Type, diags hcl.Diagnostics) (cty.Value, hcl.Diagnostics) {
	newVal := resp.NewState
	if newVal == cty.NilVal {
		newVal = cty.NullVal(ty)
	}
	if !newVal.IsNull() && !newVal.IsWhollyKnown() {
		newVal = unknownAsNull(newVal)
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Provider returned unknown values",
			Detail: fmt.Sprintf("provider %s left values unknown after applying %s; this is a bug in the provider. They are stored as null.", c.Provider, obj.Addr)})
	}
	// Kept by dependents and outputs to the walk's end.
	newVal = ap.e.types.share(obj.Type, newVal)
	obj.Value, obj.Private = newVal, resp.Private
	// A create that failed half done is tainted (replaced by the next
	// plan), unless its type resumes creates: then the next plan converges
	// what was made in place (a model snapshot whose link was cut keeps
	// the bytes it has).
	obj.Tainted = resp.Diagnostics.HasErrors() && c.Action != plans.Update && !newVal.IsNull() && !ap.resumesCreate(obj.Type)
	serr := ap.store(obj)
	if serr != nil {
		diags = append(diags, tfdiags.FromError("Cannot store "+obj.Addr, serr,
			"\n\nThe provider's result is not in state and is not counted; the journal still records the instance, so the next plan refreshes it from its node."))
	}
	ap.count(obj.Addr, c.Action, resp.Diagnostics.HasErrors() || serr != nil)
	if newVal.IsNull() {
		return cty.UnknownVal(ty), diags
	}
	return newVal, diags
}

// callApply brackets one provider call that changes inst's node with a
// journal intent, durable before the call, and reports progress under
// addr. The intent records intent() as inst's value when intent is not
// nil (it is built only when an intent is written). call makes the
// provider call; it calls started with the moment the change started (a
// plan-and-apply may refuse before: then no apply events). secrets, when
// not nil, are the sensitive strings progress messages are redacted of
// (found at the first message).
func (ap *applier) callApply(ctx context.Context, inst *stateObject, intent func() cty.Value, addr, action string, secrets func() []string,
	call func(ctx context.Context, started func(at time.Time), progress func(sdk.Progress)) sdk.ApplyResponse) (sdk.ApplyResponse, error) {
	h := ap.e.hooks
	// A call that reaches no node changes nothing a crash could leave
	// uncertain: a lost result is planned again from state. It writes no
	// intent and waits for no commit; its result rides in the next commit
	// (a 10,000-instance apply of sparkform_data made ~90 commits of
	// intents and results; without intents its results share a few).
	journaled := !ap.local(ctx, inst.Type)
	if journaled {
		if intent != nil {
			inst.Value = intent()
		}
		if err := ap.putIntent(inst, action); err != nil {
			return sdk.ApplyResponse{}, err
		}
	}
	pa := plans.Action(action)
	if action == "delete" {
		pa = plans.Delete
	}
	var start time.Time
	var secretsOnce sync.Once
	var found []string
	// An operation in flight is never cut off by the caller's cancellation
	// (Ctrl-C): it finishes, or stops early through Provider.Stop, and
	// reports the state really left on the node, which is then saved.
	resp := call(context.WithoutCancel(ctx), func(at time.Time) {
		start = at
		h.PreApply(addr, pa)
	}, func(p sdk.Progress) {
		if p.Elapsed == 0 {
			p.Elapsed = time.Since(start)
		}
		if secrets != nil && p.Message != "" {
			secretsOnce.Do(func() { found = secrets() })
			p.Message = redactString(p.Message, found)
		}
		h.Progress(addr, p)
	})
	if !start.IsZero() {
		if oh, ok := h.(ObjectHooks); ok && !resp.OutcomeUnknown && !resp.Diagnostics.HasErrors() {
			oh.AppliedObject(addr, resp.NewState)
		}
		h.PostApply(addr, pa, time.Since(start), resp.Diagnostics.Err())
	}
	if resp.OutcomeUnknown && !journaled {
		// A provider that says its local call may have done something
		// gets the journal's recovery all the same, late as it is.
		if intent != nil {
			inst.Value = intent()
		}
		if err := ap.putIntent(inst, action); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// putIntent journals the provider call about to change inst, durably.
func (ap *applier) putIntent(inst *stateObject, action string) error {
	intent, err := newIntent(inst, action)
	if err != nil {
		return err
	}
	if err := ap.e.store.PutIntent(intent); err != nil {
		return fmt.Errorf("writing the journal intent: %w", err)
	}
	return nil
}

// store writes the instance's result (a null value removes the record)
// and clears its journal intent.
func (ap *applier) store(inst *stateObject) error {
	gone := inst.Value == cty.NilVal || inst.Value.IsNull()
	var rec *state.Resource
	if !gone {
		var err error
		if rec, err = inst.record(); err != nil {
			return err
		}
	}
	// One commit stores the result and clears the intent. It is queued,
	// not waited for: it is durable before any later intent (a dependent's
	// included), and Apply flushes it at the end. A crash before then
	// leaves the intent, which the next plan recovers.
	if err := ap.e.store.Complete(inst.Addr, rec); err != nil {
		return err
	}
	ap.mu.Lock()
	delete(ap.objs, inst.Addr)
	ap.mu.Unlock()
	return nil
}

// done lets go of the values of change c once its create or update has
// been carried out (or refused): nothing reads them again. A replacement
// keeps them for its destroy step.
func (ap *applier) done(c *plans.ResourceChange) {
	if c.Action.IsReplace() {
		return
	}
	c.Before, c.After, c.PriorPrivate, c.PlannedPrivate = cty.NilVal, cty.NilVal, nil, nil
}

// reached records that the walk reached addr's create or delete.
func (ap *applier) reached(set map[string]bool, addr string) {
	ap.mu.Lock()
	set[addr] = true
	ap.mu.Unlock()
}

// unreached is an error per change of the plan that a walk without
// errors did not carry out: a plan file whose change the configuration
// does not make (an instance key it does not have, a change outside the
// plan's own targets). Apply reports it instead of success.
func (ap *applier) unreached() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, c := range ap.plan.Changes {
		var missed []string
		if (c.Action == plans.Create || c.Action == plans.Update || c.Action.IsReplace()) && !ap.created[c.Addr] {
			missed = append(missed, "its "+map[bool]string{true: "create", false: "update"}[c.Action != plans.Update])
		}
		if (c.Action == plans.Delete || c.Action.IsReplace()) && !ap.deleted[c.Addr] {
			missed = append(missed, "its delete")
		}
		if len(missed) > 0 {
			diags = append(diags, errDiag("Planned change not carried out",
				fmt.Sprintf("The plan would %s %s, but %s was not carried out: the configuration does not make this instance (or the plan file was changed after it was made). Everything else in the plan was applied; run plan to see what is left.",
					c.Action, c.Addr, strings.Join(missed, " and "))))
		}
	}
	return diags
}

func (ap *applier) object(addr string) (*stateObject, bool) {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	in, ok := ap.objs[addr]
	return in, ok
}

func (ap *applier) moveToDeposed(addr string) error {
	ap.mu.Lock()
	in, ok := ap.objs[addr]
	ap.mu.Unlock()
	if !ok {
		return nil
	}
	cp := *in
	cp.Addr = addr + deposedSuffix
	if err := ap.e.putObject(&cp); err != nil {
		return err
	}
	ap.mu.Lock()
	ap.objs[cp.Addr] = &cp // its destroy step reads it
	ap.mu.Unlock()
	return ap.e.store.DeleteResource(addr)
}

// count counts addr's result under a unless the call failed or its
// result was not stored: the summary counts what state holds.
func (ap *applier) count(addr string, a plans.Action, failed bool) {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	if failed {
		ap.notCounted(addr)
		return
	}
	ap.res.Applied[a]++
}

// notCounted records that addr's result is not in Applied (ap.mu held).
func (ap *applier) notCounted(addr string) {
	if ap.uncounted == nil {
		ap.uncounted = map[string]bool{}
	}
	ap.uncounted[addr] = true
}

// uncountUnstored takes back from Applied the results that a failed
// Flush lost: Complete clears an instance's intent in the same write as
// its result, so an intent still in the journal for a counted address is
// a result that state does not hold. (The results of types that write no
// intent are planned again from state; a lost one is not seen here.)
func (ap *applier) uncountUnstored() {
	intents, err := ap.e.store.Intents()
	if err != nil {
		return
	}
	ap.mu.Lock()
	defer ap.mu.Unlock()
	for _, in := range intents {
		if ap.uncounted[in.Address] {
			continue
		}
		a := plans.Delete
		if in.Action != "delete" {
			c := ap.changes[in.Address]
			if c == nil {
				continue
			}
			a = c.Action
		}
		if ap.res.Applied[a] > 0 {
			ap.res.Applied[a]--
		}
		ap.notCounted(in.Address)
	}
}

// replacesOf is the object a replacement's create takes the place of.
func replacesOf(c *plans.ResourceChange) cty.Value {
	if c.Action.IsReplace() {
		return c.Before
	}
	return cty.NilVal
}
