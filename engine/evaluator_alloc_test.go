package engine

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestScopeCostsOnlyReferences: a block's evaluation context is a child of
// one root context per walk (var, path, functions) holding only what the
// block references, so building it allocates a few objects whatever the
// configuration's size, and a block that references nothing gets the root.
// Before, each context was built whole (path from os.Getwd and
// filepath.Abs, var, local, node), and each instance vertex's block
// context was kept to the end of the walk. A kind referenced through one
// block alone (node.local; the one sparkform_data a chain link takes) is
// that block's cached object, not a new object and type per context.
func TestScopeCostsOnlyReferences(t *testing.T) {
	_, _, ev := shapeEvaluator(t, "blocks", 100)
	v := resourceV("sparkform_data.c3_4")
	ctx := ev.scope(v)
	if ctx.Parent() != ev.rootContext() {
		t.Fatalf("scope is not a child of the walk's root context")
	}
	if len(ctx.Variables) != 2 || ctx.Variables["node"].LengthInt() != 1 || ctx.Variables["sparkform_data"].LengthInt() != 1 {
		t.Fatalf("scope holds %v, want node.local and sparkform_data.c3_3 only", ctx.Variables)
	}
	if ev.scope(outputV("none")) != ev.rootContext() {
		t.Fatalf("a vertex without references does not get the root context")
	}
	n := testing.AllocsPerRun(100, func() { ev.scope(v) })
	t.Logf("scope: %.0f allocations", n)
	if n > 10 {
		t.Errorf("scope of a block with two references allocates %.0f objects, want <= 10 (it was 32 with the context built whole)", n)
	}
	iv := &instanceVertex{block: "sparkform_data.c3_4", key: nil, addr: "sparkform_data.c3_4"}
	ev.instanceContext(iv)
	if len(ev.bases) != 0 {
		t.Errorf("the evaluator keeps %d block contexts of single-instance blocks", len(ev.bases))
	}
}

// TestConfigGraphBuiltOnce: validate, plan and apply of one engine share
// one configuration graph (it depends on the module and the schemas only);
// each gets its own expansions.
func TestConfigGraphBuiltOnce(t *testing.T) {
	sr := newShapeRun(t, "count", 100)
	e := New(Options{Module: sr.mod, Providers: sr.provs})
	a, diags := e.buildConfigGraph(context.Background())
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	if diags := e.expandStatic(a, newEvaluator(e.module, a, nil)); diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	b, _ := e.buildConfigGraph(context.Background())
	if a.g != b.g {
		t.Errorf("the second build made a new graph")
	}
	if b.expansions != nil || len(a.expansions) != 10 {
		t.Errorf("expansions are shared: %d and %d", len(a.expansions), len(b.expansions))
	}
	e.module = loadShape(t, sr.dir)
	if c, _ := e.buildConfigGraph(context.Background()); c.g == a.g {
		t.Errorf("a new module got the old module's graph")
	}
}

// TestEvalInstanceAllocations: evaluating one instance of a chain link
// (node = node.local, input = the previous link's id) allocates a bounded
// number of objects: no rebuild of the node's object to strip marks it
// does not have (UnmarkDeep), no decoder spec per call, the body's
// content checked once per run (config.Decoders), node.local read as a
// node once.
func TestEvalInstanceAllocations(t *testing.T) {
	_, _, ev := shapeEvaluator(t, "blocks", 100)
	prev := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("abc"), "input": cty.StringVal("x")})
	ev.resourceValues("sparkform_data.c3_3").set(addrs.NoKey, prev)
	iv := &instanceVertex{block: "sparkform_data.c3_4", key: addrs.NoKey, addr: "sparkform_data.c3_4"}
	ci, diags := ev.evalInstance(iv)
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	if got := ci.Config.GetAttr("input"); !got.RawEquals(cty.StringVal("abc")) {
		t.Fatalf("input = %#v, want \"abc\"", got)
	}
	n := testing.AllocsPerRun(50, func() { ev.evalInstance(iv) })
	t.Logf("evalInstance: %.0f allocations", n)
	if n > 20 {
		t.Errorf("evaluating one chain link allocates %.0f objects, want <= 20 (it was 91, 63 with UnmarkDeep only when marked, 43 with the ResourceDecoder prepared per instance, 28 with a context built for its one reference)", n)
	}
}

// TestResolveRef: a plain reference to a root block with a value reads
// as it does in the instance's context; anything else is left to the
// context (false), including a traversal that has diagnostics there.
func TestResolveRef(t *testing.T) {
	e, _, ev := shapeEvaluator(t, "blocks", 20)
	prev := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("abc").Mark(config.SensitiveMark),
		"input": cty.ListVal([]cty.Value{cty.StringVal("x"), cty.StringVal("y")}), "output": cty.UnknownVal(cty.String)})
	ev.resourceValues("sparkform_data.c1_3").set(addrs.NoKey, prev)
	// Every block's value, as an instance's context holds those it names.
	all := map[string]cty.Value{}
	for _, r := range e.module.Resources {
		all[r.Addr.Name] = ev.res[r.Addr.String()].value()
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"sparkform_data": cty.ObjectVal(all)}}
	for _, tt := range []struct {
		src string
		ok  bool
	}{
		{"sparkform_data.c1_3.id", true}, // sensitive
		{"sparkform_data.c1_3", true},
		{"sparkform_data.c1_3.input[1]", true},
		{"sparkform_data.c1_3.output", true}, // unknown
		{"sparkform_data.c1_3.nope", false},  // an error there
		{"sparkform_data.c1_3.input[5]", false},
		{"sparkform_data.c1_3.id.x", false},
		{"sparkform_data.c1_2.id", true},  // not reached yet: unknown
		{"sparkform_data.c9_9.id", false}, // no such block
		{"node.local", false},
		{"local.x", false}, // no such local
		{"var.x", false},
		{"each.key", false},
		{"module.m.out", false},
		{"sparkform_data", false},
	} {
		tr, d := hclsyntax.ParseTraversalAbs([]byte(tt.src), "t.sf.hcl", hcl.InitialPos)
		if d.HasErrors() {
			t.Fatal(d)
		}
		got, ok := ev.resolveRef(tr)
		if ok != tt.ok {
			t.Errorf("%s: resolved %v, want %v", tt.src, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		want, d := tr.TraverseAbs(ctx)
		if d.HasErrors() || !got.RawEquals(want) {
			t.Errorf("%s: %#v, want %#v (%v)", tt.src, got, want, d)
		}
	}
}

// BenchmarkEvalWalk: the plan walk's own work per instance, without a
// provider: the walk graph run in order, each instance's context built
// and its node and body decoded, and a planned value (the config with
// its id known) published for dependents. allocs/instance is the figure
// to hold; ns/instance is the evaluation floor's share of a plan.
func BenchmarkEvalWalk(b *testing.B) {
	for _, shape := range shapes {
		b.Run(shape, func(b *testing.B) {
			const n = 1000
			sr := newShapeRun(b, shape, n)
			e := New(Options{Module: sr.mod, Providers: sr.provs})
			cg, diags := e.buildConfigGraph(context.Background())
			if diags.HasErrors() {
				b.Fatal(diagString(diags))
			}
			b.ReportAllocs()
			for b.Loop() {
				if diags := evalWalk(e, cg); diags.HasErrors() {
					b.Fatal(diagString(diags))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/instance")
		})
	}
}

// evalWalk walks cg as a plan does, each instance planned as its config
// with a known id.
func evalWalk(e *Engine, cg *configGraph) hcl.Diagnostics {
	ev := newEvaluator(e.module, cg, nil)
	if diags := e.expandStatic(cg, ev); diags.HasErrors() {
		return diags
	}
	g := cg.walkGraph(e.module, func(vertex) bool { return true }, func(string) bool { return true })
	return e.walk(context.Background(), g, ev, walkFuncs{instance: func(_ context.Context, iv *instanceVertex) hcl.Diagnostics {
		ci, diags := ev.evalInstance(iv)
		if diags.HasErrors() {
			return diags
		}
		ev.resourceValues(iv.block).set(iv.key, cty.ObjectVal(map[string]cty.Value{
			"id": cty.StringVal(iv.addr), "input": ci.Config.GetAttr("input"), "output": cty.NullVal(cty.DynamicPseudoType)}))
		return diags
	}})
}

// TestInstanceNodeMatches: an instance's node read once per node block
// (node = node.NAME of a single block) is what evaluating its node
// argument in the instance's context gives, and other arguments
// (node.multi[each.key], a module's var.host) are evaluated as before.
func TestInstanceNodeMatches(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"main.sf.hcl": `
node "local" {
  transport = "local"
}
node "multi" {
  for_each  = toset(["a", "b"])
  transport = "local"
}
resource "sparkform_data" "counted" {
  count = 3
  node  = node.local
  input = "x-${count.index}"
}
resource "sparkform_data" "keyed" {
  for_each = toset(["a", "b"])
  node     = node.multi[each.key]
}
resource "sparkform_data" "one" {
  node = node.local
}
module "m" {
  source = "./m"
  host   = node.multi["b"]
}
module "m2" {
  source = "./m2"
  host   = node.local
}
module "checked" {
  source = "./checked"
  host   = node.local
}
`,
		"m/main.sf.hcl": `
variable "host" {}
resource "sparkform_data" "in" {
  node = var.host
}
`,
		"m2/main.sf.hcl": `
variable "host" {}
node "own" {
  transport = "local"
}
resource "sparkform_data" "via_var" {
  node = var.host
}
resource "sparkform_data" "own" {
  node = node.own
}
module "deeper" {
  source = "./m3"
  h      = var.host
}
`,
		"m2/m3/main.sf.hcl": `
variable "h" {}
resource "sparkform_data" "deep" {
  count = 2
  node  = var.h
}
`,
		"checked/main.sf.hcl": `
variable "host" {
  validation {
    condition     = var.host != null
    error_message = "A host is needed."
  }
}
resource "sparkform_data" "checked" {
  node = var.host
}
`}
	e := engineOfFiles(t, dir, files)
	cg, ev := staticEvaluator(t, e)
	// node.local without a value: the same error both ways.
	// node.local without a value: the same error both ways. (Not for the
	// module variables set to it: their values, taken from node.local
	// before it was emptied here, are what the walk would wait for.)
	ev.nodes["local"] = &blockValues{mode: singleMode, vals: map[addrs.InstanceKey]cty.Value{}}
	checkInstanceNodes(t, e, cg, ev, true)
	ev.bases = nil
	g := cg.walkGraph(e.module, func(vertex) bool { return true }, func(string) bool { return true })
	if diags := e.walk(context.Background(), g, ev, walkFuncs{}); diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	g2 := cg.walkGraph(e.module, func(vertex) bool { return true }, func(string) bool { return true })
	if n := checkInstanceNodes(t, e, cg, ev, false); n != 8 {
		t.Errorf("%d instances took their node block's node, want 8 (counted, one, m2's via_var, own and deeper's deep)", n)
	}
	// Through a module variable the node is read as the root's is: once,
	// not evaluated in a context built for the instance and converted
	// (what every instance of a module used to cost).
	for addr, iv := range g2.instances {
		r := e.module.Resources[iv.block]
		if r.NodeBlock == "" {
			continue
		}
		ie := &instanceEval{ctx: ev.instanceContext(iv)}
		if allocs := testing.AllocsPerRun(20, func() { ev.instanceNode(r, ie) }); allocs > 0 {
			t.Errorf("%s: instanceNode made %.0f allocations; want none", addr, allocs)
		}
	}
	// What the flattener saw through: a module's own node, a variable set
	// to node.local at any depth; not an indexed node, nor a variable
	// with a validation (which may refuse the value).
	for addr, want := range map[string]string{
		`module.m2.sparkform_data.via_var`:            "local",
		`module.m2.sparkform_data.own`:                "module.m2.own",
		`module.m2.module.deeper.sparkform_data.deep`: "local",
		`module.m.sparkform_data.in`:                  "",
		`module.checked.sparkform_data.checked`:       "",
		`sparkform_data.one`:                          "",
	} {
		r := e.module.Resources[addr]
		if r == nil {
			t.Errorf("no resource %s", addr)
			continue
		}
		if r.NodeBlock != want {
			t.Errorf("%s: NodeBlock %q, want %q", addr, r.NodeBlock, want)
		}
	}
}

// checkInstanceNodes compares instanceNode with the node argument
// evaluated, for every instance; it returns how many took the shortcut.
func checkInstanceNodes(t *testing.T, e *Engine, cg *configGraph, ev *evaluator, wantErr bool) int {
	t.Helper()
	short := 0
	g := cg.walkGraph(e.module, func(vertex) bool { return true }, func(string) bool { return true })
	for addr, iv := range g.instances {
		r := e.module.Resources[iv.block]
		if wantErr && r.NodeBlock != "" {
			continue
		}
		ctx := ev.instanceContext(iv)
		got, gotD := ev.instanceNode(r, &instanceEval{ctx: ctx})
		nv, wantD := r.NodeExpr.Value(ctx)
		var want sdk.Node
		if !wantD.HasErrors() {
			var err error
			if want, err = nodeOf(nv); err != nil {
				rng := r.NodeExpr.Range()
				wantD = append(wantD, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node",
					Detail: err.Error() + " The node argument takes a node block, e.g. node = node.spark or node = node.spark[each.key].", Subject: &rng})
			}
		}
		if diagString(gotD) != diagString(wantD) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v %s, want %+v %s", addr, got, diagString(gotD), want, diagString(wantD))
		}
		ok := r.NodeBlock != ""
		if !ok && r.Scope == nil {
			_, ok = config.RefNode(r.NodeExpr)
		}
		if ok {
			short++
			if wantErr != gotD.HasErrors() {
				t.Errorf("%s: error %v, want %v", addr, gotD.HasErrors(), wantErr)
			}
		}
	}
	return short
}

// TestEvalInstanceMatchesFullScope: every instance evaluates to exactly
// what the straightforward path gives: its node argument and body decoded
// (hcldec, TakeSensitive, Conform) in one context holding every local,
// node and whole resource block with each/count, as config.Scope builds
// it. It covers what the evaluator's shortcuts replace: the context of
// references only, same-key blocks holding one instance, count's object
// shared across blocks, node.NAME read once, the prepared decoder, plain
// references read without a context (resolveRef: a sensitive value, a
// whole block, indexed ones, one beside a reference that needs the
// context, locals, a single block without node); with
// count.index, each.key and each.value in every position, unknowns,
// nulls, sensitive values and strings NFC changes.
func TestEvalInstanceMatchesFullScope(t *testing.T) {
	dir := t.TempDir()
	src := `
node "local" {
  transport = "local"
}
locals {
  keys = { "a" = "e\u0301", "b\u0301" = "x", "c" = "y" }
  secret = sensitive("s")
}
resource "sparkform_data" "counted" {
  count = 3
  node  = node.local
  input = "seed-${count.index}-e\u0301"
}
resource "sparkform_data" "counted_next" {
  count = 3
  node  = node.local
  input = { id = sparkform_data.counted[count.index].id, n = count.index * 2, k = "${count.index}", all = length(sparkform_data.counted), prev = count.index > 0 ? sparkform_data.counted[count.index - 1].input : null }
  triggers_replace = [sparkform_data.counted[count.index].id, local.secret]
}
resource "sparkform_data" "keyed" {
  for_each = local.keys
  node     = node.local
  input    = { (each.key) = each.value, v = "${each.key}/${each.value}", c = sparkform_data.counted[1].id }
}
resource "sparkform_data" "keyed_next" {
  for_each = local.keys
  node     = node.local
  input    = [sparkform_data.keyed[each.key].id, each.key, sparkform_data.keyed[each.key].input, sparkform_data.one.output]
}
resource "sparkform_data" "one" {
  node  = node.local
  input = sensitive("e\u0301")
}
resource "sparkform_data" "plain" {
  node             = node.local
  input            = sparkform_data.one.output
  triggers_replace = sparkform_data.counted
}
resource "sparkform_data" "plain_indexed" {
  node             = node.local
  input            = sparkform_data.keyed["b\u0301"].input.v
  triggers_replace = sparkform_data.counted[2].id
}
resource "sparkform_data" "plain_mixed" {
  node             = node.local
  input            = sparkform_data.plain
  triggers_replace = [local.secret, sparkform_data.plain_indexed.output]
}
resource "sparkform_data" "plain_local" {
  input            = local.keys
  triggers_replace = local.secret
}
`
	e := engineOfFiles(t, dir, map[string]string{"main.sf.hcl": src})
	cg, diags := e.buildConfigGraph(context.Background())
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	for _, known := range []bool{false, true} { // planned (ids unknown), then applied
		ev := newStaticEvaluator(t, e, cg)
		g := cg.walkGraph(e.module, func(vertex) bool { return true }, func(string) bool { return true })
		got := map[string]*configInstance{}
		var mu sync.Mutex
		diags := e.walk(context.Background(), g, ev, walkFuncs{instance: func(_ context.Context, iv *instanceVertex) hcl.Diagnostics {
			ci, diags := ev.evalInstance(iv)
			if diags.HasErrors() {
				return diags
			}
			mu.Lock()
			got[iv.addr] = ci
			mu.Unlock()
			publishData(ev, iv, ci, known)
			return diags
		}})
		if diags.HasErrors() {
			t.Fatal(diagString(diags))
		}
		if len(got) != 17 {
			t.Fatalf("%d instances evaluated, want 17", len(got))
		}
		for addr, iv := range g.instances {
			want := fullScopeInstance(t, e, cg, ev, iv)
			ci := got[addr]
			if !ci.Config.RawEquals(want.Config) || !reflect.DeepEqual(ci.Node, want.Node) || !reflect.DeepEqual(ci.SensitiveAttrs, want.SensitiveAttrs) {
				t.Errorf("%s:\n got %#v %+v %q\nwant %#v %+v %q", addr, ci.Config, ci.Node, ci.SensitiveAttrs, want.Config, want.Node, want.SensitiveAttrs)
			}
		}
	}
}

// fullScopeInstance evaluates iv the straightforward way, after the walk.
func fullScopeInstance(t *testing.T, e *Engine, cg *configGraph, ev *evaluator, iv *instanceVertex) *configInstance {
	t.Helper()
	s := &config.Scope{BaseDir: e.module.Dir, Locals: ev.locals, Nodes: map[string]cty.Value{}, Resources: map[string]map[string]cty.Value{}}
	for name, b := range ev.nodes {
		s.Nodes[name] = b.value()
	}
	for _, r := range e.module.Resources {
		if s.Resources[r.Addr.Type] == nil {
			s.Resources[r.Addr.Type] = map[string]cty.Value{}
		}
		s.Resources[r.Addr.Type][r.Addr.ScopeKey()] = ev.res[r.Addr.String()].value()
	}
	if each, ok := cg.expansions[iv.block].Each[iv.key]; ok {
		s.Each = &config.EachValues{Key: each.Key, Value: each.Value}
	} else if iv.key != addrs.NoKey {
		s.CountIndex = iv.key.Value()
	}
	ctx := s.EvalContext()
	r := e.module.Resources[iv.block]
	nv, diags := r.NodeExpr.Value(ctx)
	nv, _ = nv.UnmarkDeep()
	node, err := nodeFromValue(nv)
	v, d := config.DecodeResource(r.Body(), cg.schemas[r.Addr.Type].Block, ctx)
	if diags = append(diags, d...); diags.HasErrors() || err != nil {
		t.Fatalf("%s: %s %v", iv.addr, diagString(diags), err)
	}
	v, sens := config.TakeSensitive(v)
	return &configInstance{Config: config.Conform(v, cg.types[r.Addr.Type]), Node: node, SensitiveAttrs: sens}
}

// TestSingleBlockValuesAllocations: the values holder of a block without
// for_each or count is one allocation; it kept a map for its one value
// (~400 B per block, 4 MB of a 10,000-block walk's live heap).
func TestSingleBlockValuesAllocations(t *testing.T) {
	ev := newEvaluator(&config.Module{}, &configGraph{}, nil)
	m := map[string]*blockValues{"other": {}}
	v := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("x")})
	allocs := testing.AllocsPerRun(100, func() {
		delete(m, "x")
		b := ev.block(m, "x", singleMode)
		b.set(addrs.NoKey, v)
		if got := b.value(); !got.RawEquals(v) {
			t.Fatalf("value %#v", got)
		}
	})
	if allocs > 1 {
		t.Errorf("a single block's values take %.0f allocations, want 1", allocs)
	}
}

// TestSameKeyContextAllocations: the context of an instance that takes
// the block before it by its own key (sparkform_data.r0[count.index])
// holds that block as an object of the one instance, built straight into
// the context: a map of names per type first took two more allocations.
func TestSameKeyContextAllocations(t *testing.T) {
	e, cg, ev := shapeEvaluator(t, "count", 100)
	prev := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("abc")})
	ev.resourceValues("sparkform_data.r3").set(addrs.IntKey(5), prev)
	g := cg.walkGraph(e.module, func(vertex) bool { return true }, func(string) bool { return true })
	iv := g.instances[`sparkform_data.r4[5]`]
	if iv == nil || len(iv.sameKeyDeps) != 1 {
		t.Fatalf("instance vertex %+v, want one same-key block", iv)
	}
	want := cty.ObjectVal(map[string]cty.Value{"r3": cty.ObjectVal(map[string]cty.Value{"5": prev})})
	if got := ev.instanceContext(iv).Variables["sparkform_data"]; !got.RawEquals(want) {
		t.Fatalf("sparkform_data = %#v, want %#v", got, want)
	}
	n := testing.AllocsPerRun(100, func() { ev.instanceContext(iv) })
	t.Logf("instanceContext: %.0f allocations", n)
	if n > 14 {
		t.Errorf("the context of a same-key instance allocates %.0f objects, want <= 14 (it was 18 with a map of names per type)", n)
	}
}

// TestEvalInstanceLazyMatchesEager: an instance of a single-instance
// block, root or in a module instance, evaluates to exactly what its
// whole context gives (instanceContext, then the module's names from it:
// config.InstanceScope.BodyContext), though it reads its plain references
// without one (resolveRef, resolveScoped): variables of every kind
// (sensitive, unknown, objects, a default), locals, path.module, the
// module's blocks whole, by attribute and by index, one beside a
// reference that needs the context, and references that only the
// context evaluates (module outputs, each, nodes).
func TestEvalInstanceLazyMatchesEager(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"main.sf.hcl": `
node "local" {
  transport = "local"
}
locals {
  keys = { "a" = "e\u0301", "b" = "x" }
}
resource "sparkform_data" "seed" {
  node  = node.local
  input = "s"
}
module "m" {
  source   = "./m"
  for_each = local.keys
  seed     = "${each.key}-${each.value}"
  obj      = { id = sparkform_data.seed.id, k = each.key }
  secret   = sensitive(each.value)
  host     = node.local
}
resource "sparkform_data" "after" {
  node  = node.local
  input = module.m["a"].last
  triggers_replace = sparkform_data.seed
}
`,
		"m/main.sf.hcl": `
variable "seed" {}
variable "obj" {}
variable "secret" {}
variable "host" {}
variable "dflt" {
  default = { n = 1 }
}
locals {
  twice = "${var.seed}${var.seed}"
}
resource "sparkform_data" "r0" {
  node             = var.host
  input            = var.seed
  triggers_replace = var.obj.id
}
resource "sparkform_data" "r1" {
  node             = var.host
  input            = sparkform_data.r0.id
  triggers_replace = var.secret
}
resource "sparkform_data" "r2" {
  node             = var.host
  input            = sparkform_data.r1
  triggers_replace = local.twice
}
resource "sparkform_data" "cnt" {
  count = 2
  node  = var.host
  input = sparkform_data.r2.output
}
resource "sparkform_data" "r3" {
  node             = var.host
  input            = [sparkform_data.cnt[1].id, var.dflt.n]
  triggers_replace = path.module
}
resource "sparkform_data" "r4" {
  node             = var.host
  input            = sparkform_data.cnt[0].input
  triggers_replace = module.inner.out
}
module "inner" {
  source = "./inner"
  v      = sparkform_data.r3.id
}
output "last" {
  value = sparkform_data.r4.id
}
`,
		"m/inner/main.sf.hcl": `
variable "v" {}
output "out" {
  value = var.v
}
`}
	e := engineOfFiles(t, dir, files)
	cg, diags := e.buildConfigGraph(context.Background())
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	var ev *evaluator
	for _, known := range []bool{false, true} { // planned (ids unknown), then applied
		ev = newStaticEvaluator(t, e, cg)
		g := cg.walkGraph(e.module, func(vertex) bool { return true }, func(string) bool { return true })
		var mu sync.Mutex
		lazy := 0
		diags := e.walk(context.Background(), g, ev, walkFuncs{instance: func(_ context.Context, iv *instanceVertex) hcl.Diagnostics {
			ci, diags := ev.evalInstance(iv)
			if diags.HasErrors() {
				return diags
			}
			r := e.module.Resources[iv.block]
			want, wantD := ev.decodeInstance(r, ev.decoder(r), iv.addr, iv.key, &instanceEval{ctx: ev.instanceContext(iv)})
			if wantD.HasErrors() || !ci.Config.RawEquals(want.Config) || !reflect.DeepEqual(ci.Node, want.Node) || !reflect.DeepEqual(ci.SensitiveAttrs, want.SensitiveAttrs) {
				t.Errorf("%s:\n got %#v %+v %q\nwant %#v %+v %q %s", iv.addr, ci.Config, ci.Node, ci.SensitiveAttrs, want.Config, want.Node, want.SensitiveAttrs, diagString(wantD))
			}
			if r.Count == nil && r.ForEach == nil {
				mu.Lock()
				lazy++
				mu.Unlock()
			}
			publishData(ev, iv, ci, known)
			return diags
		}})
		if diags.HasErrors() {
			t.Fatal(diagString(diags))
		}
		if lazy != 12 { // seed, after, and r0-r4 in both instances
			t.Fatalf("%d single-instance blocks evaluated, want 12", lazy)
		}
	}
	// The module's plain references resolve, to what the context gives
	// them; the others do not.
	iv := &instanceVertex{block: `module.m["a"].sparkform_data.r3`, key: addrs.NoKey, addr: `module.m["a"].sparkform_data.r3`}
	r := e.module.Resources[iv.block]
	// The flat context of every local and block (as fullScopeInstance).
	full := &config.Scope{BaseDir: e.module.Dir, Locals: ev.locals, Nodes: map[string]cty.Value{}, Resources: map[string]map[string]cty.Value{}}
	for _, r := range e.module.Resources {
		if full.Resources[r.Addr.Type] == nil {
			full.Resources[r.Addr.Type] = map[string]cty.Value{}
		}
		full.Resources[r.Addr.Type][r.Addr.ScopeKey()] = ev.res[r.Addr.String()].value()
	}
	flat := full.EvalContext()
	for src, want := range map[string]bool{"var.seed": true, "var.dflt.n": true, "var.obj.k": true, "var.secret": true, "local.twice": true, "path.module": true,
		"sparkform_data.r1.id": true, "sparkform_data.r1": true, "sparkform_data.cnt[1].id": true,
		"module.inner.out": false, "each.key": false, "node.x": false, "sparkform_data.nope.id": false, "sparkform_data.r1.nope": false, "var.nope": false} {
		tr, d := hclsyntax.ParseTraversalAbs([]byte(src), "t.sf.hcl", hcl.InitialPos)
		if d.HasErrors() {
			t.Fatal(d)
		}
		got, ok := ev.resolveScoped(r.Scope, tr)
		if ok != want {
			t.Errorf("resolveScoped(%s): %v, want %v", src, ok, want)
			continue
		}
		if !ok {
			continue
		}
		// A context of exactly these references, as BodyContext builds one.
		ctx := r.Scope.BodyContext(&hclsyntax.Body{Attributes: hclsyntax.Attributes{"x": {Name: "x", Expr: &hclsyntax.ScopeTraversalExpr{Traversal: tr}}}}, flat)
		if v, d := tr.TraverseAbs(ctx); d.HasErrors() || !got.RawEquals(v) {
			t.Errorf("resolveScoped(%s) = %#v, want %#v (%s)", src, got, v, diagString(d))
		}
	}
}

// shapeEvaluator is staticEvaluator of an engine of n instances in shape
// (shapeFiles).
func shapeEvaluator(t testing.TB, shape string, n int) (*Engine, *configGraph, *evaluator) {
	t.Helper()
	sr := newShapeRun(t, shape, n)
	e := New(Options{Module: sr.mod, Providers: sr.provs})
	cg, ev := staticEvaluator(t, e)
	return e, cg, ev
}

// staticEvaluator builds e's configuration graph and an evaluator of what
// the configuration knows before a walk (expandStatic), as a plan does.
func staticEvaluator(t testing.TB, e *Engine) (*configGraph, *evaluator) {
	t.Helper()
	cg, diags := e.buildConfigGraph(context.Background())
	if diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	return cg, newStaticEvaluator(t, e, cg)
}

// newStaticEvaluator is a new evaluator of cg with expandStatic done.
func newStaticEvaluator(t testing.TB, e *Engine, cg *configGraph) *evaluator {
	t.Helper()
	ev := newEvaluator(e.module, cg, nil)
	if diags := e.expandStatic(cg, ev); diags.HasErrors() {
		t.Fatal(diagString(diags))
	}
	return ev
}

// engineOfFiles writes files (path: source) under dir and is an engine of
// the configuration there, with sparkform_data's provider.
func engineOfFiles(t *testing.T, dir string, files map[string]string) *Engine {
	t.Helper()
	for name, src := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return New(Options{Module: loadShape(t, dir), Providers: newShapeRun(t, "count", 10).provs})
}

// publishData sets iv's value as sparkform_data's plan (known false: id
// unknown) or apply would from its configuration ci.
func publishData(ev *evaluator, iv *instanceVertex, ci *configInstance, known bool) {
	id := cty.UnknownVal(cty.String)
	if known {
		id = cty.StringVal("id-" + iv.addr)
	}
	ev.resourceValues(iv.block).set(iv.key, cty.ObjectVal(map[string]cty.Value{"id": id,
		"input": ci.Config.GetAttr("input"), "output": ci.Config.GetAttr("input"), "triggers_replace": ci.Config.GetAttr("triggers_replace")}))
}
