package sdk

import (
	"context"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk/proto"
)

// echo is a resource whose Read finds every prior unchanged.
type echo struct{}

var echoSchema = &ResourceSchema{Block: &Block{Attributes: map[string]*Attribute{
	"input": {Type: cty.DynamicPseudoType, Optional: true},
	"id":    {Type: cty.String, Computed: true},
}}}

func (echo) Schema() *ResourceSchema                         { return echoSchema }
func (echo) Validate(context.Context, cty.Value) Diagnostics { return nil }
func (echo) Read(_ context.Context, _ Node, items []ReadItem) ([]ReadResult, int, Diagnostics) {
	out := make([]ReadResult, len(items))
	for i, it := range items {
		out[i] = ReadResult{NewState: it.Prior}
	}
	return out, 0, nil
}
func (echo) Plan(_ context.Context, req PlanRequest) PlanResponse {
	return DefaultPlan(echoSchema, req)
}
func (echo) Apply(context.Context, ApplyRequest, func(Progress)) ApplyResponse {
	return ApplyResponse{}
}
func (echo) Import(context.Context, ImportRequest) ImportResponse { return ImportUnsupported("echo") }

// A prior that ReadResources decoded and found unchanged is not decoded
// again by the plan item that sends the same bytes: the plan takes it
// (once), plans as if it had decoded it, and other bytes still decode.
func TestPlanTakesTheReadPrior(t *testing.T) {
	s := NewGRPCServer(&Router{Name: "echo", Resources: map[string]Resource{"echo_thing": echo{}}})
	ctx := context.Background()
	ty := echoSchema.Block.ImpliedType()
	prior := cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("seed"), "id": cty.StringVal("ab")})
	b, err := encodeValue(prior, ty)
	if err != nil {
		t.Fatal(err)
	}
	if _, diags := s.loadSchema(ctx, "echo_thing"); diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	resp, err := s.ReadResources(ctx, &proto.ReadResources_Request{Items: []*proto.ReadResources_Item{{TypeName: "echo_thing", Address: "echo_thing.a", Prior: b}}})
	if err != nil || len(resp.Results) != 1 || !resp.Results[0].Unchanged {
		t.Fatalf("read: %v %v", resp, err)
	}
	if n := len(s.priors.m); n != 1 {
		t.Fatalf("%d priors kept after the read; want 1", n)
	}
	cfg, _ := encodeValue(cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("seed"), "id": cty.NullVal(cty.String)}), ty)
	for i := range 2 { // the second decodes
		pr := s.planOne(ctx, &proto.PlanResourceChange_Request{TypeName: "echo_thing", Address: "echo_thing.a", Prior: b, Config: cfg, ProposedDefault: true})
		if len(pr.Diagnostics) > 0 || !pr.PlannedUnchanged {
			t.Errorf("plan %d: unchanged %v, diags %v; want a plan with no change", i, pr.PlannedUnchanged, pr.Diagnostics)
		}
		if n := len(s.priors.m); n != 0 {
			t.Errorf("plan %d: %d priors kept; want the one taken", i, n)
		}
	}
	if _, ok := s.priors.take("other_type", b); ok {
		t.Errorf("a prior was taken for another type")
	}
}

// BenchmarkPlanItemAfterRead: one plan item of a no-op plan in the plugin,
// its prior taken from the ReadResources before it ("after-read") or
// decoded ("cold").
func BenchmarkPlanItemAfterRead(b *testing.B) {
	s := NewGRPCServer(&Router{Name: "echo", Resources: map[string]Resource{"echo_thing": echo{}}})
	ctx := context.Background()
	ty := echoSchema.Block.ImpliedType()
	prior, _ := encodeValue(cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("seed"), "id": cty.StringVal("ab")}), ty)
	cfg, _ := encodeValue(cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("seed"), "id": cty.NullVal(cty.String)}), ty)
	req := &proto.PlanResourceChange_Request{TypeName: "echo_thing", Address: "echo_thing.a", Prior: prior, Config: cfg, ProposedDefault: true}
	if _, diags := s.loadSchema(ctx, "echo_thing"); diags.HasErrors() {
		b.Fatal(diags.Err())
	}
	v, _ := decodeValue(prior, ty)
	for _, afterRead := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "after-read"}[afterRead], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if afterRead {
					s.priors.put("echo_thing", prior, v)
				}
				if r := s.planOne(ctx, req); !r.PlannedUnchanged {
					b.Fatal(r.Diagnostics)
				}
			}
		})
	}
}

// Taking a kept prior builds no key: a plan item's lookup allocates
// nothing, found or not; the same bytes kept for another type are not
// taken for this one.
func TestReadPriorsTakeAllocatesNothing(t *testing.T) {
	var r readPriors
	b := []byte("\xc1\x08\"string\"\xd9\x30" + strings.Repeat("seed", 12)) // as long as a real prior
	v := cty.StringVal(strings.Repeat("seed", 12))
	r.put("echo_thing", []byte("another prior"), v)
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := r.take("echo_thing", b); ok {
			t.Fatal("took a prior never kept")
		}
	}); n != 0 {
		t.Errorf("a miss allocates %v times; want 0", n)
	}
	r.put("other_thing", b, v)
	if _, ok := r.take("echo_thing", b); ok {
		t.Errorf("took another type's prior")
	}
	key := string(b)
	if n := testing.AllocsPerRun(100, func() {
		r.m[key] = readPrior{"echo_thing", v} // kept, with a key made once
		if got, ok := r.take("echo_thing", b); !ok || !got.RawEquals(v) {
			t.Fatalf("take = %#v, %v; want the kept prior", got, ok)
		}
	}); n != 0 {
		t.Errorf("a hit allocates %v times; want 0", n)
	}
}
