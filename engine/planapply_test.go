package engine

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestApplyRefusesChangedPlan: when the provider plans an instance
// differently at apply time from the plan that was reviewed, the one
// plan-and-apply call refuses it before anything happens: the error names
// the instance and the attribute, the node and state are as they were, no
// apply event fired and the journal is clear.
func TestApplyRefusesChangedPlan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(b *bed) []string // returns variables of the plan to apply
	}{
		{"create", func(b *bed) []string { return nil }},
		{"update", func(b *bed) []string { b.cfg("chain_a_d").converge(); return []string{"value=v2"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBed(t)
			vars := tc.setup(b)
			before := map[string]cty.Value{}
			for _, a := range b.addrs() {
				before[a] = b.value(a)
			}
			files := objectFiles(t, b.tp)
			b.tp.resetLog()
			r := b.cfg("chain_a_d", vars...)
			p := r.plan(PlanOptions{})
			b.hooks.started, b.hooks.applied = nil, nil
			moved := "moved on"
			b.tp.planValue.Store(&moved)
			_, diags := r.applyE(context.Background(), p)
			for _, addr := range []string{thA, thD} {
				if !hasErrorContaining(diags, addr+": at apply time sftest plans value differently from the plan that was reviewed") {
					t.Errorf("%s: want a plan-changed error naming value; got %s", addr, diagString(diags))
				}
			}
			if !strings.Contains(diagString(diags), "Plan changed since it was made") {
				t.Errorf("diagnostics %s; want the summary \"Plan changed since it was made\"", diagString(diags))
			}
			if ops := b.tp.ops(); len(ops) != 0 {
				t.Errorf("the provider changed the node: %v", ops)
			}
			if got := objectFiles(t, b.tp); got != files {
				t.Errorf("objects on the node %q; want %q", got, files)
			}
			if len(b.hooks.started)+len(b.hooks.applied) != 0 {
				t.Errorf("apply events %v %v; want none", b.hooks.started, b.hooks.applied)
			}
			if got := b.addrs(); len(got) != len(before) {
				t.Errorf("state %v; want %d instances as before", got, len(before))
			}
			for a, v := range before {
				if got := b.value(a); !got.RawEquals(v) {
					t.Errorf("%s in state %#v; want %#v", a, got, v)
				}
			}
			if in := b.intents(); len(in) != 0 {
				t.Errorf("journal intents left: %v", in)
			}
			// A plan made now shows the provider's values, and applies.
			r.apply(r.plan(PlanOptions{}))
			if got := b.attr(thA, "value"); got != moved {
				t.Errorf("a.value = %q after a fresh plan; want %q", got, moved)
			}
		})
	}
}

// objectFiles is the objects on the test provider's "node", with their contents.
func objectFiles(t *testing.T, tp *testProvider) string {
	t.Helper()
	ents, err := os.ReadDir(tp.dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(tp.objPath(strings.TrimSuffix(e.Name(), ".json")))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Name()+"="+string(b))
	}
	return strings.Join(out, ";")
}

// The journal intent of a create is written before the provider plans
// it: it holds the reviewed value with what the plan could not know
// taken from the configuration evaluated now, so recovery can find the
// object by attributes that configuration sets; what neither knows is
// null, as the journal stores it.
func TestIntentValueFillsUnknownsFromConfig(t *testing.T) {
	reviewed := cty.ObjectVal(map[string]cty.Value{
		"id": cty.UnknownVal(cty.String), "value": cty.UnknownVal(cty.String), "key": cty.StringVal("k"),
		"fail": cty.NullVal(cty.String), "sleep_ms": cty.NullVal(cty.Number), "owns": cty.UnknownVal(cty.String),
	})
	cfg := cty.ObjectVal(map[string]cty.Value{
		"id": cty.NullVal(cty.String), "value": cty.StringVal("from-dependency"), "key": cty.StringVal("k"),
		"fail": cty.NullVal(cty.String), "sleep_ms": cty.NullVal(cty.Number), "owns": cty.StringVal("kit").Mark("sensitive"),
	})
	got := intentValue(reviewed, cfg)
	want := cty.ObjectVal(map[string]cty.Value{
		"id": cty.NullVal(cty.String), "value": cty.StringVal("from-dependency"), "key": cty.StringVal("k"),
		"fail": cty.NullVal(cty.String), "sleep_ms": cty.NullVal(cty.Number), "owns": cty.StringVal("kit"),
	})
	if !got.RawEquals(want) {
		t.Errorf("intentValue = %#v; want %#v", got, want)
	}
	if known := thingVal("t1", "v"); !intentValue(known, cfg).RawEquals(known) {
		t.Errorf("a wholly known reviewed value changed")
	}
}

// callCounter counts an engine's provider calls by kind.
type callCounter struct {
	sdk.Provider
	plans, applies, planApplies atomic.Int64
}

func (c *callCounter) PlanResourceChange(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	c.plans.Add(1)
	return c.Provider.PlanResourceChange(ctx, req)
}

func (c *callCounter) ApplyResourceChange(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	c.applies.Add(1)
	return c.Provider.ApplyResourceChange(ctx, req, progress)
}

func (c *callCounter) PlanAndApplyResourceChange(ctx context.Context, req sdk.PlanApplyRequest, started func(time.Time), progress func(sdk.Progress)) sdk.PlanApplyResponse {
	c.planApplies.Add(1)
	return sdk.PlanAndApply(ctx, c.Provider, req, started, progress)
}

// TestApplyIsOneCallPerInstance: apply calls the provider once per
// created or updated instance (plan and apply in one), and destroy once
// per deleted one; the plan before it once per instance.
func TestApplyIsOneCallPerInstance(t *testing.T) {
	b := newBed(t)
	c := &callCounter{Provider: b.provs.provs["sftest"]}
	b.provs.provs["sftest"] = c
	count := func(step string, plans, applies, planApplies int64) {
		t.Helper()
		if p, a, pa := c.plans.Swap(0), c.applies.Swap(0), c.planApplies.Swap(0); p != plans || a != applies || pa != planApplies {
			t.Errorf("%s: %d plan, %d apply, %d plan-and-apply calls; want %d, %d, %d", step, p, a, pa, plans, applies, planApplies)
		}
	}
	r := b.cfg("chain_a_d")
	p := r.plan(PlanOptions{})
	count("plan of 2 creates", 2, 0, 0)
	r.apply(p)
	count("apply of 2 creates", 0, 0, 2)
	r = b.cfg("chain_a_d", "value=v2")
	r.apply(r.plan(PlanOptions{}))
	count("plan and apply of 2 updates", 2, 0, 2)
	r.apply(r.plan(PlanOptions{Mode: plans.DestroyMode}))
	count("destroy of 2", 0, 2, 0)
}
