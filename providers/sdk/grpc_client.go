package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
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
}

type clientSchema struct {
	schema *Schema
	types  map[string]cty.Type
}

var _ Provider = (*GRPCClient)(nil)

// NewGRPCClient returns a Provider that talks to the provider served on conn.
func NewGRPCClient(conn grpc.ClientConnInterface) *GRPCClient {
	return &GRPCClient{client: proto.NewProviderClient(conn)}
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
	c.schema.Store(s)
	return s, diags
}

func (c *GRPCClient) typeOf(ctx context.Context, name string) (cty.Type, Diagnostics) {
	s, diags := c.loadSchema(ctx)
	if diags.HasErrors() {
		return cty.NilType, diags
	}
	ty, ok := s.types[name]
	if !ok {
		return cty.NilType, Diagnostics{unknownType(name, s.types)}
	}
	return ty, nil
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

// ValidateResourceConfig implements Provider.
func (c *GRPCClient) ValidateResourceConfig(ctx context.Context, req ValidateRequest) Diagnostics {
	ty, diags := c.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return diags
	}
	cfg, err := encodeValue(req.Config, ty)
	if err != nil {
		return Diagnostics{badValue("config", req.TypeName, err)}
	}
	resp, err := c.client.ValidateResourceConfig(ctx, &proto.ValidateResourceConfig_Request{TypeName: req.TypeName, Config: cfg}, callOpts...)
	if err != nil {
		return Diagnostics{c.rpcError(ctx, "ValidateResourceConfig", req.TypeName, err)}
	}
	return diagsFromProto(resp.Diagnostics)
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
	for i, it := range req.Resources {
		ty, diags := c.typeOf(ctx, it.TypeName)
		if diags.HasErrors() {
			return ReadResponse{Diagnostics: diags}
		}
		prior, err := encodeValue(it.Prior, ty)
		if err != nil {
			return ReadResponse{Diagnostics: Diagnostics{badValue("prior state", it.Address, err)}}
		}
		types[i] = ty
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
			v := req.Resources[i].Prior
			if v == cty.NilVal {
				v = cty.NullVal(types[i])
			}
			out.Results[i] = ReadResult{NewState: v, Private: r.Private, Diagnostics: diags}
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

// PlanResourceChange implements Provider.
func (c *GRPCClient) PlanResourceChange(ctx context.Context, req PlanRequest) PlanResponse {
	ty, diags := c.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return PlanResponse{Diagnostics: diags}
	}
	var enc [3][]byte
	for i, v := range [3]cty.Value{req.Prior, req.Config, req.Proposed} {
		b, err := encodeValue(v, ty)
		if err != nil {
			return PlanResponse{Diagnostics: Diagnostics{badValue([3]string{"prior", "config", "proposed"}[i], req.Address, err)}}
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
	resp, err := c.client.PlanResourceChange(ctx, &proto.PlanResourceChange_Request{
		TypeName: req.TypeName, Address: req.Address, Node: nodeToProto(req.Node),
		Prior: enc[0], Config: enc[1], Proposed: enc[2], PriorPrivate: req.PriorPrivate, Replaces: replaces, Offline: req.Offline,
	}, callOpts...)
	if err != nil {
		return PlanResponse{Diagnostics: Diagnostics{c.rpcError(ctx, "PlanResourceChange", req.Address, err)}}
	}
	diags = diagsFromProto(resp.Diagnostics)
	planned, err := decodeValue(resp.Planned, ty)
	if err != nil {
		diags = append(diags, badValue("planned value", req.Address, err))
	}
	return PlanResponse{Planned: planned, RequiresReplace: pathsFromProto(resp.RequiresReplace), PlannedPrivate: resp.PlannedPrivate, Diagnostics: diags}
}

// ApplyResourceChange implements Provider. If the call fails in transport
// the outcome on the node is unknown: NewState is then the prior value and
// the diagnostic says what happened.
func (c *GRPCClient) ApplyResourceChange(ctx context.Context, req ApplyRequest, progress func(Progress)) ApplyResponse {
	failed := func(diags Diagnostics) ApplyResponse {
		return ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: diags}
	}
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
	// The stream gets its own ctx so that returning early (a bad event)
	// also ends the RPC on the plugin side.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.client.ApplyResourceChange(sctx, &proto.ApplyResourceChange_Request{
		TypeName: req.TypeName, Address: req.Address, Node: nodeToProto(req.Node),
		Prior: enc[0], Planned: enc[1], Config: enc[2], Private: req.Private,
	}, callOpts...)
	if err != nil {
		return failed(Diagnostics{c.rpcError(ctx, "ApplyResourceChange", req.Address, err)})
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return failed(Diagnostics{Errorf(nil, "Provider bug", "ApplyResourceChange of %s ended without a result", req.Address)})
		}
		if err != nil {
			return failed(Diagnostics{c.rpcError(ctx, "ApplyResourceChange", req.Address, err)})
		}
		switch e := ev.Event.(type) {
		case *proto.ApplyResourceChange_Event_Progress:
			if progress != nil {
				p := e.Progress
				progress(Progress{Message: p.Message, Current: p.Current, Total: p.Total, Unit: p.Unit, Elapsed: time.Duration(p.ElapsedNs)})
			}
		case *proto.ApplyResourceChange_Event_Result:
			r := e.Result
			diags := diagsFromProto(r.Diagnostics)
			v, err := decodeValue(r.NewState, ty)
			if err != nil {
				return failed(append(diags, badValue("new state", req.Address, err)))
			}
			return ApplyResponse{NewState: v, Private: r.Private, Diagnostics: diags}
		}
	}
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
