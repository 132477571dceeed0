package sdk_test

import (
	"context"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// observed plans "free" (Volatile) and "note" from its fields.
type observed struct{ free, note string }

var observedSchema = &sdk.ResourceSchema{Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
	"name": {Type: cty.String, Required: true},
	"free": {Type: cty.String, Computed: true, Volatile: true},
	"note": {Type: cty.String, Computed: true},
}}}

func (o *observed) Schema() *sdk.ResourceSchema                         { return observedSchema }
func (o *observed) Validate(context.Context, cty.Value) sdk.Diagnostics { return nil }
func (o *observed) Import(context.Context, sdk.ImportRequest) sdk.ImportResponse {
	return sdk.ImportResponse{}
}
func (o *observed) Read(_ context.Context, _ sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	return nil, 0, nil
}
func (o *observed) Plan(_ context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	return sdk.PlanResponse{Planned: cty.ObjectVal(map[string]cty.Value{"name": req.Config.GetAttr("name"),
		"free": cty.StringVal(o.free), "note": cty.StringVal(o.note)})}
}
func (o *observed) Apply(_ context.Context, req sdk.ApplyRequest, _ func(sdk.Progress)) sdk.ApplyResponse {
	return sdk.ApplyResponse{NewState: req.Planned}
}

// TestVolatileNotHeldAtApply: an apply that plans again is not held to a
// Volatile attribute the reviewed plan showed (free space moves between
// plan and apply), but still to every other known value; over the wire
// (the plugin checks) and in process.
func TestVolatileNotHeldAtApply(t *testing.T) {
	o := &observed{free: "10 GB", note: "commit a"}
	router := &sdk.Router{Name: "test", Resources: map[string]sdk.Resource{"test_observed": o}}
	for name, p := range map[string]sdk.Provider{"grpc": sdktest.GRPC(t, router), "in process": router} {
		t.Run(name, func(t *testing.T) {
			o.free, o.note = "10 GB", "commit a"
			cfg := cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("x"), "free": cty.NullVal(cty.String), "note": cty.NullVal(cty.String)})
			reviewed := cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("x"), "free": cty.StringVal("10 GB"), "note": cty.StringVal("commit a")})
			null := cty.NullVal(reviewed.Type())
			call := func() sdk.PlanApplyResponse {
				return sdk.PlanAndApply(context.Background(), p, sdk.PlanApplyRequest{TypeName: "test_observed", Address: "test_observed.x",
					Prior: null, Config: cfg, Reviewed: reviewed}, nil, nil)
			}
			o.free = "9 GB"
			if r := call(); !r.Applied || r.Diagnostics.HasErrors() || r.NewState.GetAttr("free").AsString() != "9 GB" {
				t.Fatalf("a moved volatile value: applied %v, changed %v, diags %v", r.Applied, sdk.DescribePath(r.Changed), r.Diagnostics.Err())
			}
			o.note = "commit b"
			if r := call(); r.Applied || !r.PlanChanged || sdk.DescribePath(r.Changed) != "note" {
				t.Fatalf("a moved non-volatile value: applied %v, changed %v at %q", r.Applied, r.PlanChanged, sdk.DescribePath(r.Changed))
			}
		})
	}
}
