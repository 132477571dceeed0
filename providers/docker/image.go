package docker

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/distribution/reference"
	"github.com/moby/moby/client"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
)

type imageResource struct {
	clients *clients
	once    sync.Once
	schema  *sdk.ResourceSchema
}

var _ sdk.Resource = (*imageResource)(nil)

var pullModes = map[string]bool{"missing": true, "always": true, "never": true}

// Schema implements sdk.Resource.
func (r *imageResource) Schema() *sdk.ResourceSchema {
	r.once.Do(func() {
		r.schema = &sdk.ResourceSchema{
			// What an instance manages on its node: two instances with the same
			// value on one node are refused at plan.
			Identity:    []string{"name"},
			Description: "An image present on the node, pulled through the Engine API with per-layer progress.",
			Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
				"name":         {Type: cty.String, Required: true, ForceNew: true, Description: "Image reference, e.g. \"ghcr.io/org/img:tag\" or \"127.0.0.1:5000/img@sha256:...\"."},
				"pull":         {Type: cty.String, Optional: true, Description: "\"missing\" (default): pull only when absent; \"always\": pull when the registry's digest moved (checked at plan); \"never\": fail when absent."},
				"keep_locally": {Type: cty.Bool, Optional: true, Description: "Keep the image on the node on destroy (default true)."},
				"image_id":     {Type: cty.String, Computed: true, Description: "Local image ID (sha256:...)."},
				"repo_digest":  {Type: cty.String, Computed: true, Description: "repo@sha256:... of the pulled manifest; empty for an image that was built or loaded locally."},
			}},
		}
	})
	return r.schema
}

// Validate implements sdk.Resource.
func (r *imageResource) Validate(_ context.Context, v cty.Value) sdk.Diagnostics {
	var diags sdk.Diagnostics
	if n := ctyval.Attr(v, "name"); ctyval.IsSet(n) {
		if _, err := reference.ParseNormalizedNamed(n.AsString()); err != nil {
			diags = append(diags, sdk.Errorf(sdk.AttrPath("name"), "Invalid image reference", "%q: %v; write it as [registry/]repo[:tag|@digest]", n.AsString(), err))
		}
	}
	if p := ctyval.Attr(v, "pull"); ctyval.IsSet(p) && !pullModes[p.AsString()] {
		diags = append(diags, sdk.Errorf(sdk.AttrPath("pull"), "Invalid pull mode", "%q: use \"missing\", \"always\" or \"never\"", p.AsString()))
	}
	return diags
}

func pullMode(v cty.Value) string {
	if p := ctyval.Str(ctyval.Attr(v, "pull")); p != "" {
		return p
	}
	return "missing"
}

// observeImage reads name on the node; found is false when it is absent.
func observeImage(ctx context.Context, d *dockerClient, base cty.Value) (cty.Value, bool, error) {
	name := ctyval.Str(ctyval.Attr(base, "name"))
	img, err := d.api.ImageInspect(ctx, name)
	if isNotFound(err) {
		return cty.NilVal, false, nil
	}
	if err != nil {
		return cty.NilVal, false, err
	}
	vals := base.AsValueMap()
	vals["image_id"] = cty.StringVal(img.ID)
	vals["repo_digest"] = cty.StringVal(repoDigest(name, img.RepoDigests))
	return cty.ObjectVal(vals), true, nil
}

// repoDigest picks the RepoDigests entry of name's repository.
func repoDigest(name string, digests []string) string {
	r, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return ""
	}
	for _, d := range digests {
		if dr, err := reference.ParseNormalizedNamed(d); err == nil && dr.Name() == r.Name() {
			return d
		}
	}
	return ""
}

// Read implements sdk.Resource: one inspect per image, concurrently. The
// provider's ReadResources runs these alongside docker_container inspects.
func (r *imageResource) Read(ctx context.Context, n sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	d, err := r.clients.get(ctx, n)
	if err != nil {
		return nil, 0, sdk.Diagnostics{sdk.FromError("Cannot reach Docker on "+n.Name, err)}
	}
	results := make([]sdk.ReadResult, len(items))
	return results, runWave(d.readParallel(), r.readJobs(ctx, d, items, results)), nil
}

// readJobs returns one independent job per item that reads it into out[i].
func (r *imageResource) readJobs(ctx context.Context, d *dockerClient, items []sdk.ReadItem, out []sdk.ReadResult) []func() {
	jobs := make([]func(), len(items))
	for i, it := range items {
		jobs[i] = func() {
			res := sdk.ReadResult{Private: it.Private, NewState: cty.NullVal(r.Schema().Block.ImpliedType())}
			v, found, err := observeImage(ctx, d, stripUnknown(it.Prior))
			switch {
			case err != nil:
				res.NewState = it.Prior
				res.Diagnostics = sdk.Diagnostics{sdk.FromError("Cannot inspect image for "+it.Address, err)}
			case found:
				res.NewState = v
			}
			out[i] = res
		}
	}
	return jobs
}

// Plan implements sdk.Resource. With pull = "always" it asks the registry
// (through the node's engine) for the current digest and plans a pull when
// it differs from the one on the node.
func (r *imageResource) Plan(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	s := r.Schema()
	resp := sdk.DefaultPlan(s, req)
	if req.Offline || req.Prior.IsNull() || req.Proposed.IsNull() || len(resp.RequiresReplace) > 0 || pullMode(req.Proposed) != "always" {
		return resp
	}
	d, err := r.clients.get(ctx, req.Node)
	if err != nil {
		resp.Diagnostics = append(resp.Diagnostics, sdk.FromError("Cannot reach Docker on "+req.Node.Name, err))
		return resp
	}
	name := ctyval.Str(req.Proposed.GetAttr("name"))
	dist, err := d.api.DistributionInspect(ctx, name, client.DistributionInspectOptions{})
	if err != nil {
		resp.Diagnostics = append(resp.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning,
			Summary: "Cannot check the registry for " + name, Detail: err.Error() + "; keeping the image on the node"})
		return resp
	}
	have := ctyval.Str(req.Prior.GetAttr("repo_digest"))
	if _, dg, _ := strings.Cut(have, "@"); dg == dist.Descriptor.Digest.String() {
		return resp
	}
	vals := req.Proposed.AsValueMap()
	vals["image_id"] = cty.UnknownVal(cty.String)
	vals["repo_digest"] = cty.UnknownVal(cty.String)
	resp.Planned = cty.ObjectVal(vals)
	return resp
}

// Apply implements sdk.Resource.
func (r *imageResource) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	d, err := r.clients.get(ctx, req.Node)
	if err != nil {
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot reach Docker on "+req.Node.Name, err)}}
	}
	if req.Planned.IsNull() {
		if ctyval.Bool(ctyval.Attr(req.Prior, "keep_locally"), true) {
			return sdk.ApplyResponse{NewState: req.Planned, Private: req.Private}
		}
		name := ctyval.Str(ctyval.Attr(req.Prior, "name"))
		if _, err := d.api.ImageRemove(ctx, name, client.ImageRemoveOptions{}); err != nil && !isNotFound(err) {
			return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.FromError(
				"Cannot remove image "+name, fmt.Errorf("%w (a container may still use it; or set keep_locally = true)", err))}}
		}
		progress(sdk.Progress{Message: "removed image " + name})
		return sdk.ApplyResponse{NewState: req.Planned, Private: req.Private}
	}
	base := stripUnknown(req.Planned)
	name := ctyval.Str(base.GetAttr("name"))
	cur, found, err := observeImage(ctx, d, base)
	if err != nil {
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot inspect image "+name, err)}}
	}
	mode := pullMode(base)
	needPull := !found || (mode == "always" && !ctyval.Known(req.Planned.GetAttr("repo_digest")))
	if needPull && mode == "never" {
		return sdk.ApplyResponse{NewState: cty.NullVal(r.Schema().Block.ImpliedType()), Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.Errorf(sdk.AttrPath("name"),
			"Image not on "+req.Node.Name, "%v: %s is not on the node and pull = \"never\"; load it there or set pull = \"missing\"", ErrImageMissing, name)}}
	}
	if needPull {
		if err := pull(ctx, d, name, progress); err != nil {
			st := req.Prior
			if found {
				st = cur
			}
			return sdk.ApplyResponse{NewState: st, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot pull "+name, err)}}
		}
		cur, found, err = observeImage(ctx, d, base)
		if err != nil || !found {
			if err == nil {
				err = fmt.Errorf("the pull finished but %s is not on the node", name)
			}
			return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot inspect image "+name, err)}}
		}
	}
	return sdk.ApplyResponse{NewState: cur, Private: req.Private}
}

// Import implements sdk.Resource: ID is the image reference.
func (r *imageResource) Import(ctx context.Context, req sdk.ImportRequest) sdk.ImportResponse {
	d, err := r.clients.get(ctx, req.Node)
	if err != nil {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot reach Docker on "+req.Node.Name, err)}}
	}
	base := cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(req.ID), "pull": cty.NullVal(cty.String),
		"keep_locally": cty.NullVal(cty.Bool), "image_id": cty.NullVal(cty.String), "repo_digest": cty.NullVal(cty.String)})
	v, found, err := observeImage(ctx, d, base)
	if err != nil {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot import image "+req.ID, err)}}
	}
	if !found {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Image not found", "%s is not on %s", req.ID, req.Node.Name)}}
	}
	return sdk.ImportResponse{State: v}
}
