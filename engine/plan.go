// This file holds Engine.Plan: what every plan mode starts from (state,
// the journal, the configuration, the nodes reached, refresh), and the
// dispatch to the mode's own function: planNormal (plan_normal.go),
// planDestroy (plan_destroy.go), or nothing more for refresh-only.

package engine

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// Plan refreshes the state (unless told not to) and computes the changes
// that would make the nodes match the configuration.
func (e *Engine) Plan(ctx context.Context, opts PlanOptions) (*plans.Plan, hcl.Diagnostics) {
	if opts.Mode == "" {
		opts.Mode = plans.NormalMode
	}
	if opts.Mode == plans.DestroyMode {
		// Neither this plan nor its apply decodes a resource body (a
		// later walk on this engine parses them again).
		e.releaseBodies()
	}
	p := &plans.Plan{Mode: opts.Mode, Created: time.Now().UTC(), Variables: opts.Variables,
		Targets: targetStrings(opts.Targets), Replace: replaceStrings(opts.Replace), Outputs: map[string]*plans.OutputChange{}}
	p.ExcludeUnreachable = opts.ExcludeUnreachable
	in, diags := e.planInputs(ctx, opts, p)
	if diags.HasErrors() {
		return nil, diags
	}
	switch opts.Mode {
	case plans.RefreshOnlyMode:
		p.Sort()
	case plans.DestroyMode:
		diags = append(diags, e.planDestroy(in, p)...)
	default:
		p, diags = e.planNormal(ctx, in, opts, p, diags)
	}
	if p != nil {
		in.left.record(p, in.prior)
		e.markSummaries(ctx, p)
	}
	if len(opts.Targets) > 0 {
		diags = append(diags, targetingWarning())
	}
	return p, diags
}

// markSummaries sets each change's and drift's SummaryAttrs from its
// type's schema (sdk.SummarizedAttrs): one schema lookup per type, one
// shared slice per type. A type whose schema cannot be had (its provider
// gone) keeps none: its lists are then shown element by element.
func (e *Engine) markSummaries(ctx context.Context, p *plans.Plan) {
	byType := map[string][]string{}
	of := func(typeName string) []string {
		attrs, ok := byType[typeName]
		if !ok {
			if s, err := e.schemaFor(ctx, typeName); err == nil {
				attrs = s.SummarizedAttrs()
			}
			byType[typeName] = attrs
		}
		return attrs
	}
	for _, c := range p.Changes {
		c.SummaryAttrs = of(c.Type)
	}
	for _, d := range p.Drift {
		d.SummaryAttrs = of(d.Type)
	}
}

// planInputs is what every plan mode starts from.
type planInputs struct {
	filter *targetFilter
	// cg and ev are nil when the configuration has errors (a destroy or
	// refresh-only plan goes on without it).
	cg *configGraph
	ev *evaluator
	// prior is the state as refresh found it.
	prior map[string]*stateObject
	// left are the nodes left out (-exclude-unreachable).
	left *leftNodes
}

// planInputs reads state and the journal, evaluates what the
// configuration knows before the walk, reaches the nodes and refreshes.
// It fills in the plan's notes, drift, lineage and serial.
func (e *Engine) planInputs(ctx context.Context, opts PlanOptions, p *plans.Plan) (*planInputs, hcl.Diagnostics) {
	filter := newTargetFilter(opts.Targets)
	var diags hcl.Diagnostics
	objs, recovered, d := e.priorState(p)
	if diags = append(diags, d...); d.HasErrors() {
		return nil, diags
	}
	if len(recovered) > 0 {
		e.resumeCreates(ctx, objs)
	}
	if d := e.planMoves(objs, p); d.HasErrors() {
		return nil, append(diags, d...)
	}
	cg, ev, d := e.planConfig(ctx, opts)
	if opts.Mode == plans.NormalMode {
		if diags = append(diags, d...); d.HasErrors() {
			return nil, diags
		}
	}
	left, d := e.reachNodes(ctx, opts, ev, objs)
	if diags = append(diags, d...); d.HasErrors() {
		return nil, diags
	}
	// What is on a node left out is not read, nor (with -target, which
	// checks no node, so none is left out) what the plan does not touch:
	// state's record stands.
	reachable, kept := left.split(objs)
	reachable, unread := filter.reads(reachable, opts.Mode, cg, recovered)
	prior, drift, d := e.refreshForPlan(ctx, reachable, recovered, opts.SkipRefresh)
	if diags = append(diags, d...); d.HasErrors() {
		return nil, diags
	}
	maps.Copy(prior, kept)
	maps.Copy(prior, unread)
	p.Drift = drift
	diags = append(diags, e.settleIntents(recovered, prior, p)...)
	meta, err := e.store.Meta()
	if err != nil {
		return nil, append(diags, tfdiags.FromError("Cannot read state", err, ""))
	}
	p.Lineage, p.Serial = meta.Lineage, meta.Serial
	return &planInputs{filter: filter, cg: cg, ev: ev, prior: prior, left: left}, diags
}

// priorState reads every object in state, and turns the journal's intents
// (an apply that was interrupted) into objects to refresh.
func (e *Engine) priorState(p *plans.Plan) (map[string]*stateObject, map[string]*state.Intent, hcl.Diagnostics) {
	objs, diags := e.loadState()
	if diags.HasErrors() {
		return nil, nil, diags
	}
	intents, err := e.store.Intents()
	if err != nil {
		return nil, nil, append(diags, tfdiags.FromError("Cannot read the state journal", err, ""))
	}
	return objs, e.recoverIntents(intents, objs, p), diags
}

// planConfig builds the configuration's graph and evaluates, before the
// walk, what needs no resource: locals, nodes and instance keys.
func (e *Engine) planConfig(ctx context.Context, opts PlanOptions) (*configGraph, *evaluator, hcl.Diagnostics) {
	if opts.Mode == plans.DestroyMode {
		return e.nodeConfig(ctx, opts)
	}
	cg, diags := e.buildConfigGraph(ctx)
	if diags.HasErrors() {
		return nil, nil, diags
	}
	ev := newEvaluator(e.module, cg, opts.Variables)
	return cg, ev, append(diags, e.expandStatic(cg, ev)...)
}

// nodeConfig evaluates what a destroy plan reads of the configuration:
// its node blocks (reachNodes points state's objects at them) and the
// locals and variables they use. Resource blocks are vertices without
// references, their bodies never decoded: no resource has a value before
// the walk, so whatever refers to one stays unevaluated as in a full
// graph, and the full graph's decoding and reference parsing was ~0.2 CPU
// s of a 10,000-block destroy. A resource body's own error (a bad
// reference) no longer keeps the nodes from being evaluated either.
func (e *Engine) nodeConfig(ctx context.Context, opts PlanOptions) (*configGraph, *evaluator, hcl.Diagnostics) {
	cg := &configGraph{g: newVGraph(), decoders: &config.Decoders{}}
	parsed, diags := cg.addValueBlocks(e.module)
	for key := range e.module.Resources {
		cg.g.add(resourceV(key))
	}
	if diags.HasErrors() {
		return nil, nil, diags
	}
	if diags = append(diags, cg.connectReferences(e.module, parsed)...); diags.HasErrors() {
		return nil, nil, diags
	}
	cg.refs = walkRefs(parsed)
	ev := newEvaluator(e.module, cg, opts.Variables)
	return cg, ev, append(diags, evalStatic(cg, ev, nil)...)
}

// reachNodes points state's objects at their nodes as the configuration
// describes them now, then reaches every node the plan touches once,
// before anything is read: a node that cannot be reached fails the plan
// here, pointing at its node block, not at a later apply.
// With opts.ExcludeUnreachable a node that cannot be reached is left out
// instead (a warning each); left is nil when none is.
func (e *Engine) reachNodes(ctx context.Context, opts PlanOptions, ev *evaluator, objs map[string]*stateObject) (*leftNodes, hcl.Diagnostics) {
	var cfgNodes map[string]sdk.Node
	if ev != nil {
		cfgNodes = ev.nodeInstances()
		repointNodes(cfgNodes, objs)
	}
	if opts.SkipRefresh || len(opts.Targets) > 0 {
		return nil, nil
	}
	if opts.Mode != plans.NormalMode {
		cfgNodes = nil
	}
	left, diags := e.checkNodes(ctx, cfgNodes, objs, opts.DialledAhead, opts.ExcludeUnreachable)
	if len(left) == 0 {
		return nil, diags
	}
	return &leftNodes{byKey: left}, diags
}

// repointNodes makes each object reach its node the way the configuration
// says now (a new address, key or known_hosts file), not the way state
// last recorded it; only for the same machine: a node whose address
// changed is planned as a move, and the old object is deleted where it is.
func repointNodes(nodes map[string]sdk.Node, objs map[string]*stateObject) {
	for _, in := range objs {
		if n, ok := nodes[in.Node.Name]; ok && nodeIdentity(n) == nodeIdentity(in.Node) {
			in.Node = n
		}
	}
}

// deleteChange is the change of plan p that deletes in.
func deleteChange(p *plans.Plan, in *stateObject, reason string) *plans.ResourceChange {
	node := p.Node(in.Node)
	return &plans.ResourceChange{
		Addr: in.Addr, Resource: in.Resource, Type: in.Type, Provider: in.Provider, Node: node, PriorNode: node,
		Action: plans.Delete, Reason: reason, Before: in.Value, After: cty.NullVal(in.Value.Type()),
		PriorPrivate: in.Private, Dependencies: in.Dependencies, SchemaVersion: in.SchemaVersion,
		SensitiveAttrs: in.SensitiveAttrs, PriorSensitiveAttrs: in.SensitiveAttrs,
	}
}

// checkPreventDestroy refuses a plan that deletes or replaces an instance
// whose block sets lifecycle.prevent_destroy.
func (e *Engine) checkPreventDestroy(p *plans.Plan) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, c := range p.Changes {
		if c.Action != plans.Delete && !c.Action.IsReplace() {
			continue
		}
		r, ok := e.module.Resources[c.Resource]
		if !ok || !r.Lifecycle.PreventDestroy {
			continue
		}
		rng := r.DeclRange
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Instance cannot be destroyed",
			Detail: fmt.Sprintf("%s has lifecycle.prevent_destroy set, but the plan would %s it. To go ahead, remove prevent_destroy first, or narrow the plan with -target.",
				c.Addr, map[bool]string{true: "replace", false: "destroy"}[c.Action.IsReplace()]),
			Subject: &rng})
	}
	return diags
}

// nodeIdentity is what makes two node values the same machine: a changed
// user, key or known_hosts file is a new way in, not a move.
func nodeIdentity(n sdk.Node) string {
	if n.Transport == "local" {
		return "local"
	}
	return fmt.Sprintf("%s://%s:%d", n.Transport, n.Host, n.Port)
}
