package builtin_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

var local = sdk.Node{Name: "node.local", Transport: "local"}

var idRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

func config(t *testing.T, p sdk.Provider, input, triggers cty.Value) cty.Value {
	rs := sdktest.Schema(t, p, builtin.TypeData)
	attrs := map[string]cty.Value{}
	if input != cty.NilVal {
		attrs["input"] = input
	}
	if triggers != cty.NilVal {
		attrs["triggers_replace"] = triggers
	}
	return sdktest.Object(t, rs.Block, attrs)
}

// Every kind of value a dynamic attribute can hold survives create and
// read through the real protocol, and output repeats input.
func TestCreateReadDynamicValues(t *testing.T) {
	p := sdktest.GRPC(t, builtin.New())
	cases := map[string]cty.Value{
		"null":   cty.NilVal,
		"string": cty.StringVal("hello"),
		"number": cty.NumberFloatVal(3.25),
		"object": cty.ObjectVal(map[string]cty.Value{
			"host": cty.StringVal("192.168.100.11"), "rank": cty.NumberIntVal(0),
			"tags": cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
		}),
		"tuple":        cty.TupleVal([]cty.Value{cty.True, cty.StringVal("x"), cty.NullVal(cty.String)}),
		"map":          cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")}),
		"set":          cty.SetVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2)}),
		"empty object": cty.EmptyObjectVal,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			state, _ := sdktest.Create(t, p, builtin.TypeData, local, config(t, p, in, cty.NilVal))
			if id := state.GetAttr("id"); !idRE.MatchString(id.AsString()) {
				t.Errorf("id = %q; want 16 hex digits", id.AsString())
			}
			want := in
			if want == cty.NilVal {
				want = cty.NullVal(cty.DynamicPseudoType)
			}
			if got := state.GetAttr("output"); !got.RawEquals(want) {
				t.Errorf("output = %#v; want %#v", got, want)
			}
			if got := state.GetAttr("input"); !got.RawEquals(want) {
				t.Errorf("input = %#v; want %#v", got, want)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	p := sdktest.GRPC(t, builtin.New())
	state, _ := sdktest.Create(t, p, builtin.TypeData, local, config(t, p, cty.StringVal("a"), cty.StringVal("t1")))
	id := state.GetAttr("id")

	tests := []struct {
		name        string
		input, trig cty.Value
		wantReplace bool
		wantID      cty.Value // unknown: a new id
		wantOutput  cty.Value
		wantSame    bool // planned == prior
	}{
		{name: "no change", input: cty.StringVal("a"), trig: cty.StringVal("t1"), wantID: id, wantOutput: cty.StringVal("a"), wantSame: true},
		{name: "input changed updates in place", input: cty.StringVal("b"), trig: cty.StringVal("t1"), wantID: id, wantOutput: cty.StringVal("b")},
		{name: "input changes type", input: cty.NumberIntVal(7), trig: cty.StringVal("t1"), wantID: id, wantOutput: cty.NumberIntVal(7)},
		{name: "unknown input gives unknown output", input: cty.UnknownVal(cty.String), trig: cty.StringVal("t1"), wantID: id, wantOutput: cty.UnknownVal(cty.String)},
		{name: "triggers changed replaces", input: cty.StringVal("a"), trig: cty.StringVal("t2"), wantReplace: true, wantID: cty.UnknownVal(cty.String), wantOutput: cty.StringVal("a")},
		{name: "unknown triggers replaces", input: cty.StringVal("a"), trig: cty.UnknownVal(cty.DynamicPseudoType), wantReplace: true, wantID: cty.UnknownVal(cty.String), wantOutput: cty.StringVal("a")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := sdktest.Plan(t, p, builtin.TypeData, local, state, nil, config(t, p, tc.input, tc.trig))
			if got := len(resp.RequiresReplace) > 0; got != tc.wantReplace {
				t.Errorf("replace = %v (%v); want %v", got, resp.RequiresReplace, tc.wantReplace)
			}
			if tc.wantReplace && !resp.RequiresReplace[0].Equals(cty.GetAttrPath("triggers_replace")) {
				t.Errorf("replace path = %#v; want triggers_replace", resp.RequiresReplace[0])
			}
			if got := resp.Planned.GetAttr("id"); !got.RawEquals(tc.wantID) {
				t.Errorf("id = %#v; want %#v", got, tc.wantID)
			}
			if got := resp.Planned.GetAttr("output"); !got.RawEquals(tc.wantOutput) {
				t.Errorf("output = %#v; want %#v", got, tc.wantOutput)
			}
			if got := resp.Planned.RawEquals(state); got != tc.wantSame {
				t.Errorf("planned == prior is %v; want %v", got, tc.wantSame)
			}
		})
	}
}

func TestCreateWithUnknownInputPlansUnknownOutput(t *testing.T) {
	p := sdktest.GRPC(t, builtin.New())
	rs := sdktest.Schema(t, p, builtin.TypeData)
	cfg := config(t, p, cty.ObjectVal(map[string]cty.Value{"a": cty.UnknownVal(cty.String)}), cty.NilVal)
	resp := sdktest.Plan(t, p, builtin.TypeData, local, cty.NullVal(rs.Block.ImpliedType()), nil, cfg)
	out := resp.Planned.GetAttr("output")
	if out.IsWhollyKnown() || out.GetAttr("a").IsKnown() {
		t.Errorf("output = %#v; want a.a unknown", out)
	}
	if resp.Planned.GetAttr("id").IsKnown() {
		t.Errorf("id is known at plan: %#v", resp.Planned.GetAttr("id"))
	}
}

func TestUpdateKeepsIDAndDestroy(t *testing.T) {
	p := sdktest.GRPC(t, builtin.New())
	state, priv := sdktest.Create(t, p, builtin.TypeData, local, config(t, p, cty.StringVal("a"), cty.NilVal))
	cfg := config(t, p, cty.StringVal("b"), cty.NilVal)
	plan := sdktest.Plan(t, p, builtin.TypeData, local, state, priv, cfg)
	applied, _ := sdktest.Apply(t, p, builtin.TypeData, local, state, plan.Planned, cfg, plan.PlannedPrivate)
	if !applied.NewState.GetAttr("id").RawEquals(state.GetAttr("id")) {
		t.Errorf("update changed id %v -> %v", state.GetAttr("id"), applied.NewState.GetAttr("id"))
	}
	if got := applied.NewState.GetAttr("output"); !got.RawEquals(cty.StringVal("b")) {
		t.Errorf("output = %#v; want \"b\"", got)
	}
	sdktest.Destroy(t, p, builtin.TypeData, local, applied.NewState, applied.Private)
}

func TestApplyRefusesUnknownInput(t *testing.T) {
	p := sdktest.GRPC(t, builtin.New())
	rs := sdktest.Schema(t, p, builtin.TypeData)
	null := cty.NullVal(rs.Block.ImpliedType())
	planned := sdktest.Object(t, rs.Block, map[string]cty.Value{
		"input": cty.UnknownVal(cty.String), "output": cty.UnknownVal(cty.String), "id": cty.UnknownVal(cty.String),
	})
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: builtin.TypeData, Address: "sparkform_data.x", Prior: null, Planned: planned}, nil)
	if !resp.Diagnostics.HasErrors() || !resp.NewState.IsNull() {
		t.Fatalf("apply of unknown input: state %#v diags %v; want an error and a null state", resp.NewState, resp.Diagnostics)
	}
	if got := resp.Diagnostics[0].Detail; !regexp.MustCompile(`sparkform_data\.x`).MatchString(got) {
		t.Errorf("detail %q does not name the instance", got)
	}
}

func TestImport(t *testing.T) {
	p := sdktest.GRPC(t, builtin.New())
	resp := p.ImportResource(context.Background(), sdk.ImportRequest{TypeName: builtin.TypeData, ID: "abc"})
	if resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics.Err())
	}
	if got := resp.State.GetAttr("id"); !got.RawEquals(cty.StringVal("abc")) {
		t.Errorf("id = %#v", got)
	}
	resp = p.ImportResource(context.Background(), sdk.ImportRequest{TypeName: builtin.TypeData})
	if !resp.Diagnostics.HasErrors() {
		t.Error("import of an empty id succeeded")
	}
}

// Read answers from prior alone: no round trips, results in order.
func TestReadBatchZeroRoundTrips(t *testing.T) {
	p := sdktest.GRPC(t, builtin.New())
	var items []sdk.ReadItem
	for i := range 50 {
		items = append(items, sdk.ReadItem{TypeName: builtin.TypeData, Address: fmt.Sprintf("sparkform_data.x[%d]", i),
			Prior: cty.ObjectVal(map[string]cty.Value{
				"input": cty.NumberIntVal(int64(i)), "output": cty.NumberIntVal(int64(i)),
				"triggers_replace": cty.NullVal(cty.DynamicPseudoType), "id": cty.StringVal(fmt.Sprint(i)),
			})})
	}
	resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: local, Resources: items})
	if resp.Diagnostics.HasErrors() || resp.RoundTrips != 0 || len(resp.Results) != len(items) {
		t.Fatalf("diags %v, round trips %d, %d results", resp.Diagnostics, resp.RoundTrips, len(resp.Results))
	}
	for i, r := range resp.Results {
		if !r.NewState.RawEquals(items[i].Prior) {
			t.Errorf("result %d = %#v; want %#v", i, r.NewState, items[i].Prior)
		}
	}
}

func BenchmarkPlanCreateInProcess(b *testing.B) {
	p := builtin.New()
	rs, _ := p.GetSchema(context.Background())
	blk := rs.ResourceTypes[builtin.TypeData].Block
	null := cty.NullVal(blk.ImpliedType())
	cfg := cty.ObjectVal(map[string]cty.Value{
		"input": cty.StringVal("x"), "triggers_replace": cty.NullVal(cty.DynamicPseudoType),
		"output": cty.NullVal(cty.DynamicPseudoType), "id": cty.NullVal(cty.String),
	})
	req := sdk.PlanRequest{TypeName: builtin.TypeData, Prior: null, Config: cfg, Proposed: sdk.ProposedNew(blk, null, cfg)}
	b.ReportAllocs()
	for b.Loop() {
		p.PlanResourceChange(context.Background(), req)
	}
}

// BenchmarkGRPCRead1000 is one batched ReadResources of 1,000 instances
// through in-process gRPC (the codec cost without a process boundary).
func BenchmarkGRPCRead1000(b *testing.B) {
	p := sdktest.GRPC(b, builtin.New())
	items := make([]sdk.ReadItem, 1000)
	for i := range items {
		v := cty.StringVal(fmt.Sprint("value-", i))
		items[i] = sdk.ReadItem{TypeName: builtin.TypeData, Address: fmt.Sprintf("sparkform_data.x[%d]", i),
			Prior: cty.ObjectVal(map[string]cty.Value{"input": v, "output": v,
				"triggers_replace": cty.NullVal(cty.DynamicPseudoType), "id": cty.StringVal(fmt.Sprintf("%016x", i))})}
	}
	req := sdk.ReadRequest{Node: local, Resources: items}
	b.ReportAllocs()
	for b.Loop() {
		if r := p.ReadResources(context.Background(), req); r.Diagnostics.HasErrors() || len(r.Results) != len(items) {
			b.Fatal(r.Diagnostics.Err())
		}
	}
}
