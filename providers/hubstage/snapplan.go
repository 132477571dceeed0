package hubstage

import (
	"context"

	"github.com/sparkform/sparkform/providers/sdk"
)

// Read implements sdk.Resource.
func (r *snapshot) Read(ctx context.Context, n sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	results := make([]sdk.ReadResult, len(items))
	for i, it := range items {
		results[i] = sdk.ReadResult{NewState: it.Prior, Private: it.Private}
	}
	return results, 0, nil
}

// Plan implements sdk.Resource.
func (r *snapshot) Plan(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	return sdk.DefaultPlan(snapSchema, req)
}

// Apply implements sdk.Resource.
func (r *snapshot) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private}
}
