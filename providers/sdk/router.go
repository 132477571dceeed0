package sdk

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/zclconf/go-cty/cty"
)

// Resource is the implementation of one resource type. Router turns a set
// of Resources into a Provider.
type Resource interface {
	Schema() *ResourceSchema
	// Validate checks a config value (may hold unknowns); no node access.
	Validate(ctx context.Context, config cty.Value) Diagnostics
	// Read observes every listed instance of this type on node, ideally in
	// one remote round trip. It returns one result per item, in order, and
	// the number of remote round trips it made.
	Read(ctx context.Context, node Node, items []ReadItem) (results []ReadResult, roundTrips int, diags Diagnostics)
	Plan(ctx context.Context, req PlanRequest) PlanResponse
	Apply(ctx context.Context, req ApplyRequest, progress func(Progress)) ApplyResponse
	Import(ctx context.Context, req ImportRequest) ImportResponse
}

// Router serves a set of resource types as one Provider.
type Router struct {
	Name      string
	Resources map[string]Resource

	mu      sync.Mutex
	cancels map[*context.CancelFunc]struct{}
}

var _ Provider = (*Router)(nil)

// GetSchema implements Provider.
func (r *Router) GetSchema(context.Context) (*Schema, Diagnostics) {
	s := &Schema{ResourceTypes: make(map[string]*ResourceSchema, len(r.Resources))}
	for name, res := range r.Resources {
		s.ResourceTypes[name] = res.Schema()
	}
	return s, nil
}

func (r *Router) lookup(typeName string) (Resource, Diagnostics) {
	res, ok := r.Resources[typeName]
	if !ok {
		names := make([]string, 0, len(r.Resources))
		for n := range r.Resources {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, Diagnostics{Errorf(nil, "Unknown resource type",
			"provider %q has no resource type %q; it serves %v", r.Name, typeName, names)}
	}
	return res, nil
}

// track returns a context that Stop cancels.
func (r *Router) track(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	if r.cancels == nil {
		r.cancels = make(map[*context.CancelFunc]struct{})
	}
	r.cancels[&cancel] = struct{}{}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.cancels, &cancel)
		r.mu.Unlock()
		cancel()
	}
}

// ValidateResourceConfig implements Provider.
func (r *Router) ValidateResourceConfig(ctx context.Context, req ValidateRequest) Diagnostics {
	res, diags := r.lookup(req.TypeName)
	if diags.HasErrors() {
		return diags
	}
	return res.Validate(ctx, req.Config)
}

// ReadResources implements Provider: it splits the batch by type, lets each
// type read its share in one go, and puts the results back in order.
func (r *Router) ReadResources(ctx context.Context, req ReadRequest) ReadResponse {
	ctx, done := r.track(ctx)
	defer done()
	resp := ReadResponse{Results: make([]ReadResult, len(req.Resources))}
	byType := map[string][]int{}
	var order []string
	for i, it := range req.Resources {
		if _, ok := byType[it.TypeName]; !ok {
			order = append(order, it.TypeName)
		}
		byType[it.TypeName] = append(byType[it.TypeName], i)
	}
	for _, typeName := range order {
		idx := byType[typeName]
		res, diags := r.lookup(typeName)
		if diags.HasErrors() {
			resp.Diagnostics = append(resp.Diagnostics, diags...)
			continue
		}
		items := make([]ReadItem, len(idx))
		for j, i := range idx {
			items[j] = req.Resources[i]
		}
		results, trips, diags := res.Read(ctx, req.Node, items)
		resp.RoundTrips += trips
		resp.Diagnostics = append(resp.Diagnostics, diags...)
		if len(results) != len(items) && !diags.HasErrors() {
			resp.Diagnostics = append(resp.Diagnostics, Errorf(nil, "Provider bug",
				"%s returned %d read results for %d instances", typeName, len(results), len(items)))
			continue
		}
		for j := range results {
			resp.Results[idx[j]] = results[j]
		}
	}
	return resp
}

// PlanResourceChange implements Provider.
func (r *Router) PlanResourceChange(ctx context.Context, req PlanRequest) PlanResponse {
	res, diags := r.lookup(req.TypeName)
	if diags.HasErrors() {
		return PlanResponse{Diagnostics: diags}
	}
	ctx, done := r.track(ctx)
	defer done()
	// Plan validates first: the engine makes no separate validation call
	// per instance, so this is where known values are checked.
	var warnings Diagnostics
	if !req.Config.IsNull() {
		vd := res.Validate(ctx, req.Config)
		if vd.HasErrors() {
			return PlanResponse{Diagnostics: vd}
		}
		warnings = vd
	}
	if req.Proposed == cty.NilVal {
		req.Proposed = ProposedNew(res.Schema().Block, req.Prior, req.Config)
	}
	resp := res.Plan(ctx, req)
	resp.Diagnostics = append(warnings, resp.Diagnostics...)
	return resp
}

// ApplyResourceChange implements Provider.
func (r *Router) ApplyResourceChange(ctx context.Context, req ApplyRequest, progress func(Progress)) ApplyResponse {
	res, diags := r.lookup(req.TypeName)
	if diags.HasErrors() {
		return ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: diags}
	}
	ctx, done := r.track(ctx)
	defer done()
	if progress == nil {
		progress = func(Progress) {}
	}
	return res.Apply(ctx, req, progress)
}

// ImportResource implements Provider.
func (r *Router) ImportResource(ctx context.Context, req ImportRequest) ImportResponse {
	res, diags := r.lookup(req.TypeName)
	if diags.HasErrors() {
		return ImportResponse{Diagnostics: diags}
	}
	ctx, done := r.track(ctx)
	defer done()
	return res.Import(ctx, req)
}

// Stop implements Provider: it cancels the context of every call in flight.
func (r *Router) Stop(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.cancels {
		(*c)()
	}
	return nil
}

// ImportUnsupported is an Import for resource types that cannot be imported.
func ImportUnsupported(typeName string) ImportResponse {
	return ImportResponse{Diagnostics: Diagnostics{Errorf(nil, "Import not supported",
		"%s cannot be imported", typeName)}}
}

// ErrNotFound is returned by helpers when an object does not exist.
var ErrNotFound = fmt.Errorf("not found")
