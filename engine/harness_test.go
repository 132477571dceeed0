package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	bolt "go.etcd.io/bbolt"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
	"github.com/sparkform/sparkform/state"
)

// gRPCProviders hands the engine providers served over the real gRPC
// protocol (sdktest.GRPC), by name.
type gRPCProviders struct {
	mu      sync.Mutex
	provs   map[string]sdk.Provider
	schemas map[string]*sdk.Schema
}

var _ Providers = (*gRPCProviders)(nil)

func (p *gRPCProviders) Provider(_ context.Context, name string) (sdk.Provider, error) {
	prov, ok := p.provs[name]
	if !ok {
		return nil, fmt.Errorf("no provider %q in this test", name)
	}
	return prov, nil
}

func (p *gRPCProviders) Schema(ctx context.Context, name string) (*sdk.Schema, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.schemas[name]; ok {
		return s, nil
	}
	prov, err := p.Provider(ctx, name)
	if err != nil {
		return nil, err
	}
	s, diags := prov.GetSchema(ctx)
	if diags.HasErrors() {
		return nil, diags.Err()
	}
	p.schemas[name] = s
	return s, nil
}

// recHooks records the engine's events.
type recHooks struct {
	NoHooks
	mu        sync.Mutex
	notes     []string
	applied   []string // "action addr" in PostApply order, errors marked
	started   []string // "action addr" in PreApply order
	progress  []string // "addr: message" in Progress order
	postApply func(addr string, err error)
}

func (h *recHooks) Note(msg string) {
	h.mu.Lock()
	h.notes = append(h.notes, msg)
	h.mu.Unlock()
}

func (h *recHooks) Progress(addr string, p sdk.Progress) {
	h.mu.Lock()
	h.progress = append(h.progress, addr+": "+p.Message)
	h.mu.Unlock()
}

func (h *recHooks) PreApply(addr string, a plans.Action) {
	h.mu.Lock()
	h.started = append(h.started, string(a)+" "+addr)
	h.mu.Unlock()
}

func (h *recHooks) PostApply(addr string, a plans.Action, _ time.Duration, err error) {
	h.mu.Lock()
	s := string(a) + " " + addr
	if err != nil {
		s += " (failed)"
	}
	h.applied = append(h.applied, s)
	f := h.postApply
	h.mu.Unlock()
	if f != nil {
		f(addr, err)
	}
}

// bed is one test's world: a real bbolt state in a temp dir, the real
// sparkform_data provider and the sftest test provider, both over gRPC.
type bed struct {
	t     *testing.T
	dir   string
	path  string
	st    *state.BoltStore
	tp    *testProvider
	provs *gRPCProviders
	hooks *recHooks
}

func newBed(t *testing.T) *bed {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, ".sparkform", "state.db")
	st, err := state.Open(path, state.Options{Command: "engine test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("closing state: %v", err)
		}
		checkIntegrity(t, path)
	})
	tp := newTestProvider(dir)
	return &bed{t: t, dir: dir, path: path, st: st, tp: tp, hooks: &recHooks{},
		provs: &gRPCProviders{schemas: map[string]*sdk.Schema{}, provs: map[string]sdk.Provider{
			builtin.Name: sdktest.GRPC(t, builtin.New()),
			"sftest":     sdktest.GRPC(t, tp.provider()),
		}}}
}

// checkIntegrity runs bbolt's consistency check over the state file.
func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Errorf("state integrity: open: %v", err)
		return
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Errorf("state integrity: %v", err)
	}
}

// run is one configuration with its variables.
type run struct {
	b    *bed
	e    *Engine
	vars map[string]cty.Value
}

// cfg loads testdata/FIXTURE with NAME=VALUE variables (HCL syntax values).
func (b *bed) cfg(fixture string, vars ...string) *run {
	b.t.Helper()
	mod, diags := config.LoadDir(filepath.Join("testdata", fixture))
	if !diags.HasErrors() {
		diags = append(diags, mod.CheckReferences()...)
	}
	if diags.HasErrors() {
		b.t.Fatalf("loading %s: %s", fixture, diagString(diags))
	}
	var src []config.VarSource
	for _, v := range vars {
		src = append(src, config.VarSource{Kind: "var", Value: v})
	}
	vals, diags := config.ResolveVariables(mod, src, nil)
	if diags.HasErrors() {
		b.t.Fatalf("variables of %s: %s", fixture, diagString(diags))
	}
	mod, diags = config.Flatten(mod, vals)
	if diags.HasErrors() {
		b.t.Fatalf("modules of %s: %s", fixture, diagString(diags))
	}
	return &run{b: b, vars: vals, e: New(Options{Module: mod, Providers: b.provs, Store: b.st, Hooks: b.hooks, Parallelism: 4})}
}

func diagString(ds hcl.Diagnostics) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.Summary+": "+d.Detail)
	}
	return strings.Join(parts, "\n")
}

// planE plans and returns the plan and diagnostics as they are.
func (r *run) planE(opts PlanOptions) (*plans.Plan, hcl.Diagnostics) {
	opts.Variables = r.vars
	return r.e.Plan(context.Background(), opts)
}

// plan plans and fails the test on errors.
func (r *run) plan(opts PlanOptions) *plans.Plan {
	r.b.t.Helper()
	p, diags := r.planE(opts)
	if diags.HasErrors() {
		r.b.t.Fatalf("plan: %s", diagString(diags))
	}
	return p
}

// applyE carries out p after a trip through the plan file format (as
// `plan -out` then `apply FILE` does), and stores the outputs as the CLI
// does (cmd/sparkform saveOutputs: every known output replaces the set).
func (r *run) applyE(ctx context.Context, p *plans.Plan) (*ApplyResult, hcl.Diagnostics) {
	r.b.t.Helper()
	f := filepath.Join(r.b.dir, "plan.bin")
	if p.ConfigDigest == "" {
		p.ConfigDigest = strings.Repeat("0", 64) // the CLI sets it (cmd/sparkform configDigest)
	}
	if err := plans.WriteFile(f, p); err != nil {
		r.b.t.Fatalf("writing plan: %v", err)
	}
	p2, err := plans.ReadFile(f)
	if err != nil {
		r.b.t.Fatalf("reading plan: %v", err)
	}
	res, diags := r.e.Apply(ctx, p2)
	if res != nil && p.Mode != plans.RefreshOnlyMode {
		outs := map[string]state.Output{}
		for name, v := range res.Outputs {
			if p.Mode == plans.DestroyMode || !v.IsWhollyKnown() {
				continue
			}
			raw, err := EncodeValue(v)
			if err != nil {
				r.b.t.Fatalf("encoding output %s: %v", name, err)
			}
			outs[name] = state.Output{Value: raw}
		}
		if err := r.b.st.PutOutputs(outs); err != nil {
			r.b.t.Fatalf("storing outputs: %v", err)
		}
	}
	return res, diags
}

func (r *run) apply(p *plans.Plan) *ApplyResult {
	r.b.t.Helper()
	res, diags := r.applyE(context.Background(), p)
	if diags.HasErrors() {
		r.b.t.Fatalf("apply: %s", diagString(diags))
	}
	return res
}

// converge plans and applies, and checks that a second plan has nothing
// to do.
func (r *run) converge() *ApplyResult {
	r.b.t.Helper()
	res := r.apply(r.plan(PlanOptions{}))
	if p := r.plan(PlanOptions{}); p.HasChanges() {
		r.b.t.Fatalf("plan after apply still has changes: %v", actions(p))
	}
	return res
}

// actions is addr -> action of every change that is not a no-op.
func actions(p *plans.Plan) map[string]plans.Action {
	out := map[string]plans.Action{}
	for _, c := range p.Changes {
		if c.Action != plans.NoOp {
			out[c.Addr] = c.Action
		}
	}
	return out
}

// addrs lists the addresses in state.
func (b *bed) addrs() []string {
	b.t.Helper()
	recs, err := b.st.Resources()
	if err != nil {
		b.t.Fatal(err)
	}
	out := []string{}
	for _, r := range recs {
		out = append(out, r.Address)
	}
	sort.Strings(out)
	return out
}

// value is the stored value of addr (NilVal when absent).
func (b *bed) value(addr string) cty.Value {
	b.t.Helper()
	r, err := b.st.Resource(addr)
	if err != nil {
		return cty.NilVal
	}
	v, err := ResourceValue(r)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

func (b *bed) record(addr string) *state.Resource {
	b.t.Helper()
	r, err := b.st.Resource(addr)
	if err != nil {
		b.t.Fatalf("state has no %s: %v (state: %v)", addr, err, b.addrs())
	}
	return r
}

// attr is one string attribute of a stored instance.
func (b *bed) attr(addr, name string) string {
	b.t.Helper()
	v := b.value(addr)
	if v == cty.NilVal {
		b.t.Fatalf("state has no %s (state: %v)", addr, b.addrs())
	}
	a := v.GetAttr(name)
	if a.IsNull() {
		return ""
	}
	return a.AsString()
}

func (b *bed) intents() []string {
	b.t.Helper()
	ins, err := b.st.Intents()
	if err != nil {
		b.t.Fatal(err)
	}
	out := []string{}
	for _, in := range ins {
		out = append(out, in.Address)
	}
	return out
}

// index is the position of line in ops, failing the test when absent.
func index(t *testing.T, ops []string, line string) int {
	t.Helper()
	for i, o := range ops {
		if o == line {
			return i
		}
	}
	t.Fatalf("operation %q not in log %q", line, ops)
	return -1
}

func hasErrorContaining(ds hcl.Diagnostics, sub string) bool {
	for _, d := range ds {
		if d.Severity == hcl.DiagError && strings.Contains(d.Summary+" "+d.Detail, sub) {
			return true
		}
	}
	return false
}

// mustTargets and mustInstances parse -target and -replace addresses as
// the CLI does.
func mustTargets(ss ...string) []addrs.Target {
	ts, diags := addrs.ParseTargets(ss)
	if diags.HasErrors() {
		panic(diags.Error())
	}
	return ts
}

func mustInstances(ss ...string) []addrs.ResourceInstance {
	rs, diags := addrs.ParseResourceInstances(ss)
	if diags.HasErrors() {
		panic(diags.Error())
	}
	return rs
}
