package plugin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// Tests of protocol 2's batched forms through real plugin processes:
// validation in one call, plans and applies as items of one session.

// concurrently runs fn(i) for i in [0,n) in n goroutines released at
// once, and waits for them.
func concurrently(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// Many concurrent applies travel in one session and in fewer messages
// than calls; one failing instance fails alone, and every other gets its
// own result with its own progress.
func TestSessionBatchWithOneFailure(t *testing.T) {
	h := newHost(t, nil)
	p, err := h.Provider(context.Background(), "batch")
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	resps := make([]sdk.ApplyResponse, n)
	progress := make([]int, n)
	concurrently(n, func(i int) {
		name := fmt.Sprintf("t%03d", i)
		if i == 57 {
			name = "fail57"
		}
		resps[i] = p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{
			TypeName: "batch_thing", Address: fmt.Sprintf("batch_thing.x[%d]", i), Node: local, Prior: nullThing, Planned: thing(name),
		}, func(sdk.Progress) { progress[i]++ })
	})
	for i, r := range resps {
		if progress[i] != 1 {
			t.Errorf("instance %d got %d progress events; want 1", i, progress[i])
		}
		if i == 57 {
			if !r.Diagnostics.HasErrors() || !strings.Contains(r.Diagnostics[0].Detail, "batch_thing.x[57]") || !r.NewState.IsNull() {
				t.Errorf("the failing instance: state %#v, diags %v; want null and its own error", r.NewState, r.Diagnostics)
			}
			continue
		}
		if r.Diagnostics.HasErrors() {
			t.Errorf("instance %d: %v", i, r.Diagnostics.Err())
			continue
		}
		if got, want := r.NewState.GetAttr("id").AsString(), fmt.Sprintf("id-t%03d", i); got != want {
			t.Errorf("instance %d: id %q; want %q (results crossed)", i, got, want)
		}
	}
	st := h.Stats()["batch"]
	t.Logf("%d applies: %v", n, st)
	if st["ApplyResourceChanges"] != 1 {
		t.Errorf("ApplyResourceChanges streams = %d; want 1 session", st["ApplyResourceChanges"])
	}
	if m := st["ApplyResourceChanges messages"]; m < 1 || m >= n {
		t.Errorf("%d concurrent applies went in %d messages; want fewer messages than calls", n, m)
	}
}

// Validation of a whole configuration is one RPC, in which equal configs
// travel and are checked once; each result lands on its own request.
func TestValidateIsOneCall(t *testing.T) {
	notes := startLog(t)
	h := newHost(t, nil)
	p, err := h.Provider(context.Background(), "batch")
	if err != nil {
		t.Fatal(err)
	}
	bv, ok := p.(sdk.BatchValidator)
	if !ok {
		t.Fatalf("%T does not validate in batches", p)
	}
	var reqs []sdk.ValidateRequest
	for i := range 1000 {
		name := fmt.Sprintf("n%d", i%100)
		if i%250 == 7 {
			name = "invalid"
		}
		reqs = append(reqs, sdk.ValidateRequest{TypeName: "batch_thing", Config: thing(name)})
	}
	reqs = append(reqs, sdk.ValidateRequest{TypeName: "batch_nothing", Config: thing("x")})
	got := bv.ValidateResourceConfigs(context.Background(), reqs)
	if len(got) != len(reqs) {
		t.Fatalf("%d results for %d requests", len(got), len(reqs))
	}
	for i, d := range got[:1000] {
		if want := i%250 == 7; d.HasErrors() != want || want && d[0].Summary != "Invalid name" {
			t.Errorf("request %d: %v", i, d)
		}
	}
	if !got[1000].HasErrors() || got[1000][0].Summary != "Unknown resource type" {
		t.Errorf("unknown type: %v", got[1000])
	}
	if n := h.Stats()["batch"]["ValidateResourceConfigs"]; n != 1 {
		t.Errorf("ValidateResourceConfigs RPCs = %d; want 1", n)
	}
	validated := 0
	for _, l := range notes() {
		if strings.HasPrefix(l, "validate ") {
			validated++
		}
	}
	if validated != 101 {
		t.Errorf("the provider validated %d configs; want 101 (each distinct one once)", validated)
	}
}

// A result is sent the moment it is known: calls that finish while another
// item of their session still runs are answered at once.
func TestSessionResultsNotHeldForOthers(t *testing.T) {
	h := newHost(t, nil)
	p, err := h.Provider(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	blocked := applySlow(t, context.Background(), p)
	concurrently(20, func(i int) {
		r := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: "slow_thing", Address: fmt.Sprintf("slow_thing.q[%d]", i),
			Node: local, Prior: nullThing, Planned: thing("quick")}, nil)
		if r.Diagnostics.HasErrors() || r.NewState.GetAttr("id").AsString() != "id-quick" {
			t.Errorf("quick apply %d: %#v %v", i, r.NewState, r.Diagnostics)
		}
	})
	select {
	case r := <-blocked:
		t.Fatalf("the blocking apply ended early: %v", r.Diagnostics)
	default:
	}
	h.Stop(context.Background())
	if r := waitApply(t, blocked); !r.Diagnostics.HasErrors() || r.Diagnostics[0].Summary != "Interrupted" {
		t.Errorf("diags %v; want the provider's Interrupted", r.Diagnostics)
	}
	if n := h.Stats()["slow"]["ApplyResourceChanges"]; n != 1 {
		t.Errorf("ApplyResourceChanges streams = %d; want 1 session", n)
	}
}

// startSlow starts n applies of slow_thing in one session and returns once
// each reported that it started.
func startSlow(t *testing.T, ctxs []context.Context, p sdk.Provider) []<-chan sdk.ApplyResponse {
	t.Helper()
	var started sync.WaitGroup
	dones := make([]<-chan sdk.ApplyResponse, len(ctxs))
	for i, ctx := range ctxs {
		started.Add(1)
		var once sync.Once
		done := make(chan sdk.ApplyResponse, 1)
		dones[i] = done
		go func() {
			done <- p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: "slow_thing", Address: fmt.Sprintf("slow_thing.x[%d]", i),
				Node: local, Prior: nullThing, Planned: thing(fmt.Sprint(i))}, func(sdk.Progress) { once.Do(started.Done) })
		}()
	}
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Fatal("not every slow apply started")
	}
	return dones
}

func background(n int) []context.Context {
	out := make([]context.Context, n)
	for i := range out {
		out[i] = context.Background()
	}
	return out
}

// Stop in the middle of a batch reaches every item of the session; each
// returns its own interrupted result, and the session serves on.
func TestStopMidBatch(t *testing.T) {
	h := newHost(t, nil)
	p, err := h.Provider(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	dones := startSlow(t, background(8), p)
	h.Stop(context.Background())
	for i, done := range dones {
		r := waitApply(t, done)
		if !r.Diagnostics.HasErrors() || r.Diagnostics[0].Summary != "Interrupted" || !r.NewState.IsNull() {
			t.Errorf("apply %d after Stop: state %#v, diags %v; want the prior and Interrupted", i, r.NewState, r.Diagnostics)
		}
	}
	cfg := sdktest.Object(t, thingSchemaBlock, map[string]cty.Value{"name": cty.StringVal("after")})
	if r := p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: "slow_thing", Address: "slow_thing.after", Node: local, Prior: nullThing, Config: cfg}); r.Diagnostics.HasErrors() {
		t.Errorf("plan after Stop: %v", r.Diagnostics)
	}
}

var thingSchemaBlock = &sdk.Block{Attributes: map[string]*sdk.Attribute{
	"name": {Type: cty.String, Required: true},
	"id":   {Type: cty.String, Computed: true},
}}

// Cancelling one call of a session cancels that item in the plugin and
// no other.
func TestCancelOneItemOfSession(t *testing.T) {
	notes := startLog(t)
	h := newHost(t, nil)
	p, err := h.Provider(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	dones := startSlow(t, []context.Context{context.Background(), ctx, context.Background()}, p)
	cancel()
	r := waitApply(t, dones[1])
	if !r.Diagnostics.HasErrors() || r.Diagnostics[0].Summary != "Cancelled" || !strings.Contains(r.Diagnostics[0].Detail, "slow_thing.x[1]") {
		t.Errorf("cancelled call: %v; want Cancelled naming slow_thing.x[1]", r.Diagnostics)
	}
	count := func() int {
		n := 0
		for _, l := range notes() {
			if l == "slow-saw-context canceled" {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); count() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the plugin's apply never saw the cancellation")
		}
	}
	time.Sleep(100 * time.Millisecond) // room for a wrong cancellation to show
	if n := count(); n != 1 {
		t.Errorf("%d applies saw a cancellation; want only the cancelled one", n)
	}
	for _, i := range []int{0, 2} {
		select {
		case r := <-dones[i]:
			t.Errorf("apply %d ended with its neighbour: %v", i, r.Diagnostics)
		default:
		}
	}
	h.Stop(context.Background())
	for _, i := range []int{0, 2} {
		if r := waitApply(t, dones[i]); r.Diagnostics[0].Summary != "Interrupted" {
			t.Errorf("apply %d after Stop: %v", i, r.Diagnostics)
		}
	}
}

// A plugin killed with a batch in flight: every call of the session gets
// its own diagnostic, naming its instance and the signal, and keeps its
// prior state.
func TestKillMidBatch(t *testing.T) {
	starts := startLog(t)
	h := newHost(t, nil)
	p, err := h.Provider(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	dones := startSlow(t, background(6), p)
	pid := 0
	for _, l := range starts() {
		fmt.Sscanf(l, "slow-pid %d", &pid)
	}
	if pid == 0 {
		t.Fatalf("the slow plugin did not note its pid: %v", starts())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i, done := range dones {
		r := waitApply(t, done)
		if len(r.Diagnostics) != 1 || r.Diagnostics[0].Summary != `Provider "slow" was killed` ||
			!strings.Contains(r.Diagnostics[0].Detail, fmt.Sprintf("ApplyResourceChange of slow_thing.x[%d]", i)) || !r.NewState.IsNull() {
			t.Errorf("apply %d: state %#v, diags %v", i, r.NewState, r.Diagnostics)
		}
	}
}

// A plugin built for protocol version 1 is refused at the handshake with
// a message that says what to do, not left to hang or fail on a call.
func TestOldProtocolPluginRefused(t *testing.T) {
	h := newHost(t, nil)
	_, err := h.Provider(context.Background(), "oldproto")
	if err == nil {
		t.Fatal("a protocol 1 plugin was accepted")
	}
	t.Log(err)
	for _, w := range []string{"Plugin version: 1", fmt.Sprintf("which speaks version %d", sdk.ProtocolVersion), "providers/sdk"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q: %v", w, err)
		}
	}
}

// benchParallel runs one call per iteration from 10 goroutines (the
// engine's default parallelism) against the real sparkform plugin, and
// reports the plugin's messages per call.
func benchParallel(b *testing.B, call func(p sdk.Provider, blk *sdk.Block, i int) sdk.Diagnostics) {
	h := newHost(b, nil)
	s, err := h.Schema(context.Background(), "sparkform")
	if err != nil {
		b.Fatal(err)
	}
	p, _ := h.Provider(context.Background(), "sparkform")
	blk := s.ResourceTypes["sparkform_data"].Block
	before := h.Stats()["sparkform"]
	pid := h.plugins["sparkform"].proc.client.ReattachConfig().Pid
	cpu0 := cpuTime(b, 0) + cpuTime(b, pid)
	b.ReportAllocs()
	b.SetParallelism(10 / max(1, runtime.GOMAXPROCS(0)))
	var n sync.Mutex
	i := 0
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Lock()
			i++
			k := i
			n.Unlock()
			if d := call(p, blk, k); d.HasErrors() {
				b.Error(d.Err())
				return
			}
		}
	})
	b.ReportMetric(float64((cpuTime(b, 0)+cpuTime(b, pid)-cpu0).Microseconds())/float64(b.N), "cpu-µs/call")
	after := h.Stats()["sparkform"]
	for _, m := range []string{"PlanResourceChanges", "ApplyResourceChanges"} {
		if d := after[m+" messages"] - before[m+" messages"]; d > 0 {
			b.ReportMetric(float64(d)/float64(b.N), "msgs/call")
		}
	}
}

// BenchmarkPluginPlanParallel: PlanResourceChange of sparkform_data (a
// create, so the value goes both ways) through the real plugin process,
// 10 calls in flight.
func BenchmarkPluginPlanParallel(b *testing.B) {
	benchParallel(b, func(p sdk.Provider, blk *sdk.Block, i int) sdk.Diagnostics {
		null := cty.NullVal(blk.ImpliedType())
		cfg := sdktest.Object(b, blk, map[string]cty.Value{"input": cty.StringVal(fmt.Sprint("v", i))})
		return p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: "sparkform_data", Address: fmt.Sprintf("sparkform_data.x[%d]", i),
			Node: local, Prior: null, Config: cfg, Proposed: sdk.ProposedNew(blk, null, cfg)}).Diagnostics
	})
}

// BenchmarkPluginApplyParallel: ApplyResourceChange (create) of
// sparkform_data through the real plugin process, 10 calls in flight.
func BenchmarkPluginApplyParallel(b *testing.B) {
	benchParallel(b, func(p sdk.Provider, blk *sdk.Block, i int) sdk.Diagnostics {
		null := cty.NullVal(blk.ImpliedType())
		planned := sdktest.Object(b, blk, map[string]cty.Value{"input": cty.StringVal(fmt.Sprint("v", i)), "output": cty.StringVal(fmt.Sprint("v", i)), "id": cty.UnknownVal(cty.String)})
		return p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: "sparkform_data", Address: fmt.Sprintf("sparkform_data.x[%d]", i),
			Node: local, Prior: null, Planned: planned, Config: planned}, nil).Diagnostics
	})
}

// cpuTime is the user+system CPU time of process pid (0: this one) so far.
func cpuTime(b *testing.B, pid int) time.Duration {
	path := "/proc/self/stat"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	var ut, st int64
	fmt.Sscan(f[11], &ut) // utime and stime, fields 14 and 15 of stat(5)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// An apply is one item (protocol 3): the plugin plans it again, checks the
// plan against the reviewed one and applies it, so concurrent applies cost
// one apply item each and no plan item. A re-plan that differs from the
// reviewed plan, or fails, is refused in the plugin before anything is
// applied: no Started, no progress, no new state.
func TestPlanAndApplyIsOneItem(t *testing.T) {
	h := newHost(t, nil)
	p, err := h.Provider(context.Background(), "batch")
	if err != nil {
		t.Fatal(err)
	}
	const n, changed, invalid = 100, 13, 42
	resps := make([]sdk.PlanApplyResponse, n)
	starts, progress := make([]int, n), make([]int, n)
	concurrently(n, func(i int) {
		name, reviewed := fmt.Sprintf("t%03d", i), fmt.Sprintf("t%03d", i)
		switch i {
		case changed:
			reviewed = "what was reviewed"
		case invalid:
			name, reviewed = "invalid", "invalid"
		}
		cfg := cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(name), "id": cty.NullVal(cty.String)})
		resps[i] = sdk.PlanAndApply(context.Background(), p, sdk.PlanApplyRequest{
			TypeName: "batch_thing", Address: fmt.Sprintf("batch_thing.x[%d]", i), Node: local,
			Prior: nullThing, Config: cfg, Reviewed: thing(reviewed),
		}, func(time.Time) { starts[i]++ }, func(sdk.Progress) { progress[i]++ })
	})
	for i, r := range resps {
		switch i {
		case changed:
			if r.Applied || !r.PlanChanged || sdk.DescribePath(r.Changed) != "name" || starts[i]+progress[i] != 0 || r.NewState != cty.NilVal {
				t.Errorf("changed plan: applied %v, plan changed %v at %q, %d starts, %d progress, state %#v; want refused at name with no events",
					r.Applied, r.PlanChanged, sdk.DescribePath(r.Changed), starts[i], progress[i], r.NewState)
			}
		case invalid:
			if r.Applied || r.PlanChanged || !r.Diagnostics.HasErrors() || r.Diagnostics[0].Summary != "Invalid name" || starts[i]+progress[i] != 0 {
				t.Errorf("failed plan: applied %v, plan changed %v, %d starts, diags %v; want not applied with the plan's error", r.Applied, r.PlanChanged, starts[i], r.Diagnostics)
			}
		default:
			if !r.Applied || r.Diagnostics.HasErrors() || starts[i] != 1 || progress[i] != 1 {
				t.Errorf("instance %d: applied %v, %d starts, %d progress, diags %v", i, r.Applied, starts[i], progress[i], r.Diagnostics)
				continue
			}
			if got, want := r.NewState.GetAttr("id").AsString(), fmt.Sprintf("id-t%03d", i); got != want {
				t.Errorf("instance %d: id %q; want %q (results crossed)", i, got, want)
			}
		}
	}
	st := h.Stats()["batch"]
	t.Logf("%d plan-and-applies: %v", n, st)
	if st["ApplyResourceChanges"] != 1 || st["ApplyResourceChanges items"] != n || st["PlanResourceChanges"] != 0 || st["PlanResourceChanges items"] != 0 {
		t.Errorf("stats %v; want one apply session carrying %d items and no plan call", st, n)
	}
}
