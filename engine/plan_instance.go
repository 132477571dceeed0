// This file holds the planning of resource instances: the planner that a
// normal plan's walk calls for a block walked whole (planBlock) and for
// one instance vertex (planInstanceVertex); both plan through
// planInstances and planInstance, the one per-instance path.

package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/providers/sdk"
)

// planner plans every resource instance of one walk.
type planner struct {
	e       *Engine
	plan    *plans.Plan // whose nodes the changes share (Plan.Node)
	cg      *configGraph
	ev      *evaluator
	prior   map[string]*stateObject
	replace map[string]bool
	filter  *targetFilter
	left    *leftNodes // nodes left out (-exclude-unreachable)

	// lim bounds the nodes with plans in flight (-parallelism).
	lim *nodeLimiter
	// localLim bounds the plans of types whose plans reach no node
	// (sdk.ResourceSchema.LocalPlan): wider than lim, so that more plan
	// items are in flight and share the plugin session's messages
	// (localParallelism).
	localLim limiter
	// offline: -refresh=false, providers reach no node.
	offline bool

	mu      sync.Mutex
	changes []*plans.ResourceChange
	seen    map[string]bool // instance addresses planned
}

func newPlanner(e *Engine, p *plans.Plan, in *planInputs, opts PlanOptions) *planner {
	replace := map[string]bool{}
	for _, r := range opts.Replace {
		replace[r.String()] = true
	}
	return &planner{e: e, plan: p, cg: in.cg, ev: in.ev, prior: in.prior, replace: replace, filter: in.filter, left: in.left,
		lim: newNodeLimiter(e.parallelism), localLim: e.localLimiter(),
		offline: opts.SkipRefresh, seen: map[string]bool{}}
}

// planBlock plans a resource block walked whole: its instance keys are
// known only now.
func (pl *planner) planBlock(ctx context.Context, key string) hcl.Diagnostics {
	cis, b, diags := pl.ev.expandResource(key, pl.filter.instance)
	if diags.HasErrors() {
		return diags
	}
	return append(diags, pl.planInstances(ctx, key, b, cis)...)
}

// planInstanceVertex plans one instance of a statically expanded block.
func (pl *planner) planInstanceVertex(ctx context.Context, iv *instanceVertex) hcl.Diagnostics {
	ci, diags := pl.ev.evalInstance(iv)
	if diags.HasErrors() {
		return diags
	}
	return append(diags, pl.planInstances(ctx, iv.block, pl.ev.resourceValues(iv.block), []*configInstance{ci})...)
}

// planInstances plans instances of block key, as many at once as the
// engine's parallelism allows.
func (pl *planner) planInstances(ctx context.Context, key string, b *blockValues, cis []*configInstance) hcl.Diagnostics {
	prov, diags := pl.e.provider(ctx, sdk.ProviderNameOf(pl.e.module.Resources[key].Addr.Type))
	if diags.HasErrors() {
		return diags
	}
	var lim gate = pl.lim
	if s := pl.cg.schemas[pl.e.module.Resources[key].Addr.Type]; s != nil && s.LocalPlan {
		lim = pl.localLim
	}
	var mu sync.Mutex
	if err := forEachParallel(ctx, lim, len(cis), func(i int) string { return cis[i].Node.Key() }, func(i int) {
		d := pl.planInstance(ctx, prov, key, b, cis[i])
		mu.Lock()
		diags = append(diags, d...)
		mu.Unlock()
	}); err != nil {
		diags = append(diags, tfdiags.FromError("Planning interrupted", err, ""))
	}
	return diags
}

// planInstance plans one instance, records its change and publishes the
// value dependents see in b.
func (pl *planner) planInstance(ctx context.Context, prov sdk.Provider, key string, b *blockValues, ci *configInstance) hcl.Diagnostics {
	if pl.left.skip(ci.Node, ci.Addr) {
		// On a node left out: not planned, and not deleted as an orphan.
		// Dependents see what state records (unknown when nothing).
		pl.mu.Lock()
		pl.seen[ci.Addr] = true
		pl.mu.Unlock()
		v := cty.UnknownVal(pl.cg.types[pl.e.module.Resources[key].Addr.Type])
		if prior := pl.prior[ci.Addr]; prior != nil {
			v = MarkSensitive(prior.Value, prior.SensitiveAttrs)
		}
		b.set(ci.Key, v)
		return nil
	}
	ch, diags := pl.planChange(ctx, prov, key, ci)
	if ch == nil {
		return diags
	}
	pl.mu.Lock()
	pl.changes = append(pl.changes, ch)
	pl.seen[ci.Addr] = true
	pl.mu.Unlock()
	b.set(ci.Key, MarkSensitive(ch.After, ch.SensitiveAttrs))
	return diags
}

// planChange asks the provider for the planned value of one instance and
// decides its action.
func (pl *planner) planChange(ctx context.Context, prov sdk.Provider, key string, ci *configInstance) (*plans.ResourceChange, hcl.Diagnostics) {
	r := pl.e.module.Resources[key]
	schema := pl.cg.schemas[r.Addr.Type]
	rng := r.DeclRange
	// No separate ValidateResourceConfig call per instance: providers
	// validate the config inside PlanResourceChange (sdk.Router does), which
	// saves one RPC per instance.
	var diags hcl.Diagnostics
	ty := pl.cg.types[r.Addr.Type]
	prior := pl.prior[ci.Addr]
	priorVal := cty.NullVal(ty)
	var priorPrivate []byte
	var priorStored sdk.Stored
	if prior != nil {
		priorVal, priorPrivate, priorStored = prior.Value, prior.Private, prior.sdkStored()
	}
	cfg := applyIgnoreChanges(ci.Config, priorVal, r.Lifecycle.IgnoreAllChanges, r.Lifecycle.IgnoreChanges, schema.Block)
	planned, replacePaths, plannedPrivate, unchanged, d := planCall(ctx, prov, r.Addr.Type, ci, priorVal, priorStored, priorPrivate, cfg, cty.NilVal, pl.offline)
	notes, d := planNotes(d)
	// What the provider says may quote a value: not a sensitive one.
	var secrets []string
	if len(d) > 0 || len(notes) > 0 {
		paths := instanceSensitive(schema.Block, ci.SensitiveAttrs)
		if prior != nil {
			paths = append(slices.Clip(paths), prior.SensitiveAttrs...)
		}
		secrets = secretStrings(paths, cfg, priorVal)
		for i := range notes {
			notes[i] = redactString(notes[i], secrets)
		}
	}
	diags = append(diags, redact(sdkDiags(d, ci.Addr, r.Body, &rng), secrets)...)
	if d.HasErrors() {
		return nil, diags
	}
	if !unchanged {
		planned = pl.e.types.share(r.Addr.Type, planned) // kept to the apply's end
	}
	ch := &plans.ResourceChange{
		Addr: ci.Addr, Resource: key, Type: r.Addr.Type, Provider: sdk.ProviderNameOf(r.Addr.Type), Node: pl.plan.Node(ci.Node),
		Before: priorVal, After: planned, RequiresReplace: replacePaths, PriorPrivate: priorPrivate,
		PlannedPrivate: plannedPrivate, Dependencies: pl.cg.resourceDeps[key], SchemaVersion: schema.Version,
		CreateBeforeDestroy: r.Lifecycle.CreateBeforeDestroy,
		SensitiveAttrs:      instanceSensitive(schema.Block, ci.SensitiveAttrs),
		Notes:               notes,
	}
	if prior != nil {
		ch.PriorNode, ch.PriorSensitiveAttrs = pl.plan.Node(prior.Node), prior.SensitiveAttrs
	}
	// A plan the provider kept as the prior sent, when that prior is
	// state's (decoded from its bytes: wholly known, unmarked), is that
	// value: equal without comparing.
	same := unchanged && prior != nil && prior.stored != nil
	ch.Action, ch.Reason = pl.action(r, prior, ci, replacePaths, planned, same)
	if !ch.Action.IsReplace() {
		return ch, diags
	}
	// What the new object will be: plan it as a create.
	np, _, npriv, _, d := planCall(ctx, prov, r.Addr.Type, ci, cty.NullVal(ty), sdk.Stored{}, nil, cfg, priorVal, pl.offline)
	more, d := planNotes(d)
	if len(d) > 0 || len(more) > 0 {
		secrets = secretStrings(ch.SensitiveAttrs, cfg)
		for i := range more {
			more[i] = redactString(more[i], secrets)
		}
	}
	ch.Notes = append(ch.Notes, more...)
	diags = append(diags, redact(sdkDiags(d, ci.Addr, r.Body, &rng), secrets)...)
	if d.HasErrors() {
		return nil, diags
	}
	ch.After, ch.PlannedPrivate = np, npriv
	return ch, diags
}

// action decides what a change does to prior, and why when the reason is
// not plain from the values.
// same says planned is prior's value itself.
func (pl *planner) action(r *config.Resource, prior *stateObject, ci *configInstance, replacePaths []cty.Path, planned cty.Value, same bool) (plans.Action, string) {
	replace := plans.DeleteThenCreate
	if r.Lifecycle.CreateBeforeDestroy {
		replace = plans.CreateThenDelete
	}
	switch {
	case prior == nil:
		return plans.Create, ""
	case prior.Tainted:
		return replace, "tainted: an earlier apply did not finish creating it"
	case pl.replace[ci.Addr]:
		return replace, "replacement requested with -replace"
	case len(replacePaths) > 0:
		return replace, ""
	case nodeIdentity(prior.Node) != nodeIdentity(ci.Node):
		return replace, fmt.Sprintf("it moves from %s to %s", nodeLabel(prior.Node), nodeLabel(ci.Node))
	case same || sdk.ValuesEqual(prior.Value, planned):
		return plans.NoOp, ""
	}
	return plans.Update, ""
}

// planCall asks prov for one instance's planned value from prior;
// replaces is the object a replacement's create takes the place of
// (cty.NilVal: none).
// priorStored is prior's stored form, when it is the value state holds;
// unchanged says the planned value is prior as sent (sdk.PlanResponse).
func planCall(ctx context.Context, prov sdk.Provider, typeName string, ci *configInstance, prior cty.Value, priorStored sdk.Stored, priorPrivate []byte, cfg cty.Value, replaces cty.Value, offline bool) (planned cty.Value, replacePaths []cty.Path, plannedPrivate []byte, unchanged bool, diags sdk.Diagnostics) {
	if replaces == cty.NilVal {
		replaces = cty.NullVal(prior.Type())
	}
	// Proposed is left to the provider side: sdk.ProposedNew(schema, prior,
	// cfg), computed there from the same schema, one value less to encode
	// and decode per call.
	resp := prov.PlanResourceChange(ctx, sdk.PlanRequest{
		TypeName: typeName, Address: ci.Addr, Node: ci.Node, Prior: prior, PriorStored: priorStored, Config: cfg,
		PriorPrivate: priorPrivate, Replaces: replaces, Offline: offline,
	})
	if resp.Diagnostics.HasErrors() {
		return cty.NilVal, nil, nil, false, resp.Diagnostics
	}
	if resp.Planned == cty.NilVal || resp.Planned.IsNull() {
		return cty.NilVal, nil, nil, false, append(resp.Diagnostics, sdk.Errorf(nil, "Provider produced an invalid plan",
			"provider planned a null value for %s, which is not being destroyed; this is a bug in the provider", ci.Addr))
	}
	return resp.Planned, resp.RequiresReplace, resp.PlannedPrivate, resp.Unchanged, resp.Diagnostics
}

// planNotes splits a provider's plan diagnostics: warnings are notes on
// the planned change (what it displaces, shown with it), the rest stay.
func planNotes(ds sdk.Diagnostics) ([]string, sdk.Diagnostics) {
	var notes []string
	var rest sdk.Diagnostics
	for _, d := range ds {
		if d.Severity != sdk.Warning {
			rest = append(rest, d)
			continue
		}
		n := d.Summary
		if d.Detail != "" {
			n += "; " + d.Detail
		}
		notes = append(notes, n)
	}
	return notes, rest
}
