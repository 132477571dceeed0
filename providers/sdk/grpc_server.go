package sdk

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk/proto"
)

// GRPCServer is the plugin side of the protocol: it serves any Provider
// over gRPC, decoding requests with the provider's own schema. Transport
// errors are gRPC errors; everything else (bad values, unknown types)
// comes back as diagnostics so the engine can show them.
type GRPCServer struct {
	proto.UnimplementedProviderServer
	impl Provider

	mu    sync.Mutex // serialises the first GetSchema
	types atomic.Pointer[map[string]cty.Type]
}

var _ proto.ProviderServer = (*GRPCServer)(nil)

// NewGRPCServer wraps p for registration on a grpc.Server.
func NewGRPCServer(p Provider) *GRPCServer {
	return &GRPCServer{impl: p}
}

// typeOf returns the value type of a resource type, loading the schema
// once on first use.
func (s *GRPCServer) typeOf(ctx context.Context, name string) (cty.Type, Diagnostics) {
	m := s.types.Load()
	if m == nil {
		s.mu.Lock()
		if m = s.types.Load(); m == nil {
			schema, diags := s.impl.GetSchema(ctx)
			if diags.HasErrors() || schema == nil {
				s.mu.Unlock()
				return cty.NilType, append(diags, Errorf(nil, "Provider has no schema", "the provider's GetSchema failed, so %q cannot be decoded", name))
			}
			t := impliedTypes(schema)
			m = &t
			s.types.Store(m)
		}
		s.mu.Unlock()
	}
	ty, ok := (*m)[name]
	if !ok {
		return cty.NilType, Diagnostics{unknownType(name, *m)}
	}
	return ty, nil
}

func unknownType(name string, types map[string]cty.Type) Diagnostic {
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	sort.Strings(names)
	return Errorf(nil, "Unknown resource type", "the provider has no resource type %q; it serves %v", name, names)
}

func badValue(what, name string, err error) Diagnostic {
	return Errorf(nil, "Invalid value on the wire", "%s of %s: %v", what, name, err)
}

// GetSchema implements proto.ProviderServer.
func (s *GRPCServer) GetSchema(ctx context.Context, _ *proto.GetSchema_Request) (*proto.GetSchema_Response, error) {
	schema, diags := s.impl.GetSchema(ctx)
	ps, err := schemaToProto(schema)
	if err != nil {
		diags = append(diags, Errorf(nil, "Invalid provider schema", "%v", err))
	}
	return &proto.GetSchema_Response{Schema: ps, Diagnostics: diagsToProto(diags)}, nil
}

// ValidateResourceConfig implements proto.ProviderServer.
func (s *GRPCServer) ValidateResourceConfig(ctx context.Context, req *proto.ValidateResourceConfig_Request) (*proto.ValidateResourceConfig_Response, error) {
	ty, diags := s.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return &proto.ValidateResourceConfig_Response{Diagnostics: diagsToProto(diags)}, nil
	}
	cfg, err := decodeValue(req.Config, ty)
	if err != nil {
		return &proto.ValidateResourceConfig_Response{Diagnostics: diagsToProto(Diagnostics{badValue("config", req.TypeName, err)})}, nil
	}
	diags = s.impl.ValidateResourceConfig(ctx, ValidateRequest{TypeName: req.TypeName, Config: cfg})
	return &proto.ValidateResourceConfig_Response{Diagnostics: diagsToProto(diags)}, nil
}

// ReadResources implements proto.ProviderServer.
func (s *GRPCServer) ReadResources(ctx context.Context, req *proto.ReadResources_Request) (*proto.ReadResources_Response, error) {
	items := make([]ReadItem, len(req.Items))
	types := make([]cty.Type, len(req.Items))
	for i, it := range req.Items {
		ty, diags := s.typeOf(ctx, it.TypeName)
		if diags.HasErrors() {
			return &proto.ReadResources_Response{Diagnostics: diagsToProto(diags)}, nil
		}
		prior, err := decodeValue(it.Prior, ty)
		if err != nil {
			return &proto.ReadResources_Response{Diagnostics: diagsToProto(Diagnostics{badValue("prior state", it.Address, err)})}, nil
		}
		types[i] = ty
		items[i] = ReadItem{TypeName: it.TypeName, Address: it.Address, Prior: prior, Private: it.Private}
	}
	resp := s.impl.ReadResources(ctx, ReadRequest{Node: nodeFromProto(req.Node), Resources: items})
	out := &proto.ReadResources_Response{RoundTrips: int64(resp.RoundTrips)}
	diags := resp.Diagnostics
	if len(resp.Results) == len(items) {
		out.Results = make([]*proto.ReadResources_Result, len(items))
		for i, r := range resp.Results {
			rd := r.Diagnostics
			if r.NewState != cty.NilVal && r.NewState.RawEquals(items[i].Prior) {
				// Cheaper than encoding it here and decoding it there.
				out.Results[i] = &proto.ReadResources_Result{Unchanged: true, Private: r.Private, Diagnostics: diagsToProto(rd)}
				continue
			}
			// A zero ReadResult (left unset after a batch error) has no
			// value; it travels as null, which the diagnostics explain.
			b, err := encodeValue(r.NewState, types[i])
			if err != nil {
				rd = append(rd, badValue("new state", items[i].Address, err))
				b, _ = encodeValue(items[i].Prior, types[i])
			}
			out.Results[i] = &proto.ReadResources_Result{NewState: b, Private: r.Private, Diagnostics: diagsToProto(rd)}
		}
	} else if !diags.HasErrors() {
		diags = append(diags, Errorf(nil, "Provider bug", "ReadResources returned %d results for %d instances", len(resp.Results), len(items)))
	}
	out.Diagnostics = diagsToProto(diags)
	return out, nil
}

// PlanResourceChange implements proto.ProviderServer.
func (s *GRPCServer) PlanResourceChange(ctx context.Context, req *proto.PlanResourceChange_Request) (*proto.PlanResourceChange_Response, error) {
	ty, diags := s.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return &proto.PlanResourceChange_Response{Diagnostics: diagsToProto(diags)}, nil
	}
	var vals [3]cty.Value
	for i, b := range [3][]byte{req.Prior, req.Config, req.Proposed} {
		v, err := decodeValue(b, ty)
		if err != nil {
			return &proto.PlanResourceChange_Response{Diagnostics: diagsToProto(Diagnostics{badValue([3]string{"prior", "config", "proposed"}[i], req.Address, err)})}, nil
		}
		vals[i] = v
	}
	replaces := cty.NullVal(ty)
	if len(req.Replaces) > 0 {
		v, err := decodeValue(req.Replaces, ty)
		if err != nil {
			return &proto.PlanResourceChange_Response{Diagnostics: diagsToProto(Diagnostics{badValue("replaced object", req.Address, err)})}, nil
		}
		replaces = v
	}
	resp := s.impl.PlanResourceChange(ctx, PlanRequest{
		TypeName: req.TypeName, Address: req.Address, Node: nodeFromProto(req.Node),
		Prior: vals[0], Config: vals[1], Proposed: vals[2], PriorPrivate: req.PriorPrivate, Replaces: replaces, Offline: req.Offline,
	})
	diags = resp.Diagnostics
	planned, err := encodeValue(resp.Planned, ty)
	if err != nil {
		diags = append(diags, badValue("planned value", req.Address, err))
	}
	return &proto.PlanResourceChange_Response{
		Planned: planned, RequiresReplace: pathsToProto(resp.RequiresReplace),
		PlannedPrivate: resp.PlannedPrivate, Diagnostics: diagsToProto(diags),
	}, nil
}

// ApplyResourceChange implements proto.ProviderServer: progress events are
// sent as the provider reports them, then one result.
func (s *GRPCServer) ApplyResourceChange(req *proto.ApplyResourceChange_Request, stream proto.Provider_ApplyResourceChangeServer) error {
	ctx := stream.Context()
	result := func(state, private []byte, diags Diagnostics) error {
		return stream.Send(&proto.ApplyResourceChange_Event{Event: &proto.ApplyResourceChange_Event_Result{
			Result: &proto.ApplyResourceChange_Result{NewState: state, Private: private, Diagnostics: diagsToProto(diags)}}})
	}
	ty, diags := s.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return result(req.Prior, req.Private, diags)
	}
	var vals [3]cty.Value
	for i, b := range [3][]byte{req.Prior, req.Planned, req.Config} {
		v, err := decodeValue(b, ty)
		if err != nil {
			return result(req.Prior, req.Private, Diagnostics{badValue([3]string{"prior", "planned", "config"}[i], req.Address, err)})
		}
		vals[i] = v
	}
	var sendMu sync.Mutex // a provider may report progress from several goroutines
	progress := func(p Progress) {
		sendMu.Lock()
		defer sendMu.Unlock()
		// A failed send means the engine went away; the ctx says so too and
		// the provider is expected to notice it.
		_ = stream.Send(&proto.ApplyResourceChange_Event{Event: &proto.ApplyResourceChange_Event_Progress{
			Progress: &proto.ApplyResourceChange_Progress{Message: p.Message, Current: p.Current, Total: p.Total, ElapsedNs: int64(p.Elapsed), Unit: p.Unit}}})
	}
	resp := s.impl.ApplyResourceChange(ctx, ApplyRequest{
		TypeName: req.TypeName, Address: req.Address, Node: nodeFromProto(req.Node),
		Prior: vals[0], Planned: vals[1], Config: vals[2], Private: req.Private,
	}, progress)
	faultPoint(req.TypeName, applyAction(vals[0].IsNull(), vals[1].IsNull()), req.Address)
	diags = resp.Diagnostics
	state, err := encodeValue(resp.NewState, ty)
	if err != nil {
		diags = append(diags, badValue("new state", req.Address, err))
		state = req.Prior
	}
	sendMu.Lock()
	defer sendMu.Unlock()
	return result(state, resp.Private, diags)
}

// ImportResource implements proto.ProviderServer.
func (s *GRPCServer) ImportResource(ctx context.Context, req *proto.ImportResource_Request) (*proto.ImportResource_Response, error) {
	ty, diags := s.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return &proto.ImportResource_Response{Diagnostics: diagsToProto(diags)}, nil
	}
	resp := s.impl.ImportResource(ctx, ImportRequest{TypeName: req.TypeName, Node: nodeFromProto(req.Node), ID: req.Id})
	diags = resp.Diagnostics
	state, err := encodeValue(resp.State, ty)
	if err != nil {
		diags = append(diags, badValue("imported state", req.TypeName+" "+req.Id, err))
	}
	return &proto.ImportResource_Response{State: state, Private: resp.Private, Diagnostics: diagsToProto(diags)}, nil
}

// Stop implements proto.ProviderServer.
func (s *GRPCServer) Stop(ctx context.Context, _ *proto.Stop_Request) (*proto.Stop_Response, error) {
	if err := s.impl.Stop(ctx); err != nil {
		return &proto.Stop_Response{Error: err.Error()}, nil
	}
	return &proto.Stop_Response{}, nil
}
