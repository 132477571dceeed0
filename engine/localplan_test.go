package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// wideThing is a resource type of the "sfwide" test provider that counts
// the plans it has in flight. Its plans wait (up to a bound) for others to
// join, so that plans the engine lets run together are seen together.
type wideThing struct {
	local bool
	mu    sync.Mutex
	cond  *sync.Cond
	now   int
	most  int
}

var wideSchema = &sdk.ResourceSchema{Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
	"value": {Type: cty.String, Optional: true},
}}}

func (w *wideThing) Schema() *sdk.ResourceSchema {
	s := *wideSchema
	s.LocalPlan = w.local
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

// wideWait is how many plans in flight a plan waits for, at most
// wideWaitMax.
const (
	wideWait    = 8
	wideWaitMax = 50 * time.Millisecond
)

func (w *wideThing) Plan(_ context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	w.mu.Lock()
	w.now++
	w.most = max(w.most, w.now)
	w.cond.Broadcast()
	deadline := time.Now().Add(wideWaitMax)
	t := time.AfterFunc(wideWaitMax, func() { w.mu.Lock(); w.cond.Broadcast(); w.mu.Unlock() })
	for w.most < wideWait && time.Now().Before(deadline) {
		w.cond.Wait()
	}
	t.Stop()
	w.now--
	w.mu.Unlock()
	return sdk.PlanResponse{Planned: req.Proposed}
}

func (*wideThing) Apply(_ context.Context, req sdk.ApplyRequest, _ func(sdk.Progress)) sdk.ApplyResponse {
	return sdk.ApplyResponse{NewState: req.Planned}
}

func (*wideThing) Import(context.Context, sdk.ImportRequest) sdk.ImportResponse {
	return sdk.ImportResponse{}
}

// TestLocalPlansRunWiderThanParallelism: the plans of a type whose schema
// says they reach no node (LocalPlan) are not held to the parallelism,
// which bounds work on nodes, so that many share a plugin message; the
// plans of any other type still are. Before protocol 4 both were held to
// it, and the local type never had more than Parallelism plans in flight.
func TestLocalPlansRunWiderThanParallelism(t *testing.T) {
	b := newBed(t)
	local, onNode := &wideThing{local: true}, &wideThing{}
	for _, w := range []*wideThing{local, onNode} {
		w.cond = sync.NewCond(&w.mu)
	}
	b.provs.provs["sfwide"] = sdktest.GRPC(t, &sdk.Router{Name: "sfwide",
		Resources: map[string]sdk.Resource{"sfwide_local": local, "sfwide_node": onNode}})
	r := b.cfg("localplan")
	r.e.Parallelism = 2
	p := r.plan(PlanOptions{})
	if n := len(p.Changes); n != 48 {
		t.Fatalf("plan has %d changes; want 48", n)
	}
	if onNode.most > 2 {
		t.Errorf("sfwide_node had %d plans in flight; parallelism is 2", onNode.most)
	}
	if local.most < wideWait {
		t.Errorf("sfwide_local had at most %d plans in flight; want %d (its plans reach no node)", local.most, wideWait)
	}
}
