package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// wideThing is a resource type of the "sfwide" test provider that counts
// the plans and the applies (deletes included) it has in flight. Each
// waits (up to a bound) for others to join, so that calls the engine lets
// run together are seen together.
type wideThing struct {
	local          bool
	plans, applies gauge
}

// gauge counts calls in flight and the most seen at once.
type gauge struct {
	mu   sync.Mutex
	cond *sync.Cond
	now  int
	most int
}

// enter counts a call in and waits, up to wideWaitMax, until wideWait
// calls were seen at once; leave counts it out.
func (g *gauge) enter() {
	g.mu.Lock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	g.now++
	g.most = max(g.most, g.now)
	g.cond.Broadcast()
	deadline := time.Now().Add(wideWaitMax)
	t := time.AfterFunc(wideWaitMax, func() { g.mu.Lock(); g.cond.Broadcast(); g.mu.Unlock() })
	for g.most < wideWait && time.Now().Before(deadline) {
		g.cond.Wait()
	}
	t.Stop()
	g.mu.Unlock()
}

func (g *gauge) leave() { g.mu.Lock(); g.now--; g.mu.Unlock() }

// Most returns the most calls seen at once and starts counting afresh.
func (g *gauge) Most() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.most
	g.most = 0
	return m
}

var wideSchema = &sdk.ResourceSchema{Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
	"value": {Type: cty.String, Optional: true},
}}}

func (w *wideThing) Schema() *sdk.ResourceSchema {
	s := *wideSchema
	s.LocalPlan, s.LocalApply = w.local, w.local
	return &s
}

func (*wideThing) Validate(context.Context, cty.Value) sdk.Diagnostics { return nil }

func (*wideThing) Read(_ context.Context, _ sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	out := make([]sdk.ReadResult, len(items))
	for i, it := range items {
		out[i] = sdk.ReadResult{NewState: it.Prior}
	}
	return out, 0, nil
}

// wideWait is how many calls in flight a call waits for, at most
// wideWaitMax.
const (
	wideWait    = 8
	wideWaitMax = 50 * time.Millisecond
)

func (w *wideThing) Plan(_ context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	w.plans.enter()
	defer w.plans.leave()
	return sdk.PlanResponse{Planned: req.Proposed}
}

func (w *wideThing) Apply(_ context.Context, req sdk.ApplyRequest, _ func(sdk.Progress)) sdk.ApplyResponse {
	w.applies.enter()
	defer w.applies.leave()
	return sdk.ApplyResponse{NewState: req.Planned}
}

func (*wideThing) Import(context.Context, sdk.ImportRequest) sdk.ImportResponse {
	return sdk.ImportResponse{}
}

// wideBed is the localplan fixture at parallelism 2 with the sfwide
// provider: sfwide_local (LocalPlan, LocalApply) and sfwide_node.
func wideBed(t *testing.T) (b *bed, r *run, local, onNode *wideThing) {
	b = newBed(t)
	local, onNode = &wideThing{local: true}, &wideThing{}
	b.provs.provs["sfwide"] = sdktest.GRPC(t, &sdk.Router{Name: "sfwide",
		Resources: map[string]sdk.Resource{"sfwide_local": local, "sfwide_node": onNode}})
	r = b.cfg("localplan")
	r.e.parallelism = 2
	return b, r, local, onNode
}

// TestLocalPlansRunWiderThanParallelism: the plans of a type whose schema
// says they reach no node (LocalPlan) are not held to the parallelism,
// which bounds work on nodes, so that many share a plugin message; the
// plans of any other type still are. Before protocol 4 both were held to
// it, and the local type never had more than Parallelism plans in flight.
func TestLocalPlansRunWiderThanParallelism(t *testing.T) {
	_, r, local, onNode := wideBed(t)
	p := r.plan(PlanOptions{})
	if n := len(p.Changes); n != 48 {
		t.Fatalf("plan has %d changes; want 48", n)
	}
	if n := onNode.plans.Most(); n > 2 {
		t.Errorf("sfwide_node had %d plans in flight; parallelism is 2", n)
	}
	if n := local.plans.Most(); n < wideWait {
		t.Errorf("sfwide_local had at most %d plans in flight; want %d (its plans reach no node)", n, wideWait)
	}
}

// TestLocalAppliesRunWiderThanParallelism: creates and deletes of a type
// whose schema says its applies reach no node (LocalApply) are not held to
// the parallelism, so that their journal intents share state commits; the
// applies and deletes of any other type are. Before, applies of both were
// held to it, and deletes of both ran as wide as the walk (64): a destroy
// with -parallelism=2 had 24 deletes of sfwide_node in flight.
func TestLocalAppliesRunWiderThanParallelism(t *testing.T) {
	b, r, local, onNode := wideBed(t)
	for _, mode := range []plans.Mode{plans.NormalMode, plans.DestroyMode} {
		res := r.apply(r.plan(PlanOptions{Mode: mode}))
		if n := res.Applied[plans.Create] + res.Applied[plans.Delete]; n != 48 {
			t.Fatalf("%s: applied %v; want 48 changes", mode, res.Applied)
		}
		if n := onNode.applies.Most(); n > 2 {
			t.Errorf("%s: sfwide_node had %d applies in flight; parallelism is 2", mode, n)
		}
		if n := local.applies.Most(); n < wideWait {
			t.Errorf("%s: sfwide_local had at most %d applies in flight; want %d (its applies reach no node)", mode, n, wideWait)
		}
	}
	if got := b.addrs(); len(got) != 0 {
		t.Errorf("state after destroy holds %v", got)
	}
}

// TestLocalAppliesWriteNoIntent: a call that reaches no node (LocalApply)
// changes nothing a crash could leave uncertain, so it is not journaled
// and its result is stored all the same; every call of a type that may
// reach a node still is journaled first. Before, each of the 24
// sfwide_local creates and deletes wrote an intent and waited for its
// commit.
func TestLocalAppliesWriteNoIntent(t *testing.T) {
	b, r, _, _ := wideBed(t)
	log := &intentLog{BoltStore: b.st}
	r.e.store = log
	for _, mode := range []plans.Mode{plans.NormalMode, plans.DestroyMode} {
		log.intents = nil
		p := r.plan(PlanOptions{Mode: mode})
		r.apply(p)
		journaled := map[string]bool{}
		for _, in := range log.intents {
			journaled[in.Address] = true
		}
		for _, c := range p.Changes {
			if want := c.Type == "sfwide_node"; journaled[c.Addr] != want {
				t.Errorf("%s: %s journaled = %v, want %v", mode, c.Addr, journaled[c.Addr], want)
			}
		}
		if want := map[plans.Mode]int{plans.NormalMode: 48, plans.DestroyMode: 0}[mode]; len(b.addrs()) != want {
			t.Errorf("%s: state holds %d instances, want %d", mode, len(b.addrs()), want)
		}
		if in, err := b.st.Intents(); err != nil || len(in) != 0 {
			t.Errorf("%s: journal after apply holds %v (%v)", mode, in, err)
		}
	}
}

// TestLocalApplyOutcomeUnknownIsJournaled: a local call whose provider
// says it may have done something after all is journaled late, so that
// the next plan recovers it as any other.
func TestLocalApplyOutcomeUnknownIsJournaled(t *testing.T) {
	b, r, _, _ := wideBed(t)
	b.provs.provs["sfwide"] = lostAnswer{Provider: b.provs.provs["sfwide"], addr: "sfwide_local.l[3]"}
	if _, diags := r.applyE(context.Background(), r.plan(PlanOptions{})); !diags.HasErrors() {
		t.Fatal("apply reported no error for the call whose outcome is unknown")
	}
	in, err := b.st.Intents()
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 1 || in[0].Address != "sfwide_local.l[3]" || in[0].Action != "create" {
		t.Fatalf("journal holds %v; want the create of sfwide_local.l[3]", in)
	}
	// The late intent records the reviewed value, as an early one would:
	// recovery refreshes the object from it.
	if rec := in[0].Resource; rec == nil || len(rec.Value) == 0 || len(rec.ValueType) == 0 {
		t.Fatalf("the late intent records no value: %+v", rec)
	}
}

// lostAnswer is a provider whose apply of addr reports what the gRPC
// client reports when the plugin dies during the call: the outcome is
// unknown. It hides the provider's PlanAndApply, so that apply calls
// ApplyResourceChange.
type lostAnswer struct {
	sdk.Provider
	addr string
}

func (p lostAnswer) ApplyResourceChange(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	if req.Address != p.addr {
		return p.Provider.ApplyResourceChange(ctx, req, progress)
	}
	return sdk.ApplyResponse{NewState: req.Prior, OutcomeUnknown: true,
		Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Plugin exited", "the plugin exited during the call")}}
}
