package docker

import (
	"context"
	"fmt"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// BenchmarkPlanManyBindFiles: the provider-side cost of validating and
// planning (no change) a container with MaxBinds bind_files, the seed's
// per-file model binds at their limit. No node access is needed for it.
func BenchmarkPlanManyBindFiles(b *testing.B) {
	p := New()
	rs := sdktest.Schema(b, p, ctype)
	vs := make([]cty.Value, MaxBinds)
	for i := range vs {
		vs[i] = cty.ObjectVal(map[string]cty.Value{
			"source": cty.StringVal(fmt.Sprintf("/mnt/nas/hub/blobs/%064x", i)),
			"target": cty.StringVal(fmt.Sprintf("/model/shard-%06d.safetensors", i)),
		})
	}
	attrs := map[string]cty.Value{"name": cty.StringVal("c"), "image": cty.StringVal("busybox"), "bind_files": cty.ListVal(vs)}
	config := sdktest.Object(b, rs.Block, attrs)
	attrs["id"], attrs["image_id"], attrs["running"], attrs["exit_code"] = cty.StringVal("0123"), cty.StringVal("sha256:0"), cty.True, cty.Zero
	prior := sdktest.Object(b, rs.Block, attrs)
	n := sdk.Node{Name: "local", Transport: "local"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: ctype, Config: config}); diags.HasErrors() {
			b.Fatal(diags.Err())
		}
		resp := p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: ctype, Address: ctype + ".b", Node: n,
			Prior: prior, Config: config, Proposed: sdk.ProposedNew(rs.Block, prior, config)})
		if resp.Diagnostics.HasErrors() || !resp.Planned.RawEquals(prior) {
			b.Fatalf("plan: %v; no-change plan expected", resp.Diagnostics.Err())
		}
	}
}
