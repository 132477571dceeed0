package builtin

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// Name is the provider's name; its resource types start with "sparkform_".
const Name = "sparkform"

// TypeData is the resource type name of sparkform_data.
const TypeData = "sparkform_data"

// New returns the provider.
func New() sdk.Provider {
	return &sdk.Router{Name: Name, Resources: map[string]sdk.Resource{TypeData: data{}}}
}

// data is sparkform_data. It keeps no state of its own: everything is in
// the values the engine passes.
type data struct{}

var _ sdk.Resource = data{}

var dataSchema = &sdk.ResourceSchema{
	LocalPlan:   true, // Plan looks at the values it is given and nothing else
	LocalApply:  true, // so does Apply: input is copied, the id is random
	Description: "A value kept in state: input is copied to output, id is random and set at create; changing triggers_replace replaces the resource. It touches no node, so `node` is optional (without it nothing is reached or checked).",
	Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
		"input": {Type: cty.DynamicPseudoType, Optional: true,
			Description: "Any value; output repeats it. Changing it updates in place."},
		"triggers_replace": {Type: cty.DynamicPseudoType, Optional: true, ForceNew: true,
			Description: "Any value; when it changes the resource is replaced (a new id)."},
		"output": {Type: cty.DynamicPseudoType, Computed: true, SensitiveWith: []string{"input"},
			Description: "The value of input (unknown while input is); sensitive when input is."},
		"id": {Type: cty.String, Computed: true,
			Description: "A random id chosen at create."},
	}},
}

// Computed once: the router calls Schema for every request that needs it.
var dataType = dataSchema.Block.ImpliedType()

func (data) Schema() *sdk.ResourceSchema { return dataSchema }

func (data) Validate(context.Context, cty.Value) sdk.Diagnostics { return nil }

// Read returns prior as is: the object lives only in state.
func (data) Read(_ context.Context, _ sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	out := make([]sdk.ReadResult, len(items))
	for i, it := range items {
		out[i] = sdk.ReadResult{NewState: it.Prior, Private: it.Private}
	}
	return out, 0, nil
}

func obj(input, triggers, id cty.Value) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"input": input, "triggers_replace": triggers, "output": input, "id": id,
	})
}

func (data) Plan(_ context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	if req.Proposed.IsNull() { // delete
		return sdk.PlanResponse{Planned: req.Proposed}
	}
	if !req.Proposed.IsKnown() {
		return sdk.PlanResponse{Planned: cty.UnknownVal(dataType)}
	}
	input := req.Proposed.GetAttr("input")
	triggers := req.Proposed.GetAttr("triggers_replace")
	unknownID := cty.UnknownVal(cty.String)
	if req.Prior.IsNull() { // create
		return sdk.PlanResponse{Planned: obj(input, triggers, unknownID)}
	}
	if !sdk.ValuesEqual(req.Prior.GetAttr("triggers_replace"), triggers) {
		return sdk.PlanResponse{
			Planned:         obj(input, triggers, unknownID),
			RequiresReplace: []cty.Path{cty.GetAttrPath("triggers_replace")},
		}
	}
	if sdk.ValuesEqual(req.Prior.GetAttr("input"), input) {
		return sdk.PlanResponse{Planned: req.Prior}
	}
	return sdk.PlanResponse{Planned: obj(input, triggers, req.Prior.GetAttr("id"))}
}

func (data) Apply(_ context.Context, req sdk.ApplyRequest, _ func(sdk.Progress)) sdk.ApplyResponse {
	if req.Planned.IsNull() { // delete: nothing to undo anywhere
		return sdk.ApplyResponse{NewState: req.Planned}
	}
	input := req.Planned.GetAttr("input")
	triggers := req.Planned.GetAttr("triggers_replace")
	if !input.IsWhollyKnown() || !triggers.IsWhollyKnown() {
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{
			sdk.Errorf(cty.GetAttrPath("input"), "Value not known at apply",
				"input and triggers_replace must be known when %s is applied; the engine should have resolved every reference first", req.Address)}}
	}
	id := req.Planned.GetAttr("id")
	if !id.IsKnown() || id.IsNull() {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
		id = cty.StringVal(hex.EncodeToString(b[:]))
	}
	return sdk.ApplyResponse{NewState: obj(input, triggers, id)}
}

// Import adopts id as an existing sparkform_data with no input.
func (data) Import(_ context.Context, req sdk.ImportRequest) sdk.ImportResponse {
	if req.ID == "" {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Empty import id",
			"give the id to import, e.g. `sparkform import sparkform_data.x 3f2a9c1b7d4e5f60`")}}
	}
	null := cty.NullVal(cty.DynamicPseudoType)
	return sdk.ImportResponse{State: obj(null, null, cty.StringVal(req.ID))}
}
