package engine

import (
	"context"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/internal/heaptest"

	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/sdk"
)

// batchCounter forwards to a batch-validating provider and records the
// size of every batch it is sent.
type batchCounter struct {
	sdk.Provider
	mu    sync.Mutex
	sizes []int
}

func (b *batchCounter) ValidateResourceConfigs(ctx context.Context, reqs []sdk.ValidateRequest) []sdk.Diagnostics {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(reqs))
	b.mu.Unlock()
	return b.Provider.(sdk.BatchValidator).ValidateResourceConfigs(ctx, reqs)
}

// TestValidateHoldsOneChunkOfConfigs: Validate decodes and sends resource
// bodies a chunk at a time, so only one chunk's decoded values are live
// (all 10,000 of the blocks shape were, ~10 MB at the plan's peak). Every
// body is still checked once.
func TestValidateHoldsOneChunkOfConfigs(t *testing.T) {
	const n = 2500
	sr := newShapeRun(t, "blocks", n)
	bc := &batchCounter{Provider: sr.provs.provs[builtin.Name]}
	sr.provs.provs[builtin.Name] = bc
	e, done := sr.engine(t, "validate")
	defer done()
	if diags := e.Validate(context.Background()); diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	total := 0
	for _, s := range bc.sizes {
		total += s
		if s > validateChunk {
			t.Errorf("a validation batch of %d bodies, want at most %d live at once", s, validateChunk)
		}
	}
	if total != n {
		t.Errorf("%d bodies validated in batches %v, want %d", total, bc.sizes, n)
	}
}

// TestApplyReleasesConfigGraph: Apply, a run's last walk, does not keep
// the configuration graph that validate and plan shared (its vertices,
// edges and references: ~1 KB per block, ~11 MB of the blocks shape at
// 10,000, alive through the whole apply and destroy walks). A phase after
// it on the same engine builds the graph again and plans the same.
func TestApplyReleasesConfigGraph(t *testing.T) {
	sr := newShapeRun(t, "blocks", 50)
	e, done := sr.engine(t, "apply")
	defer done()
	p := shapePlan(t, e)
	if e.graph == nil {
		t.Fatal("the plan kept no configuration graph for the apply to reuse")
	}
	shapeApply(t, e, p)
	if e.graph != nil {
		t.Error("the engine keeps its configuration graph after Apply")
	}
	if p := shapePlan(t, e); p.HasChanges() {
		t.Error("the plan after apply, on the same engine, has changes")
	}
}

// TestEvaluatorKeepsLittlePerBlock: what a walk's evaluator keeps per
// single-instance block besides its value. Each block's holder carried a
// node read (an sdk.Node, ~200 B) that only node blocks use, and the
// {name: value} object a context takes for a block referenced alone among
// its type was kept after its first build: in a chain each block is
// referenced once, so it was ~350 B per block kept to the walk's end for
// nothing (evaluator.block 4 MB and valueAlone 3.6 MB of a 10,000-block
// apply's live heap at its peak). node.local, which
// every block references, still gets its object built once per change.
func TestEvaluatorKeepsLittlePerBlock(t *testing.T) {
	const n = 2000
	sr := newShapeRun(t, "blocks", n)
	e := New(Options{Module: sr.mod, Providers: sr.provs})
	cg, diags := e.buildConfigGraph(context.Background())
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	keys := make([]string, 0, n)
	for k := range e.module.Resources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	v := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("abc"), "input": cty.StringVal("seed")})
	before := liveHeap()
	ev := newEvaluator(e.module, cg, nil)
	if diags := e.expandStatic(cg, ev); diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	exp := cg.expansions
	cg.expansions = nil // not the evaluator's: measured apart
	afterExpand := liveHeap()
	for _, k := range keys {
		ev.resourceValues(k).set(addrs.NoKey, v)
	}
	for _, k := range keys {
		ctx := ev.scope(resourceV(k))
		if !strings.HasSuffix(k, "_0") && ctx.Variables["sparkform_data"] == cty.NilVal {
			t.Fatalf("%s: the context holds no sparkform_data", k)
		}
	}
	perBlock := (liveHeap() - before - (afterExpand - before)) / n
	holders := (afterExpand - before) / n
	runtime.KeepAlive(ev)
	runtime.KeepAlive(exp)
	t.Logf("per block: %d B after the walk's scopes, holders and expansions %d B", perBlock, holders)
	// go1.26, amd64: 619 B before (the objects kept), 0 B after; holders
	// and expansions 510 B before, 317 B after.
	if perBlock > 150 {
		t.Errorf("the evaluator keeps %d B per block after each block's context was built, want <= 150", perBlock)
	}
	if holders > 420 {
		t.Errorf("a block's holder and expansion take %d B, want <= 420 (no sdk.Node in each)", holders)
	}
}

// TestConfigGraphKeepsRefsCompact: the configuration graph, which validate
// and plan share and whose references every walk reads, keeps of each
// reference what the walk reads (what it names, and its literal key). It
// kept every parsed reference (source range, remaining traversal: ~130 B
// each, two per block of a chain) for the whole run.
func TestConfigGraphKeepsRefsCompact(t *testing.T) {
	const n = 2000
	sr := newShapeRun(t, "blocks", n)
	e := New(Options{Module: sr.mod, Providers: sr.provs})
	if _, diags := e.newConfigGraph(context.Background()); diags.HasErrors() { // schemas, providers started
		t.Fatal(diagString(diags))
	}
	before := liveHeap()
	cg, diags := e.newConfigGraph(context.Background())
	after := liveHeap()
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	runtime.KeepAlive(cg)
	runtime.KeepAlive(sr)
	perBlock := int64(after-before) / n
	t.Logf("the configuration graph keeps %d B per block", perBlock)
	if got := len(cg.refs[resourceV("sparkform_data.c3_4")]); got != 2 {
		t.Fatalf("sparkform_data.c3_4 has %d references, want 2 (node.local, sparkform_data.c3_3)", got)
	}
	// go1.26, amd64: 1,060 B with the parsed references, 862 B without.
	if perBlock > 950 {
		t.Errorf("the configuration graph keeps %d B per block, want <= 950 (references as the walk reads them)", perBlock)
	}
}

// TestPlanKeepsLittlePerChange: what a plan keeps per planned instance.
// Each change carried two sdk.Node of its own (Node and PriorNode, 176 B
// each); they are the plan's one copy per node now (plans.Plan.Node). Each
// planned value carried a type of its own (~350 B); they share one now.
func TestPlanKeepsLittlePerChange(t *testing.T) {
	const n = 2000
	sr := newShapeRun(t, "blocks", n)
	e, done := sr.engine(t, "s")
	defer done()
	p, diags := e.Plan(context.Background(), PlanOptions{})
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	if len(p.Changes) != n {
		t.Fatalf("%d changes, want %d", len(p.Changes), n)
	}
	perChange := heaptest.Held(n, func() { p = nil })
	t.Logf("a plan keeps %d B per change", perChange)
	// go1.26, amd64, a create of sparkform_data: 1,605-1,615 B with two
	// Nodes of its own in each change, 1,291-1,293 B with the plan's one,
	// 859-941 B with every planned value's type shared (typeShare).
	if perChange > 1100 {
		t.Errorf("a plan keeps %d B per change, want <= 1100 (no sdk.Node copy in each, one type for all planned values)", perChange)
	}
}

// TestApplyConsumesPlan: once a create or update is carried out, Apply
// lets go of its change's values (Apply's contract). Before, a 10,000
// instance apply kept every reviewed value beside every result to the
// walk's end: the plan still held ~1,210 B per change after Apply.
func TestApplyConsumesPlan(t *testing.T) {
	const n = 2000
	sr := newShapeRun(t, "blocks", n)
	e, done := sr.engine(t, "apply")
	defer done()
	p := shapePlan(t, e)
	shapeApply(t, e, p)
	for _, c := range p.Changes {
		if c.Action != plans.Create {
			t.Fatalf("%s: %s, want only creates", c.Addr, c.Action)
		}
		if c.After != cty.NilVal || c.Before != cty.NilVal {
			t.Fatalf("%s: Apply kept the change's values", c.Addr)
		}
	}
	perChange := heaptest.Held(n, func() { p = nil })
	t.Logf("after Apply, the plan keeps %d B per change", perChange)
	// go1.26, amd64, a create of sparkform_data: 1,211 B before, 471 B
	// after (the change itself, its address and dependencies).
	if perChange > 800 {
		t.Errorf("after Apply the plan keeps %d B per change, want <= 800 (its values let go)", perChange)
	}
}

// TestLoadStateSharesTypes: the objects a plan or destroy reads from
// state keep one type per resource type between their values, not one
// each (~350 B per instance of sparkform_data).
func TestLoadStateSharesTypes(t *testing.T) {
	const n = 2000
	sr := newShapeRun(t, "blocks", n)
	e, done := sr.engine(t, "state")
	defer done()
	shapeApply(t, e, shapePlan(t, e))
	fresh := New(Options{Module: sr.mod, Providers: sr.provs, Store: e.store})
	var objs map[string]*stateObject
	var diags hcl.Diagnostics
	per := heaptest.Added(n, func() { objs, diags = fresh.loadState() })
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	if len(objs) != n {
		t.Fatalf("%d objects, want %d", len(objs), n)
	}
	runtime.KeepAlive(fresh)
	t.Logf("an object read from state keeps %d B", per)
	// go1.26, amd64: 1,529 B with a type per value, 1,177 B shared.
	if per > 1350 {
		t.Errorf("an object read from state keeps %d B, want <= 1350 (one type for all values of a type)", per)
	}
}
