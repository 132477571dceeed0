// This file holds the providers served in the host's own process
// (Options.InProcess).

package plugin

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// inProcess is a provider called directly, as the gRPC client would call
// a plugin in every way a provider can tell:
//   - values reach it without marks (sensitive), which the wire cannot
//     carry (sdk's client strips them too);
//   - a read or plan that returns the prior as sent says so (Unchanged),
//     as the gRPC server tells its client, so the engine keeps the object
//     it has, stored bytes and all;
//   - a panic in its code becomes the call's error diagnostic (the stack
//     in the debug log) instead of ending sparkform, as a plugin's crash
//     ends only the plugin. Such providers reach no node, so a call that
//     panicked changed nothing: an apply's response keeps the prior
//     value and is not an unknown outcome.
type inProcess struct {
	name string
	p    sdk.Provider
	log  hclog.Logger

	schemaOnce  sync.Once
	schema      *sdk.Schema
	schemaDiags sdk.Diagnostics
}

var _ sdk.Provider = (*inProcess)(nil)

// recovered turns r, a panic caught in method, into the call's error
// diagnostic, and logs its stack.
func (ip *inProcess) recovered(method string, r any) sdk.Diagnostics {
	ip.log.Error("provider panicked", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return sdk.Diagnostics{sdk.Errorf(nil, "Provider "+ip.name+" panicked",
		"the built-in provider %q panicked in %s: %v. This is a bug in sparkform; the debug log (SPARKFORM_LOG=debug) holds its stack. Nothing outside state was changed: this provider reaches no node.", ip.name, method, r)}
}

// GetSchema is asked once: the engine and the host ask for it per type.
func (ip *inProcess) GetSchema(ctx context.Context) (*sdk.Schema, sdk.Diagnostics) {
	ip.schemaOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				ip.schema, ip.schemaDiags = nil, ip.recovered("GetSchema", r)
			}
		}()
		ip.schema, ip.schemaDiags = ip.p.GetSchema(ctx)
	})
	return ip.schema, ip.schemaDiags
}

func (ip *inProcess) ValidateResourceConfig(ctx context.Context, req sdk.ValidateRequest) (diags sdk.Diagnostics) {
	req.Config = unmarked(req.Config)
	defer func() {
		if r := recover(); r != nil {
			diags = ip.recovered("ValidateResourceConfig", r)
		}
	}()
	return ip.p.ValidateResourceConfig(ctx, req)
}

func (ip *inProcess) ReadResources(ctx context.Context, req sdk.ReadRequest) (resp sdk.ReadResponse) {
	copied := false
	for i, it := range req.Resources {
		if !sdk.HasMarks(it.Prior) {
			continue
		}
		if !copied { // the caller's items stay as they are
			req.Resources, copied = append([]sdk.ReadItem(nil), req.Resources...), true
		}
		req.Resources[i].Prior, _ = it.Prior.UnmarkDeep()
		req.Resources[i].PriorStored = sdk.Stored{}
	}
	defer func() {
		if r := recover(); r != nil {
			resp = sdk.ReadResponse{Diagnostics: ip.recovered("ReadResources", r)}
		}
	}()
	resp = ip.p.ReadResources(ctx, req)
	if len(resp.Results) == len(req.Resources) {
		for i := range resp.Results {
			// As the gRPC server tells its client: the caller keeps what
			// it has (and its stored bytes) instead of comparing again.
			if r := &resp.Results[i]; r.NewState != cty.NilVal && r.NewState.RawEquals(req.Resources[i].Prior) {
				r.NewState, r.Unchanged = req.Resources[i].Prior, true
			}
		}
	}
	return resp
}

func (ip *inProcess) PlanResourceChange(ctx context.Context, req sdk.PlanRequest) (resp sdk.PlanResponse) {
	req.Prior, req.Config, req.Proposed, req.Replaces = unmarked(req.Prior), unmarked(req.Config), unmarked(req.Proposed), unmarked(req.Replaces)
	defer func() {
		if r := recover(); r != nil {
			resp = sdk.PlanResponse{Diagnostics: ip.recovered("PlanResourceChange", r)}
		}
	}()
	resp = ip.p.PlanResourceChange(ctx, req)
	if resp.Planned != cty.NilVal && req.Prior != cty.NilVal && !req.Prior.IsNull() && resp.Planned.RawEquals(req.Prior) {
		resp.Planned, resp.Unchanged = req.Prior, true // as the gRPC server says it
	}
	return resp
}

func (ip *inProcess) ApplyResourceChange(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) (resp sdk.ApplyResponse) {
	req.Prior, req.Planned, req.Config = unmarked(req.Prior), unmarked(req.Planned), unmarked(req.Config)
	defer func() {
		if r := recover(); r != nil {
			prior := req.Prior
			if prior == cty.NilVal {
				prior = cty.NullVal(req.Planned.Type())
			}
			resp = sdk.ApplyResponse{NewState: prior, Private: req.Private, Diagnostics: ip.recovered("ApplyResourceChange", r)}
		}
	}()
	return ip.p.ApplyResourceChange(ctx, req, progress)
}

func (ip *inProcess) ImportResource(ctx context.Context, req sdk.ImportRequest) (resp sdk.ImportResponse) {
	defer func() {
		if r := recover(); r != nil {
			resp = sdk.ImportResponse{Diagnostics: ip.recovered("ImportResource", r)}
		}
	}()
	return ip.p.ImportResource(ctx, req)
}

func (ip *inProcess) Stop(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("provider %s panicked in Stop: %v", ip.name, r)
		}
	}()
	return ip.p.Stop(ctx)
}

// inProcessProvider returns provider name when the host serves it in its
// own process (made on first use), else nil.
func (h *Host) inProcessProvider(name string) *inProcess {
	mk, ok := h.opts.InProcess[name]
	if !ok {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if ip := h.inproc[name]; ip != nil {
		return ip
	}
	if h.inproc == nil {
		h.inproc = map[string]*inProcess{}
	}
	ip := &inProcess{name: name, p: mk(), log: h.log.Named(name)}
	h.inproc[name] = ip
	ip.log.Debug("provider served in process")
	return ip
}

// inProcessStarted returns the in-process providers made so far.
func (h *Host) inProcessStarted() []*inProcess {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*inProcess, 0, len(h.inproc))
	for _, ip := range h.inproc {
		out = append(out, ip)
	}
	return out
}

// unmarked is v without marks, v itself when it has none (most values:
// looking costs a walk, not a copy).
func unmarked(v cty.Value) cty.Value {
	if !sdk.HasMarks(v) {
		return v
	}
	v, _ = v.UnmarkDeep()
	return v
}
