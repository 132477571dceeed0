package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/sparkform/sparkform/providers/sdk/proto"
)

// GRPCClient is the engine side of the protocol: a Provider whose every
// method is one RPC to a plugin. The schema is fetched once and cached;
// values are encoded with it. Cancelling a call's ctx cancels the RPC and
// so the provider's ctx on the plugin side.
type GRPCClient struct {
	client proto.ProviderClient

	// OnRPCError, when set, builds the diagnostic for an RPC that failed
	// in transport (plugin crashed, connection lost); the plugin host uses
	// it to name the provider and add the plugin's stderr. op is the RPC
	// method name, address the instance(s) it was about (may be empty).
	// Set it before the first call.
	OnRPCError func(op, address string, err error) Diagnostic

	mu     sync.Mutex // serialises the GetSchema fetch
	schema atomic.Pointer[clientSchema]

	plans   *clientMux[*proto.PlanResourceChange_Request, *proto.PlanResourceChange_Response]
	applies *clientMux[*proto.ApplyResourceChange_Request, *proto.ApplyResourceChange_Event]
}

type clientSchema struct {
	schema *Schema
	types  map[string]cty.Type
	// typeJSONs is each type's cty JSON, to tell whether a Stored value's
	// bytes are those of the type (encodeStored).
	typeJSONs map[string][]byte
}

var (
	_ Provider       = (*GRPCClient)(nil)
	_ BatchValidator = (*GRPCClient)(nil)
	_ PlanApplier    = (*GRPCClient)(nil)
)

// NewGRPCClient returns a Provider that talks to the provider served on conn.
func NewGRPCClient(conn grpc.ClientConnInterface) *GRPCClient {
	c := &GRPCClient{client: proto.NewProviderClient(conn)}
	c.plans = &clientMux[*proto.PlanResourceChange_Request, *proto.PlanResourceChange_Response]{
		open: func(ctx context.Context) (muxStream[*proto.PlanResourceChange_Request, *proto.PlanResourceChange_Response], error) {
			st, err := c.client.PlanResourceChanges(ctx, callOpts...)
			if err != nil {
				return nil, err
			}
			return planClientStream{st}, nil
		},
		final: func(*proto.PlanResourceChange_Response) bool { return true },
		size: func(r *proto.PlanResourceChange_Request) int {
			return len(r.Prior) + len(r.Config) + len(r.Proposed) + len(r.Replaces) + len(r.PriorPrivate) + 256
		},
	}
	c.applies = &clientMux[*proto.ApplyResourceChange_Request, *proto.ApplyResourceChange_Event]{
		open: func(ctx context.Context) (muxStream[*proto.ApplyResourceChange_Request, *proto.ApplyResourceChange_Event], error) {
			st, err := c.client.ApplyResourceChanges(ctx, callOpts...)
			if err != nil {
				return nil, err
			}
			return applyClientStream{st}, nil
		},
		final: func(ev *proto.ApplyResourceChange_Event) bool { return ev.GetResult() != nil },
		size: func(r *proto.ApplyResourceChange_Request) int {
			return len(r.Prior) + len(r.Planned) + len(r.Config) + len(r.Private) + len(r.Reviewed) + len(r.Replaces) + 256
		},
	}
	return c
}

type planClientStream struct {
	grpc.BidiStreamingClient[proto.PlanResourceChanges_Batch, proto.PlanResourceChanges_Results]
}

func (s planClientStream) send(items []muxItem[*proto.PlanResourceChange_Request], cancels []uint64) error {
	b := &proto.PlanResourceChanges_Batch{Items: make([]*proto.PlanResourceChanges_Item, len(items)), Cancel: cancels}
	for i, it := range items {
		b.Items[i] = &proto.PlanResourceChanges_Item{Id: it.id, Request: it.v}
	}
	return s.Send(b)
}

func (s planClientStream) recv() ([]muxItem[*proto.PlanResourceChange_Response], error) {
	m, err := s.Recv()
	if err != nil {
		return nil, err
	}
	out := make([]muxItem[*proto.PlanResourceChange_Response], len(m.Results))
	for i, r := range m.Results {
		resp := r.Response
		if resp == nil {
			resp = &proto.PlanResourceChange_Response{}
		}
		out[i] = muxItem[*proto.PlanResourceChange_Response]{r.Id, resp}
	}
	return out, nil
}

type applyClientStream struct {
	grpc.BidiStreamingClient[proto.ApplyResourceChanges_Batch, proto.ApplyResourceChanges_Events]
}

func (s applyClientStream) send(items []muxItem[*proto.ApplyResourceChange_Request], cancels []uint64) error {
	b := &proto.ApplyResourceChanges_Batch{Items: make([]*proto.ApplyResourceChanges_Item, len(items)), Cancel: cancels}
	for i, it := range items {
		b.Items[i] = &proto.ApplyResourceChanges_Item{Id: it.id, Request: it.v}
	}
	return s.Send(b)
}

func (s applyClientStream) recv() ([]muxItem[*proto.ApplyResourceChange_Event], error) {
	m, err := s.Recv()
	if err != nil {
		return nil, err
	}
	out := make([]muxItem[*proto.ApplyResourceChange_Event], 0, len(m.Events))
	for _, e := range m.Events {
		if e.Event != nil {
			out = append(out, muxItem[*proto.ApplyResourceChange_Event]{e.Id, e.Event})
		}
	}
	return out, nil
}

var callOpts = []grpc.CallOption{grpc.MaxCallRecvMsgSize(MaxMessageSize), grpc.MaxCallSendMsgSize(MaxMessageSize)}

func (c *GRPCClient) rpcError(ctx context.Context, op, address string, err error) Diagnostic {
	if ctx.Err() != nil {
		what := op
		if address != "" {
			what += " of " + address
		}
		return Errorf(nil, "Cancelled", "%s was cancelled: %v", what, context.Cause(ctx))
	}
	if c.OnRPCError != nil {
		return c.OnRPCError(op, address, err)
	}
	msg := err.Error()
	if st, ok := status.FromError(err); ok {
		msg = st.Message()
	}
	if address != "" {
		return Errorf(nil, "Provider call failed", "%s of %s: %s", op, address, msg)
	}
	return Errorf(nil, "Provider call failed", "%s: %s", op, msg)
}

func (c *GRPCClient) loadSchema(ctx context.Context) (*clientSchema, Diagnostics) {
	if s := c.schema.Load(); s != nil {
		return s, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.schema.Load(); s != nil {
		return s, nil
	}
	resp, err := c.client.GetSchema(ctx, &proto.GetSchema_Request{}, callOpts...)
	if err != nil {
		return nil, Diagnostics{c.rpcError(ctx, "GetSchema", "", err)}
	}
	diags := diagsFromProto(resp.Diagnostics)
	if diags.HasErrors() {
		return nil, diags // not cached: a later call asks again
	}
	schema, err := schemaFromProto(resp.Schema)
	if err != nil {
		return nil, append(diags, Errorf(nil, "Invalid provider schema", "%v", err))
	}
	s := &clientSchema{schema: schema, types: impliedTypes(schema)}
	s.typeJSONs = make(map[string][]byte, len(s.types))
	for name, ty := range s.types {
		if js, err := ty.MarshalJSON(); err == nil {
			s.typeJSONs[name] = js
		}
	}
	c.schema.Store(s)
	return s, diags
}

func (c *GRPCClient) typeOf(ctx context.Context, name string) (cty.Type, Diagnostics) {
	ty, _, diags := c.typeAndJSON(ctx, name)
	return ty, diags
}

// typeAndJSON is typeOf with the type's cty JSON.
func (c *GRPCClient) typeAndJSON(ctx context.Context, name string) (cty.Type, []byte, Diagnostics) {
	s, diags := c.loadSchema(ctx)
	if diags.HasErrors() {
		return cty.NilType, nil, diags
	}
	ty, ok := s.types[name]
	if !ok {
		return cty.NilType, nil, Diagnostics{unknownType(name, s.types)}
	}
	return ty, s.typeJSONs[name], nil
}

// GetSchema implements Provider. The returned Schema is shared and cached:
// callers must not modify it.
func (c *GRPCClient) GetSchema(ctx context.Context) (*Schema, Diagnostics) {
	s, diags := c.loadSchema(ctx)
	if s == nil {
		return nil, diags
	}
	return s.schema, diags
}

// ValidateResourceConfig implements Provider: a batch of one.
func (c *GRPCClient) ValidateResourceConfig(ctx context.Context, req ValidateRequest) Diagnostics {
	return c.ValidateResourceConfigs(ctx, []ValidateRequest{req})[0]
}

// ValidateResourceConfigs implements BatchValidator: one RPC for all of
// reqs, each distinct (type, value) sent once.
func (c *GRPCClient) ValidateResourceConfigs(ctx context.Context, reqs []ValidateRequest) []Diagnostics {
	out := make([]Diagnostics, len(reqs))
	sent := make([]int, len(reqs)) // index of the item that answers reqs[i]; -1: answered here
	var items []*proto.ValidateResourceConfig_Request
	seen := map[string]int{}
	for i, req := range reqs {
		sent[i] = -1
		ty, diags := c.typeOf(ctx, req.TypeName)
		if diags.HasErrors() {
			out[i] = diags
			continue
		}
		cfg, err := encodeValue(req.Config, ty)
		if err != nil {
			out[i] = Diagnostics{badValue("config", req.TypeName, err)}
			continue
		}
		key := req.TypeName + "\x00" + string(cfg)
		j, ok := seen[key]
		if !ok {
			j = len(items)
			seen[key] = j
			items = append(items, &proto.ValidateResourceConfig_Request{TypeName: req.TypeName, Config: cfg})
		}
		sent[i] = j
	}
	if len(items) == 0 {
		return out
	}
	resp, err := c.client.ValidateResourceConfigs(ctx, &proto.ValidateResourceConfigs_Request{Items: items}, callOpts...)
	if err == nil && len(resp.Results) != len(items) {
		err = fmt.Errorf("the provider returned %d results for %d configurations", len(resp.Results), len(items))
	}
	for i, j := range sent {
		switch {
		case j < 0:
		case err != nil:
			out[i] = Diagnostics{c.rpcError(ctx, "ValidateResourceConfigs", reqs[i].TypeName, err)}
		default:
			out[i] = diagsFromProto(resp.Results[j].Diagnostics)
		}
	}
	return out
}

func batchAddress(req ReadRequest) string {
	switch len(req.Resources) {
	case 0:
		return "an empty batch on " + req.Node.Name
	case 1:
		return req.Resources[0].Address
	}
	return fmt.Sprintf("%d instances on %s (%s, ...)", len(req.Resources), req.Node.Name, req.Resources[0].Address)
}

// ReadResources implements Provider.
func (c *GRPCClient) ReadResources(ctx context.Context, req ReadRequest) ReadResponse {
	items := make([]*proto.ReadResources_Item, len(req.Resources))
	types := make([]cty.Type, len(req.Resources))
	sent := make([]cty.Value, len(req.Resources)) // each prior as the plugin saw it
	for i, it := range req.Resources {
		ty, tyJSON, diags := c.typeAndJSON(ctx, it.TypeName)
		if diags.HasErrors() {
			return ReadResponse{Diagnostics: diags}
		}
		prior, v, err := encodeStored(it.Prior, it.PriorStored, ty, tyJSON)
		if err != nil {
			return ReadResponse{Diagnostics: Diagnostics{badValue("prior state", it.Address, err)}}
		}
		types[i], sent[i] = ty, v
		items[i] = &proto.ReadResources_Item{TypeName: it.TypeName, Address: it.Address, Prior: prior, Private: it.Private}
	}
	resp, err := c.client.ReadResources(ctx, &proto.ReadResources_Request{Node: nodeToProto(req.Node), Items: items}, callOpts...)
	if err != nil {
		return ReadResponse{Diagnostics: Diagnostics{c.rpcError(ctx, "ReadResources", batchAddress(req), err)}}
	}
	out := ReadResponse{Diagnostics: diagsFromProto(resp.Diagnostics), RoundTrips: int(resp.RoundTrips)}
	if len(resp.Results) == 0 && len(items) > 0 {
		return out // a batch-wide failure, explained by the diagnostics
	}
	if len(resp.Results) != len(items) {
		out.Diagnostics = append(out.Diagnostics, Errorf(nil, "Provider bug", "ReadResources returned %d results for %d instances", len(resp.Results), len(items)))
		return out
	}
	out.Results = make([]ReadResult, len(items))
	for i, r := range resp.Results {
		diags := diagsFromProto(r.Diagnostics)
		if r.Unchanged {
			v := sent[i]
			if v == cty.NilVal {
				v = cty.NullVal(types[i])
			}
			out.Results[i] = ReadResult{NewState: v, Private: r.Private, Diagnostics: diags, Unchanged: sent[i] != cty.NilVal}
			continue
		}
		v, err := decodeValue(r.NewState, types[i])
		if err != nil {
			diags = append(diags, badValue("new state", req.Resources[i].Address, err))
			v = req.Resources[i].Prior
		}
		out.Results[i] = ReadResult{NewState: v, Private: r.Private, Diagnostics: diags}
	}
	return out
}

// PlanResourceChange implements Provider. The call is an item of the
// client's plan session (see mux.go): concurrent calls share messages.
// A Proposed left cty.NilVal is computed by the provider (ProposedNew).
func (c *GRPCClient) PlanResourceChange(ctx context.Context, req PlanRequest) PlanResponse {
	ty, tyJSON, diags := c.typeAndJSON(ctx, req.TypeName)
	if diags.HasErrors() {
		return PlanResponse{Diagnostics: diags}
	}
	var enc [3][]byte
	var sentPrior cty.Value // the prior as the plugin saw it
	for i, v := range [3]cty.Value{req.Prior, req.Config, req.Proposed} {
		var b []byte
		var sent cty.Value
		var err error
		if i == 0 {
			b, sent, err = encodeStored(v, req.PriorStored, ty, tyJSON)
		} else {
			b, sent, err = encodeSent(v, ty)
		}
		if err != nil {
			return PlanResponse{Diagnostics: Diagnostics{badValue([3]string{"prior", "config", "proposed"}[i], req.Address, err)}}
		}
		if i == 0 {
			sentPrior = sent
		}
		enc[i] = b
	}
	var replaces []byte
	if req.Replaces != cty.NilVal && !req.Replaces.IsNull() {
		b, err := encodeValue(req.Replaces, ty)
		if err != nil {
			return PlanResponse{Diagnostics: Diagnostics{badValue("replaced object", req.Address, err)}}
		}
		replaces = b
	}
	var resp *proto.PlanResourceChange_Response
	err := c.plans.call(ctx, &proto.PlanResourceChange_Request{
		TypeName: req.TypeName, Address: req.Address, Node: nodeToProto(req.Node),
		Prior: enc[0], Config: enc[1], Proposed: enc[2], PriorPrivate: req.PriorPrivate, Replaces: replaces, Offline: req.Offline,
		ProposedDefault: req.Proposed == cty.NilVal,
	}, func(r *proto.PlanResourceChange_Response) { resp = r })
	if err == nil && resp == nil {
		err = errors.New("no response")
	}
	if err != nil {
		return PlanResponse{Diagnostics: Diagnostics{c.rpcError(ctx, "PlanResourceChange", req.Address, err)}}
	}
	diags = diagsFromProto(resp.Diagnostics)
	var planned cty.Value
	unchanged := resp.PlannedUnchanged && sentPrior != cty.NilVal
	if unchanged {
		planned = sentPrior
	} else if planned, err = decodeValue(resp.Planned, ty); err != nil {
		diags = append(diags, badValue("planned value", req.Address, err))
	}
	return PlanResponse{Planned: planned, RequiresReplace: pathsFromProto(resp.RequiresReplace), PlannedPrivate: resp.PlannedPrivate, Diagnostics: diags, Unchanged: unchanged}
}

// ApplyResourceChange implements Provider: an item of the client's apply
// session, its progress events and result delivered as they arrive. If
// the call fails in transport the outcome on the node is unknown:
// NewState is then the prior value, OutcomeUnknown is set and the
// diagnostic says what happened.
func (c *GRPCClient) ApplyResourceChange(ctx context.Context, req ApplyRequest, progress func(Progress)) ApplyResponse {
	failed := func(diags Diagnostics) ApplyResponse {
		return ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: diags}
	}
	// After the request is sent, a failure leaves the node's state unknown.
	unknown := func(r ApplyResponse) ApplyResponse { r.OutcomeUnknown = true; return r }
	ty, diags := c.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return failed(diags)
	}
	var enc [3][]byte
	for i, v := range [3]cty.Value{req.Prior, req.Planned, req.Config} {
		b, err := encodeValue(v, ty)
		if err != nil {
			return failed(Diagnostics{badValue([3]string{"prior", "planned", "config"}[i], req.Address, err)})
		}
		enc[i] = b
	}
	var result *proto.ApplyResourceChange_Result
	err := c.applies.call(ctx, &proto.ApplyResourceChange_Request{
		TypeName: req.TypeName, Address: req.Address, Node: nodeToProto(req.Node),
		Prior: enc[0], Planned: enc[1], Config: enc[2], Private: req.Private,
	}, func(ev *proto.ApplyResourceChange_Event) {
		switch e := ev.Event.(type) {
		case *proto.ApplyResourceChange_Event_Progress:
			if progress != nil {
				progress(progressFromProto(e.Progress))
			}
		case *proto.ApplyResourceChange_Event_Result:
			result = e.Result
		}
	})
	if err != nil {
		return unknown(failed(Diagnostics{c.rpcError(ctx, "ApplyResourceChange", req.Address, err)}))
	}
	if result == nil {
		return unknown(failed(Diagnostics{Errorf(nil, "Provider bug", "ApplyResourceChange of %s ended without a result", req.Address)}))
	}
	diags = diagsFromProto(result.Diagnostics)
	v, err := decodeValue(result.NewState, ty)
	if err != nil {
		return unknown(failed(append(diags, badValue("new state", req.Address, err))))
	}
	return ApplyResponse{NewState: v, Private: result.Private, Diagnostics: diags}
}

// PlanAndApplyResourceChange implements PlanApplier: one item of the
// client's apply session (replan set) that the plugin plans, checks
// against req.Reviewed and applies. If the call fails in transport the
// outcome on the node is unknown: it counts as applied, NewState is the
// prior value, OutcomeUnknown is set and the diagnostic says what happened.
func (c *GRPCClient) PlanAndApplyResourceChange(ctx context.Context, req PlanApplyRequest, started func(at time.Time), progress func(Progress)) PlanApplyResponse {
	failed := func(diags Diagnostics) PlanApplyResponse {
		return PlanApplyResponse{ApplyResponse: ApplyResponse{NewState: req.Prior, Private: req.PriorPrivate, Diagnostics: diags}, Applied: true}
	}
	// After the request is sent, a failure leaves the node's state unknown.
	unknown := func(r PlanApplyResponse) PlanApplyResponse { r.OutcomeUnknown = true; return r }
	ty, diags := c.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return PlanApplyResponse{ApplyResponse: ApplyResponse{Diagnostics: diags}}
	}
	var enc [3][]byte
	for i, v := range [3]cty.Value{req.Prior, req.Config, req.Reviewed} {
		b, err := encodeValue(v, ty)
		if err != nil {
			return PlanApplyResponse{ApplyResponse: ApplyResponse{Diagnostics: Diagnostics{badValue([3]string{"prior", "config", "reviewed plan"}[i], req.Address, err)}}}
		}
		enc[i] = b
	}
	var replaces []byte
	if req.Replaces != cty.NilVal && !req.Replaces.IsNull() {
		b, err := encodeValue(req.Replaces, ty)
		if err != nil {
			return PlanApplyResponse{ApplyResponse: ApplyResponse{Diagnostics: Diagnostics{badValue("replaced object", req.Address, err)}}}
		}
		replaces = b
	}
	var result *proto.ApplyResourceChange_Result
	begun := false
	start := func(at time.Time) {
		if !begun && started != nil {
			started(at)
		}
		begun = true
	}
	err := c.applies.call(ctx, &proto.ApplyResourceChange_Request{
		TypeName: req.TypeName, Address: req.Address, Node: nodeToProto(req.Node),
		Prior: enc[0], Config: enc[1], Reviewed: enc[2], Replaces: replaces, Private: req.PriorPrivate, Replan: true,
	}, func(ev *proto.ApplyResourceChange_Event) {
		switch e := ev.Event.(type) {
		case *proto.ApplyResourceChange_Event_Started:
			start(time.Now().Add(-time.Duration(e.Started.ElapsedNs)))
		case *proto.ApplyResourceChange_Event_Progress:
			if progress != nil {
				progress(progressFromProto(e.Progress))
			}
		case *proto.ApplyResourceChange_Event_Result:
			result = e.Result
			if !result.NotApplied {
				// A quick, quiet apply's start comes with its result.
				start(time.Now().Add(-time.Duration(result.ElapsedNs)))
			}
		}
	})
	if err != nil {
		return unknown(failed(Diagnostics{c.rpcError(ctx, "ApplyResourceChange", req.Address, err)}))
	}
	if result == nil {
		return unknown(failed(Diagnostics{Errorf(nil, "Provider bug", "ApplyResourceChange of %s ended without a result", req.Address)}))
	}
	diags = diagsFromProto(result.Diagnostics)
	if result.NotApplied {
		out := PlanApplyResponse{ApplyResponse: ApplyResponse{Diagnostics: diags}, PlanChanged: result.PlanChanged}
		if result.PlanChanged {
			out.Changed = pathFromProto(result.Changed)
		}
		return out
	}
	v, err := decodeValue(result.NewState, ty)
	if err != nil {
		return unknown(failed(append(diags, badValue("new state", req.Address, err))))
	}
	return PlanApplyResponse{ApplyResponse: ApplyResponse{NewState: v, Private: result.Private, Diagnostics: diags}, Applied: true}
}

func progressFromProto(p *proto.ApplyResourceChange_Progress) Progress {
	return Progress{Message: p.Message, Current: p.Current, Total: p.Total, Unit: p.Unit, Elapsed: time.Duration(p.ElapsedNs)}
}

// ImportResource implements Provider.
func (c *GRPCClient) ImportResource(ctx context.Context, req ImportRequest) ImportResponse {
	ty, diags := c.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return ImportResponse{Diagnostics: diags}
	}
	resp, err := c.client.ImportResource(ctx, &proto.ImportResource_Request{TypeName: req.TypeName, Node: nodeToProto(req.Node), Id: req.ID}, callOpts...)
	if err != nil {
		return ImportResponse{Diagnostics: Diagnostics{c.rpcError(ctx, "ImportResource", req.TypeName+" "+req.ID, err)}}
	}
	diags = diagsFromProto(resp.Diagnostics)
	v, err := decodeValue(resp.State, ty)
	if err != nil {
		diags = append(diags, badValue("imported state", req.TypeName+" "+req.ID, err))
	}
	return ImportResponse{State: v, Private: resp.Private, Diagnostics: diags}
}

// Stop implements Provider.
func (c *GRPCClient) Stop(ctx context.Context) error {
	resp, err := c.client.Stop(ctx, &proto.Stop_Request{}, callOpts...)
	if err != nil {
		d := c.rpcError(ctx, "Stop", "", err)
		return fmt.Errorf("%s: %s", d.Summary, d.Detail)
	}
	if resp.Error != "" {
		return errors.New(resp.Error)
	}
	return nil
}
