package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/graph"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// walkParallelism bounds how many graph vertices are in flight; provider
// calls are bounded separately by Engine.Parallelism.
const walkParallelism = 64

// targetFilter decides which blocks and instances a targeted plan touches.
type targetFilter struct {
	blocks    map[string]bool // vertices included (targets and what they need)
	instances map[string]bool // instance addresses named exactly
	whole     map[string]bool // resources targeted whole
	modules   []string        // module calls or instances targeted whole
}

func (f *targetFilter) vertex(v string) bool { return f == nil || f.blocks[v] || f.inModule(v) }

// inModule reports whether a resource or instance address lies in a
// targeted module.
func (f *targetFilter) inModule(addr string) bool {
	for _, m := range f.modules {
		if addrs.WithinModule(addr, m) {
			return true
		}
	}
	return false
}

func (f *targetFilter) instance(addr string) bool {
	if f == nil {
		return true
	}
	res := resourceOfInstance(addr)
	if f.whole[res] || f.instances[addr] || f.inModule(res) {
		return true
	}
	// Dependencies of a target are planned whole.
	return f.blocks[res] && !f.hasInstanceTargets(res)
}

func (f *targetFilter) hasInstanceTargets(res string) bool {
	for a := range f.instances {
		if resourceOfInstance(a) == res {
			return true
		}
	}
	return false
}

func parseTargets(targets []string) (*targetFilter, hcl.Diagnostics) {
	if len(targets) == 0 {
		return nil, nil
	}
	f := &targetFilter{blocks: map[string]bool{}, instances: map[string]bool{}, whole: map[string]bool{}}
	var diags hcl.Diagnostics
	for _, t := range targets {
		tg, d := addrs.ParseTargetAny(t)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if tg.Resource == nil {
			f.modules = append(f.modules, tg.Module)
			continue
		}
		res, key := *tg.Resource, tg.Key
		if key == nil {
			f.whole[res.String()] = true
		} else {
			f.instances[res.Instance(key).String()] = true
		}
	}
	return f, diags
}

// expand adds to the filter every block the targets depend on.
func (f *targetFilter) expand(cg *configGraph) {
	if f == nil {
		return
	}
	var stack []string
	for r := range f.whole {
		stack = append(stack, r)
	}
	for a := range f.instances {
		stack = append(stack, resourceOfInstance(a))
	}
	if cg != nil && len(f.modules) > 0 {
		for _, v := range cg.g.Vertices() {
			if isResourceVertex(v) && f.inModule(v) {
				stack = append(stack, v)
			}
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.blocks[v] {
			continue
		}
		f.blocks[v] = true
		if cg != nil {
			stack = append(stack, cg.g.DependsOn(v)...)
		}
	}
	if cg == nil {
		return
	}
	// Outputs (and the locals they use) that need nothing outside the
	// targets are evaluated too, so a targeted apply updates them.
	for grew := true; grew; {
		grew = false
		for _, v := range cg.g.Vertices() {
			if f.blocks[v] || !(strings.HasPrefix(v, "output.") || strings.HasPrefix(v, "local.")) {
				continue
			}
			all := true
			for _, d := range cg.g.DependsOn(v) {
				if !f.blocks[d] {
					all = false
					break
				}
			}
			if all {
				f.blocks[v], grew = true, true
			}
		}
	}
}

// Plan refreshes the state (unless told not to) and computes the changes
// that would make the nodes match the configuration.
func (e *Engine) Plan(ctx context.Context, opts PlanOptions) (*plans.Plan, hcl.Diagnostics) {
	if opts.Mode == "" {
		opts.Mode = plans.NormalMode
	}
	p := &plans.Plan{Mode: opts.Mode, Created: time.Now().UTC(), Variables: opts.Variables,
		Targets: opts.Targets, Replace: opts.Replace, Outputs: map[string]*plans.OutputChange{}}
	filter, diags := parseTargets(opts.Targets)
	for _, r := range opts.Replace {
		if _, d := addrs.ParseResourceInstance(r); d.HasErrors() {
			diags = append(diags, d...)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}

	insts, d := e.loadState()
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	intents, err := e.Store.Intents()
	if err != nil {
		return nil, append(diags, errDiag("Cannot read the state journal", err.Error()))
	}
	recovered := e.recoverIntents(intents, insts, p)

	// The configuration's graph, and before the walk, what needs no
	// resource: locals, nodes and instance keys. A destroy or refresh-only
	// plan goes on without it when the configuration has errors.
	cg, cgDiags := e.buildConfigGraph(ctx)
	var ev *evaluator
	if !cgDiags.HasErrors() {
		ev = newEvaluator(e.Module, cg, opts.Variables)
		cgDiags = append(cgDiags, e.expandStatic(cg, ev)...)
	}
	if opts.Mode == plans.NormalMode {
		diags = append(diags, cgDiags...)
		if cgDiags.HasErrors() {
			return nil, diags
		}
	}
	if ev != nil {
		// Reach each node the way the configuration says now (a new
		// address, key or known_hosts file), not the way state last
		// recorded it; only for the same machine: a node whose address
		// changed is planned as a move, and the old object is deleted
		// where it is.
		nodes := ev.nodeInstances()
		for _, in := range insts {
			if n, ok := nodes[in.Node.Name]; ok && nodeIdentity(n) == nodeIdentity(in.Node) {
				in.Node = n
			}
		}
	}

	// Every node the plan touches is reached once, before anything is
	// read: a node that cannot be reached fails the plan here, pointing
	// at its node block, not at a later apply.
	if !opts.SkipRefresh && len(opts.Targets) == 0 {
		var cfgNodes map[string]sdk.Node
		if ev != nil && opts.Mode == plans.NormalMode {
			cfgNodes = ev.nodeInstances()
		}
		if d := e.checkNodes(ctx, cfgNodes, insts); d.HasErrors() {
			return nil, append(diags, d...)
		}
	}

	var drift []*plans.Drift
	prior := insts
	if !opts.SkipRefresh || len(recovered) > 0 {
		toRead := insts
		if opts.SkipRefresh { // still refresh what a crash left uncertain
			toRead = map[string]*instance{}
			for a := range recovered {
				// An intent with no record anywhere has nothing to read.
				if in, ok := insts[a]; ok {
					toRead[a] = in
				}
			}
		}
		refreshed, dr, _, rd := e.refresh(ctx, toRead)
		diags = append(diags, rd...)
		if rd.HasErrors() {
			return nil, diags
		}
		if opts.SkipRefresh {
			merged := make(map[string]*instance, len(insts))
			for a, in := range insts {
				merged[a] = in
			}
			for a := range toRead {
				if in, ok := refreshed[a]; ok {
					merged[a] = in
				} else {
					delete(merged, a)
				}
			}
			refreshed = merged
		}
		prior = refreshed
		drift = dr
		diags = append(diags, e.settleIntents(recovered, prior, p)...)
	}
	p.Drift = drift

	meta, err := e.Store.Meta()
	if err != nil {
		return nil, append(diags, errDiag("Cannot read state", err.Error()))
	}
	p.Lineage, p.Serial = meta.Lineage, meta.Serial

	switch opts.Mode {
	case plans.RefreshOnlyMode:
		p.Sort()
		return p, diags
	case plans.DestroyMode:
		filter.expand(nil)
		for addr := range destroySet(prior, filter) {
			p.Changes = append(p.Changes, deleteChange(prior[addr], ""))
		}
		diags = append(diags, e.checkPreventDestroy(p)...)
		for name, before := range e.priorOutputs() {
			sens := false
			if o := e.Module.Outputs[name]; o != nil {
				sens = o.Sensitive
			}
			p.Outputs[name] = &plans.OutputChange{Before: before, After: cty.NullVal(cty.DynamicPseudoType), Sensitive: sens}
		}
		p.Sort()
		return p, diags
	}

	filter.expand(cg)
	replace := map[string]bool{}
	for _, r := range opts.Replace {
		replace[r] = true
	}
	priorOutputs := e.priorOutputs()
	pl := &planner{e: e, cg: cg, ev: ev, prior: prior, replace: replace, filter: filter, seen: map[string]bool{}, lim: make(limiter, e.parallelism()),
		offline: opts.SkipRefresh}
	g := cg.walkGraph(e.Module, filter.vertex, filter.instance)
	wd := e.walk(ctx, g, ev, walkFuncs{resource: pl.planResource, instance: pl.planVertex, output: func(name string, val cty.Value) {
		if o := e.Module.Outputs[name]; o != nil {
			before, ok := priorOutputs[name]
			if !ok {
				before = cty.NullVal(cty.DynamicPseudoType)
			}
			p.Outputs[name] = &plans.OutputChange{Before: before, After: val, Sensitive: o.Sensitive}
		}
	}})
	diags = append(diags, wd...)
	if diags.HasErrors() {
		return nil, diags
	}
	p.Changes = pl.changes
	// Orphans: in state, no longer produced by the configuration.
	for addr, in := range prior {
		if pl.seen[addr] || !filter.instance(addr) {
			continue
		}
		if filter != nil && !filter.blocks[in.Resource] {
			continue
		}
		reason := "no longer in the configuration"
		if _, ok := e.Module.Resources[in.Resource]; ok {
			reason = "its key is no longer produced by for_each/count"
		}
		if strings.HasSuffix(addr, deposedSuffix) {
			reason = "a deposed object left by an earlier create_before_destroy"
		}
		p.Changes = append(p.Changes, deleteChange(in, reason))
	}
	for _, a := range opts.Replace {
		if c := p.Change(a); c == nil || !c.Action.IsReplace() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Nothing to replace at " + a,
				Detail: fmt.Sprintf("-replace=%s names no existing instance this plan keeps, so it has no effect. `sparkform state list` shows the instances there are.", a)})
		}
	}
	diags = append(diags, e.checkPreventDestroy(p)...)
	diags = append(diags, e.checkCollisions(ctx, p)...)
	p.Sort()
	return p, diags
}

const deposedSuffix = "#deposed"

// destroySet is what a destroy plan deletes: every instance, or with
// -target the targets and, transitively, whatever state records as
// depending on them, so nothing is left pointing at a deleted object.
func destroySet(prior map[string]*instance, filter *targetFilter) map[string]bool {
	set := map[string]bool{}
	for addr, in := range prior {
		if filter == nil || filter.instance(addr) || filter.whole[in.Resource] {
			set[addr] = true
		}
	}
	if filter == nil {
		return set
	}
	for grew := true; grew; {
		grew = false
		gone := map[string]bool{}
		for addr := range set {
			gone[prior[addr].Resource] = true
		}
		for addr, in := range prior {
			if set[addr] {
				continue
			}
			for _, d := range in.Dependencies {
				if gone[d] {
					set[addr], grew = true, true
					break
				}
			}
		}
	}
	return set
}

func deleteChange(in *instance, reason string) *plans.ResourceChange {
	return &plans.ResourceChange{
		Addr: in.Addr, Resource: in.Resource, Type: in.Type, Provider: in.Provider, Node: in.Node, PriorNode: in.Node,
		Action: plans.Delete, Reason: reason, Before: in.Value, After: cty.NullVal(in.Value.Type()),
		PriorPrivate: in.Private, Dependencies: in.Dependencies, SchemaVersion: in.SchemaVersion,
	}
}

func (e *Engine) checkPreventDestroy(p *plans.Plan) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, c := range p.Changes {
		if c.Action != plans.Delete && !c.Action.IsReplace() {
			continue
		}
		r, ok := e.Module.Resources[c.Resource]
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

// subgraph copies the config graph, keeping only vertices keep accepts.
func (cg *configGraph) subgraph(keep func(string) bool) *graph.Graph {
	g := graph.New()
	for _, v := range cg.g.Vertices() {
		if !keep(v) {
			continue
		}
		g.Add(v)
		for _, d := range cg.g.DependsOn(v) {
			if keep(d) {
				g.Connect(v, d)
			}
		}
	}
	return g
}

// walk runs the configuration graph g: locals, nodes and outputs are
// evaluated here, resources by resourceFn, and any other vertex (apply's
// destroy steps) by extraFn.
// walkFuncs does the resource work of one walk; locals, nodes and outputs
// are evaluated by walk itself. Any of them may be nil.
type walkFuncs struct {
	// resource handles a block walked whole (keys known only in the walk).
	resource func(context.Context, string) hcl.Diagnostics
	// instance handles one instance vertex of a statically expanded block.
	instance func(context.Context, *instanceVertex) hcl.Diagnostics
	output   func(string, cty.Value)
	// destroy handles apply's destroy steps.
	destroy func(context.Context, string) hcl.Diagnostics
}

func (e *Engine) walk(ctx context.Context, g *graph.Graph, ev *evaluator, f walkFuncs) hcl.Diagnostics {
	var mu sync.Mutex
	var diags hcl.Diagnostics
	errs := g.Walk(ctx, walkParallelism, func(ctx context.Context, v string) error {
		var d hcl.Diagnostics
		switch {
		case strings.HasPrefix(v, "local."):
			d = ev.evalLocal(strings.TrimPrefix(v, "local."))
		case strings.HasPrefix(v, "node."):
			d = ev.evalNode(strings.TrimPrefix(v, "node."))
		case strings.HasPrefix(v, "output."):
			name := strings.TrimPrefix(v, "output.")
			val, od := ev.evalOutput(name)
			d = od
			if !od.HasErrors() && f.output != nil {
				mu.Lock()
				f.output(name, val)
				mu.Unlock()
			}
		case strings.HasPrefix(v, "destroy ") || strings.HasPrefix(v, "destroyall "):
			if f.destroy != nil {
				d = f.destroy(ctx, v)
			}
		case strings.HasPrefix(v, "instance "):
			d = f.instance(ctx, ev.cg.instances[v])
		default:
			if _, static := ev.cg.expansions[v]; !static && f.resource != nil {
				d = f.resource(ctx, v) // a static block's vertex only gathers its instances
			}
		}
		if len(d) > 0 {
			mu.Lock()
			diags = append(diags, d...)
			mu.Unlock()
		}
		if d.HasErrors() {
			return errFailed
		}
		return nil
	})
	for v, err := range errs {
		if err == errFailed || err == graph.ErrUpstreamFailed {
			continue
		}
		diags = append(diags, errDiag("Could not process "+v, err.Error()))
	}
	return diags
}

var errFailed = fmt.Errorf("failed")

// planner plans every resource instance of one walk.
type planner struct {
	e       *Engine
	cg      *configGraph
	ev      *evaluator
	prior   map[string]*instance
	replace map[string]bool
	filter  *targetFilter

	lim limiter
	// offline: -refresh=false, providers reach no node.
	offline bool

	mu      sync.Mutex
	changes []*plans.ResourceChange
	seen    map[string]bool
}

// planVertex plans one instance vertex.
func (pl *planner) planVertex(ctx context.Context, iv *instanceVertex) hcl.Diagnostics {
	e := pl.e
	r := e.Module.Resources[iv.Block]
	ri, diags := pl.ev.evalInstance(iv)
	if diags.HasErrors() {
		return diags
	}
	prov, err := e.Providers.Provider(ctx, sdk.ProviderNameOf(r.Addr.Type))
	if err != nil {
		return append(diags, errDiag("Cannot start provider "+sdk.ProviderNameOf(r.Addr.Type), err.Error()))
	}
	var ch *plans.ResourceChange
	var val cty.Value
	var d hcl.Diagnostics
	if err := pl.lim.do(ctx, func() { ch, val, d = pl.planInstance(ctx, prov, iv.Block, pl.cg.schemas[r.Addr.Type], ri) }); err != nil {
		return append(diags, errDiag("Planning interrupted", err.Error()))
	}
	diags = append(diags, d...)
	if ch != nil {
		pl.mu.Lock()
		pl.changes = append(pl.changes, ch)
		pl.seen[ri.Addr] = true
		pl.mu.Unlock()
	}
	if val != cty.NilVal {
		pl.ev.res[iv.Block].set(iv.Key, val)
	}
	return diags
}

func (pl *planner) planResource(ctx context.Context, key string) hcl.Diagnostics {
	e := pl.e
	r := e.Module.Resources[key]
	schema := pl.cg.schemas[r.Addr.Type]
	insts, b, diags := pl.ev.expandResource(ctx, key, pl.filter.instance)
	if diags.HasErrors() {
		return diags
	}
	prov, err := e.Providers.Provider(ctx, sdk.ProviderNameOf(r.Addr.Type))
	if err != nil {
		return append(diags, errDiag("Cannot start provider "+sdk.ProviderNameOf(r.Addr.Type), err.Error()))
	}
	var mu sync.Mutex
	if err := forEachParallel(ctx, pl.lim, len(insts), func(i int) {
		ri := insts[i]
		ch, val, d := pl.planInstance(ctx, prov, key, schema, ri)
		mu.Lock()
		diags = append(diags, d...)
		mu.Unlock()
		if ch != nil {
			pl.mu.Lock()
			pl.changes = append(pl.changes, ch)
			pl.seen[ri.Addr] = true
			pl.mu.Unlock()
		}
		if val != cty.NilVal {
			b.set(ri.Key, val)
		}
	}); err != nil {
		diags = append(diags, errDiag("Planning interrupted", err.Error()))
	}
	return diags
}

// planInstance asks the provider for the planned value of one instance and
// decides its action. It returns the value dependents see.
func (pl *planner) planInstance(ctx context.Context, prov sdk.Provider, key string, schema *sdk.ResourceSchema, ri *resourceInstance) (*plans.ResourceChange, cty.Value, hcl.Diagnostics) {
	e := pl.e
	r := e.Module.Resources[key]
	rng := r.DeclRange
	// No separate ValidateResourceConfig call per instance: providers
	// validate the config inside PlanResourceChange (sdk.Router does), which
	// saves one RPC per instance.
	var diags hcl.Diagnostics
	ty := schema.Block.ImpliedType()
	prior := pl.prior[ri.Addr]
	priorVal := cty.NullVal(ty)
	var priorPrivate []byte
	if prior != nil {
		priorVal = prior.Value
		priorPrivate = prior.Private
	}
	cfg := applyIgnoreChanges(ri.Config, priorVal, r.Lifecycle.IgnoreAllChanges, r.Lifecycle.IgnoreChanges, schema.Block)
	planned, replacePaths, plannedPrivate, d := planCall(ctx, prov, r.Addr.Type, ri, priorVal, priorPrivate, cfg, schema.Block, cty.NilVal, pl.offline)
	notes, d := planNotes(d)
	diags = append(diags, sdkDiags(d, ri.Addr, r.Config, &rng)...)
	if d.HasErrors() {
		return nil, cty.NilVal, diags
	}
	ch := &plans.ResourceChange{
		Addr: ri.Addr, Resource: key, Type: r.Addr.Type, Provider: sdk.ProviderNameOf(r.Addr.Type), Node: ri.Node,
		Before: priorVal, After: planned, RequiresReplace: replacePaths, PriorPrivate: priorPrivate,
		PlannedPrivate: plannedPrivate, Dependencies: pl.cg.resourceDeps[key], SchemaVersion: schema.Version,
		CreateBeforeDestroy: r.Lifecycle.CreateBeforeDestroy,
		SensitiveAttrs:      unionSorted(sensitiveAttrs(schema.Block), ri.SensitiveAttrs),
		Notes:               notes,
	}
	if prior != nil {
		ch.PriorNode = prior.Node
	}
	replaceAction := plans.DeleteThenCreate
	if r.Lifecycle.CreateBeforeDestroy {
		replaceAction = plans.CreateThenDelete
	}
	switch {
	case prior == nil:
		ch.Action = plans.Create
	case prior.Tainted:
		ch.Action, ch.Reason = replaceAction, "tainted: an earlier apply did not finish creating it"
	case pl.replace[ri.Addr]:
		ch.Action, ch.Reason = replaceAction, "replacement requested with -replace"
	case len(replacePaths) > 0:
		ch.Action = replaceAction
	case nodeIdentity(prior.Node) != nodeIdentity(ri.Node):
		ch.Action, ch.Reason = replaceAction, fmt.Sprintf("it moves from %s to %s", nodeLabel(prior.Node), nodeLabel(ri.Node))
	case sdk.ValuesEqual(priorVal, planned):
		ch.Action = plans.NoOp
	default:
		ch.Action = plans.Update
	}
	if ch.Action.IsReplace() {
		// What the new object will be: plan it as a create.
		np, _, npriv, d := planCall(ctx, prov, r.Addr.Type, ri, cty.NullVal(ty), nil, cfg, schema.Block, priorVal, pl.offline)
		var more []string
		more, d = planNotes(d)
		ch.Notes = append(ch.Notes, more...)
		diags = append(diags, sdkDiags(d, ri.Addr, r.Config, &rng)...)
		if d.HasErrors() {
			return nil, cty.NilVal, diags
		}
		ch.After, ch.PlannedPrivate = np, npriv
	}
	return ch, ch.After, diags
}

func planCall(ctx context.Context, prov sdk.Provider, typeName string, ri *resourceInstance, prior cty.Value, priorPrivate []byte, cfg cty.Value, b *sdk.Block, replaces cty.Value, offline bool) (cty.Value, []cty.Path, []byte, sdk.Diagnostics) {
	if replaces == cty.NilVal {
		replaces = cty.NullVal(prior.Type())
	}
	resp := prov.PlanResourceChange(ctx, sdk.PlanRequest{
		TypeName: typeName, Address: ri.Addr, Node: ri.Node, Prior: prior, Config: cfg,
		Proposed: sdk.ProposedNew(b, prior, cfg), PriorPrivate: priorPrivate, Replaces: replaces, Offline: offline,
	})
	if resp.Diagnostics.HasErrors() {
		return cty.NilVal, nil, nil, resp.Diagnostics
	}
	if resp.Planned == cty.NilVal || resp.Planned.IsNull() {
		return cty.NilVal, nil, nil, append(resp.Diagnostics, sdk.Errorf(nil, "Provider produced an invalid plan",
			"provider planned a null value for %s, which is not being destroyed; this is a bug in the provider", ri.Addr))
	}
	return resp.Planned, resp.RequiresReplace, resp.PlannedPrivate, resp.Diagnostics
}

// applyIgnoreChanges keeps prior values for attributes lifecycle says to
// ignore.
func applyIgnoreChanges(cfg, prior cty.Value, all bool, paths []hcl.Traversal, b *sdk.Block) cty.Value {
	if prior.IsNull() || (!all && len(paths) == 0) || !cfg.IsKnown() || cfg.IsNull() {
		return cfg
	}
	vals := cfg.AsValueMap()
	ignore := map[string]bool{}
	var nested []cty.Path
	for _, t := range paths {
		if len(t) == 0 {
			continue
		}
		// config parses items with hcl.RelTraversalForExpr, so the name
		// is a TraverseAttr; a TraverseRoot is accepted too.
		if len(t) > 1 {
			if p, err := config.TraversalPath(t); err == nil {
				nested = append(nested, p) // env["TMPDIR"]: just that element
				continue
			}
		}
		switch step := t[0].(type) {
		case hcl.TraverseAttr:
			ignore[step.Name] = true
		case hcl.TraverseRoot:
			ignore[step.Name] = true
		}
	}
	if !all && len(nested) > 0 {
		// Keep the prior value at each nested path the config also has.
		cfg, _ = cty.Transform(cfg, func(p cty.Path, v cty.Value) (cty.Value, error) {
			for _, np := range nested {
				if p.Equals(np) {
					if pv, err := np.Apply(prior); err == nil && pv.Type().Equals(v.Type()) {
						return pv, nil
					}
				}
			}
			return v, nil
		})
		vals = cfg.AsValueMap()
	}
	for name, a := range b.Attributes {
		if a.Computed && !a.Optional {
			continue
		}
		if all || ignore[name] {
			vals[name] = prior.GetAttr(name)
		}
	}
	for name := range b.BlockTypes {
		if all || ignore[name] {
			vals[name] = prior.GetAttr(name)
		}
	}
	return cty.ObjectVal(vals)
}

func sensitiveAttrs(b *sdk.Block) []string {
	var out []string
	for name, a := range b.Attributes {
		if a.Sensitive {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// unionSorted is the sorted union of two name lists.
func unionSorted(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range append(append([]string{}, a...), b...) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// recoverIntents turns journal intents left by an interrupted apply into
// instances to refresh. An interrupted create has no state record, so one
// is made from the intent (tainted: what exists is not known good).
func (e *Engine) recoverIntents(intents []*state.Intent, insts map[string]*instance, p *plans.Plan) map[string]*state.Intent {
	out := map[string]*state.Intent{}
	for _, in := range intents {
		out[in.Address] = in
		msg := fmt.Sprintf("%s was interrupted during %s (pid %d, started %s); refreshing it from the node.",
			in.Address, in.Action, in.PID, in.Started.Format(time.RFC3339))
		p.Notes = append(p.Notes, msg)
		e.hooks().Note(msg)
		if _, ok := insts[in.Address]; ok || in.Resource == nil {
			continue
		}
		inst, err := instanceFromRecord(in.Resource)
		if err != nil {
			continue
		}
		inst.Tainted = true
		insts[in.Address] = inst
	}
	return out
}

// settleIntents stores what refresh found for each interrupted instance
// and clears its intent, so state is true to the node again.
func (e *Engine) settleIntents(recovered map[string]*state.Intent, refreshed map[string]*instance, p *plans.Plan) hcl.Diagnostics {
	var diags hcl.Diagnostics
	addrsSorted := make([]string, 0, len(recovered))
	for a := range recovered {
		addrsSorted = append(addrsSorted, a)
	}
	sort.Strings(addrsSorted)
	for _, addr := range addrsSorted {
		var msg string
		if in, ok := refreshed[addr]; ok {
			rec, err := in.record()
			if err == nil {
				err = e.Store.PutResource(rec)
			}
			if err != nil {
				diags = append(diags, errDiag("Cannot store recovered instance "+addr, err.Error()))
				continue
			}
			msg = fmt.Sprintf("%s: found on the node after the interrupted %s; state now records it", addr, recovered[addr].Action)
			if in.Tainted {
				msg += " as tainted (it will be replaced)"
			}
		} else {
			if err := e.Store.DeleteResource(addr); err != nil && !isNotFound(err) {
				diags = append(diags, errDiag("Cannot update state for "+addr, err.Error()))
				continue
			}
			msg = fmt.Sprintf("%s: nothing found on the node after the interrupted %s; state has no record of it", addr, recovered[addr].Action)
		}
		if err := e.Store.DeleteIntent(addr); err != nil {
			diags = append(diags, errDiag("Cannot clear the journal for "+addr, err.Error()))
			continue
		}
		p.Notes = append(p.Notes, msg)
		e.hooks().Note(msg)
	}
	return diags
}

func isNotFound(err error) bool {
	return errors.Is(err, state.ErrResourceNotFound)
}

// outputStore is implemented by stores that keep output values.
type outputStore interface {
	Outputs() (map[string]state.Output, error)
}

// priorOutputs reads the outputs stored by the last apply.
func (e *Engine) priorOutputs() map[string]cty.Value {
	out := map[string]cty.Value{}
	os, ok := e.Store.(outputStore)
	if !ok {
		return out
	}
	stored, err := os.Outputs()
	if err != nil {
		return out
	}
	for name, o := range stored {
		if v, err := DecodeValue(o.Value); err == nil {
			out[name] = v
		}
	}
	return out
}

// nodeIdentity is what makes two node values the same machine: a changed
// user, key or known_hosts file is a new way in, not a move.
func nodeIdentity(n sdk.Node) string {
	if n.Transport == "local" {
		return "local"
	}
	return fmt.Sprintf("%s://%s:%d", n.Transport, n.Host, n.Port)
}
