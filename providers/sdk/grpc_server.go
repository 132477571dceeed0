package sdk

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc"

	"github.com/sparkform/sparkform/providers/sdk/proto"
)

// GRPCServer is the plugin side of the protocol: it serves any Provider
// over gRPC, decoding requests with the provider's own schema. Transport
// errors are gRPC errors; everything else (bad values, unknown types)
// comes back as diagnostics so the engine can show them.
type GRPCServer struct {
	proto.UnimplementedProviderServer
	impl Provider

	mu     sync.Mutex // serialises the first GetSchema
	schema atomic.Pointer[serverSchema]

	priors readPriors
}

// readPriors keeps the priors that ReadResources decoded and found
// unchanged, by type and encoding, for the plan items that follow: the
// engine sends the same bytes again as each plan's prior, and the plugin
// then need not decode them a second time (a third of a no-op plan's
// decoding). A prior is taken once; an apply session drops what is left.
type readPriors struct {
	mu sync.Mutex
	m  map[string]readPrior // by encoding
}

// readPrior is a kept prior and its resource type: the same bytes under
// another type are not it.
type readPrior struct {
	typeName string
	v        cty.Value
}

// readPriorsMax bounds what is kept (past it, priors are decoded again).
const readPriorsMax = 1 << 16

func (r *readPriors) put(typeName string, b []byte, v cty.Value) {
	if len(b) == 0 {
		return
	}
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]readPrior{}
	}
	if len(r.m) < readPriorsMax {
		r.m[string(b)] = readPrior{typeName, v}
	}
	r.mu.Unlock()
}

// take returns and forgets the prior kept for typeName and b. It looks
// up by b alone, which costs no key to be built per plan item.
func (r *readPriors) take(typeName string, b []byte) (cty.Value, bool) {
	if len(b) == 0 {
		return cty.NilVal, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[string(b)]
	if !ok || e.typeName != typeName {
		return cty.NilVal, false
	}
	delete(r.m, string(b))
	return e.v, true
}

func (r *readPriors) clear() {
	r.mu.Lock()
	r.m = nil
	r.mu.Unlock()
}

// serverSchema is what the server keeps of the provider's schema.
type serverSchema struct {
	types  map[string]cty.Type
	blocks map[string]*Block
}

var _ proto.ProviderServer = (*GRPCServer)(nil)

// NewGRPCServer wraps p for registration on a grpc.Server.
func NewGRPCServer(p Provider) *GRPCServer {
	return &GRPCServer{impl: p}
}

// loadSchema returns the provider's schema, loading it once on first use.
func (s *GRPCServer) loadSchema(ctx context.Context, name string) (*serverSchema, Diagnostics) {
	if m := s.schema.Load(); m != nil {
		return m, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.schema.Load(); m != nil {
		return m, nil
	}
	schema, diags := s.impl.GetSchema(ctx)
	if diags.HasErrors() || schema == nil {
		return nil, append(diags, Errorf(nil, "Provider has no schema", "the provider's GetSchema failed, so %q cannot be decoded", name))
	}
	m := &serverSchema{types: impliedTypes(schema), blocks: make(map[string]*Block, len(schema.ResourceTypes))}
	for n, rs := range schema.ResourceTypes {
		m.blocks[n] = rs.Block
	}
	s.schema.Store(m)
	return m, nil
}

// typeOf returns the value type of a resource type.
func (s *GRPCServer) typeOf(ctx context.Context, name string) (cty.Type, Diagnostics) {
	m, diags := s.loadSchema(ctx, name)
	if m == nil {
		return cty.NilType, diags
	}
	ty, ok := m.types[name]
	if !ok {
		return cty.NilType, Diagnostics{unknownType(name, m.types)}
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

// ValidateResourceConfigs implements proto.ProviderServer: each item is
// checked once; equal items share one answer.
func (s *GRPCServer) ValidateResourceConfigs(ctx context.Context, req *proto.ValidateResourceConfigs_Request) (*proto.ValidateResourceConfigs_Response, error) {
	out := &proto.ValidateResourceConfigs_Response{Results: make([]*proto.ValidateResourceConfig_Response, len(req.Items))}
	seen := map[string]*proto.ValidateResourceConfig_Response{}
	for i, it := range req.Items {
		key := it.TypeName + "\x00" + string(it.Config)
		r, ok := seen[key]
		if !ok {
			r = &proto.ValidateResourceConfig_Response{Diagnostics: diagsToProto(s.validateOne(ctx, it))}
			seen[key] = r
		}
		out.Results[i] = r
	}
	return out, nil
}

func (s *GRPCServer) validateOne(ctx context.Context, req *proto.ValidateResourceConfig_Request) Diagnostics {
	ty, diags := s.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return diags
	}
	cfg, err := decodeValue(req.Config, ty)
	if err != nil {
		return Diagnostics{badValue("config", req.TypeName, err)}
	}
	return s.impl.ValidateResourceConfig(ctx, ValidateRequest{TypeName: req.TypeName, Config: cfg})
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
				s.priors.put(items[i].TypeName, req.Items[i].Prior, items[i].Prior)
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

// PlanResourceChanges implements proto.ProviderServer: the plan session
// (mux.go), each item planned in a goroutine of its own.
func (s *GRPCServer) PlanResourceChanges(stream grpc.BidiStreamingServer[proto.PlanResourceChanges_Batch, proto.PlanResourceChanges_Results]) error {
	m := &serverMux[*proto.PlanResourceChange_Request, *proto.PlanResourceChange_Response]{
		recv: func() ([]muxItem[*proto.PlanResourceChange_Request], []uint64, error) {
			b, err := stream.Recv()
			if err != nil {
				return nil, nil, err
			}
			items := make([]muxItem[*proto.PlanResourceChange_Request], 0, len(b.Items))
			for _, it := range b.Items {
				if it.Request != nil {
					items = append(items, muxItem[*proto.PlanResourceChange_Request]{it.Id, it.Request})
				}
			}
			return items, b.Cancel, nil
		},
		send: func(rs []muxItem[*proto.PlanResourceChange_Response]) error {
			out := &proto.PlanResourceChanges_Results{Results: make([]*proto.PlanResourceChanges_Result, len(rs))}
			for i, r := range rs {
				out.Results[i] = &proto.PlanResourceChanges_Result{Id: r.id, Response: r.v}
			}
			return stream.Send(out)
		},
		handle: func(ctx context.Context, req *proto.PlanResourceChange_Request, emit func(*proto.PlanResourceChange_Response)) {
			emit(s.planOne(ctx, req))
		},
		size: func(r *proto.PlanResourceChange_Response) int { return len(r.Planned) + len(r.PlannedPrivate) + 256 },
	}
	return m.serve(stream.Context())
}

func (s *GRPCServer) planOne(ctx context.Context, req *proto.PlanResourceChange_Request) *proto.PlanResourceChange_Response {
	ty, diags := s.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return &proto.PlanResourceChange_Response{Diagnostics: diagsToProto(diags)}
	}
	var vals [3]cty.Value
	for i, b := range [3][]byte{req.Prior, req.Config, req.Proposed} {
		if i == 0 {
			if v, ok := s.priors.take(req.TypeName, b); ok {
				vals[0] = v
				continue
			}
		}
		if i == 2 && req.ProposedDefault {
			vals[2] = ProposedNew(s.schema.Load().blocks[req.TypeName], vals[0], vals[1])
			break
		}
		v, err := decodeValue(b, ty)
		if err != nil {
			return &proto.PlanResourceChange_Response{Diagnostics: diagsToProto(Diagnostics{badValue([3]string{"prior", "config", "proposed"}[i], req.Address, err)})}
		}
		vals[i] = v
	}
	replaces := cty.NullVal(ty)
	if len(req.Replaces) > 0 {
		v, err := decodeValue(req.Replaces, ty)
		if err != nil {
			return &proto.PlanResourceChange_Response{Diagnostics: diagsToProto(Diagnostics{badValue("replaced object", req.Address, err)})}
		}
		replaces = v
	}
	resp := s.impl.PlanResourceChange(ctx, PlanRequest{
		TypeName: req.TypeName, Address: req.Address, Node: nodeFromProto(req.Node),
		Prior: vals[0], Config: vals[1], Proposed: vals[2], PriorPrivate: req.PriorPrivate, Replaces: replaces, Offline: req.Offline,
	})
	diags = resp.Diagnostics
	out := &proto.PlanResourceChange_Response{RequiresReplace: pathsToProto(resp.RequiresReplace),
		PlannedPrivate: resp.PlannedPrivate}
	if resp.Planned != cty.NilVal && !vals[0].IsNull() && resp.Planned.RawEquals(vals[0]) {
		out.PlannedUnchanged = true // cheaper than encoding it here and decoding it there
	} else {
		planned, err := encodeValue(resp.Planned, ty)
		if err != nil {
			diags = append(diags, badValue("planned value", req.Address, err))
		}
		out.Planned = planned
	}
	out.Diagnostics = diagsToProto(diags)
	return out
}

// ApplyResourceChanges implements proto.ProviderServer: the apply session
// (mux.go). Each item runs in a goroutine of its own; its progress events
// are sent as the provider reports them and its result the moment its
// apply returns, whatever the other items are doing.
func (s *GRPCServer) ApplyResourceChanges(stream grpc.BidiStreamingServer[proto.ApplyResourceChanges_Batch, proto.ApplyResourceChanges_Events]) error {
	s.priors.clear() // the plans are made
	m := &serverMux[*proto.ApplyResourceChange_Request, *proto.ApplyResourceChange_Event]{
		recv: func() ([]muxItem[*proto.ApplyResourceChange_Request], []uint64, error) {
			b, err := stream.Recv()
			if err != nil {
				return nil, nil, err
			}
			items := make([]muxItem[*proto.ApplyResourceChange_Request], 0, len(b.Items))
			for _, it := range b.Items {
				if it.Request != nil {
					items = append(items, muxItem[*proto.ApplyResourceChange_Request]{it.Id, it.Request})
				}
			}
			return items, b.Cancel, nil
		},
		send: func(evs []muxItem[*proto.ApplyResourceChange_Event]) error {
			out := &proto.ApplyResourceChanges_Events{Events: make([]*proto.ApplyResourceChanges_Event, len(evs))}
			for i, e := range evs {
				out.Events[i] = &proto.ApplyResourceChanges_Event{Id: e.id, Event: e.v}
			}
			return stream.Send(out)
		},
		handle: s.applyOne,
		size: func(e *proto.ApplyResourceChange_Event) int {
			if r := e.GetResult(); r != nil {
				return len(r.NewState) + len(r.Private) + 256
			}
			return 256
		},
	}
	return m.serve(stream.Context())
}

// applyOne applies one item: progress events as the provider reports
// them, then one result. A replan item is planned, checked against the
// reviewed plan and only then applied (planApplyOne).
func (s *GRPCServer) applyOne(ctx context.Context, req *proto.ApplyResourceChange_Request, emit func(*proto.ApplyResourceChange_Event)) {
	ae := &applyEmitter{emit: emit}
	ty, diags := s.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		ae.failed(req, diags)
		return
	}
	if req.Replan {
		s.planApplyOne(ctx, ty, req, ae)
		return
	}
	var vals [3]cty.Value
	for i, b := range [3][]byte{req.Prior, req.Planned, req.Config} {
		v, err := decodeValue(b, ty)
		if err != nil {
			ae.failed(req, Diagnostics{badValue([3]string{"prior", "planned", "config"}[i], req.Address, err)})
			return
		}
		vals[i] = v
	}
	resp := s.impl.ApplyResourceChange(ctx, ApplyRequest{
		TypeName: req.TypeName, Address: req.Address, Node: nodeFromProto(req.Node),
		Prior: vals[0], Planned: vals[1], Config: vals[2], Private: req.Private,
	}, ae.progress)
	faultPoint(req.TypeName, applyAction(vals[0].IsNull(), vals[1].IsNull()), req.Address)
	ae.applied(req, ty, resp)
}

// planApplyOne serves a replan item: PlanAndApply on the provider, with
// the proposed value computed here from the schema (as planOne does).
func (s *GRPCServer) planApplyOne(ctx context.Context, ty cty.Type, req *proto.ApplyResourceChange_Request, ae *applyEmitter) {
	var vals [3]cty.Value
	for i, b := range [3][]byte{req.Prior, req.Config, req.Reviewed} {
		v, err := decodeValue(b, ty)
		if err != nil {
			ae.notApplied(PlanApplyResponse{ApplyResponse: ApplyResponse{Diagnostics: Diagnostics{
				badValue([3]string{"prior", "config", "reviewed plan"}[i], req.Address, err)}}})
			return
		}
		vals[i] = v
	}
	replaces := cty.NullVal(ty)
	if len(req.Replaces) > 0 {
		v, err := decodeValue(req.Replaces, ty)
		if err != nil {
			ae.notApplied(PlanApplyResponse{ApplyResponse: ApplyResponse{Diagnostics: Diagnostics{badValue("replaced object", req.Address, err)}}})
			return
		}
		replaces = v
	}
	pr := PlanApplyRequest{TypeName: req.TypeName, Address: req.Address, Node: nodeFromProto(req.Node),
		Prior: vals[0], PriorPrivate: req.Private, Config: vals[1], Replaces: replaces, Reviewed: vals[2]}
	block := s.schema.Load().blocks[req.TypeName]
	proposed := ProposedNew(block, vals[0], vals[1])
	resp := planAndApply(ctx, s.impl, pr, proposed, block, func(time.Time) { ae.started() }, ae.progress)
	if !resp.Applied {
		ae.notApplied(resp)
		return
	}
	faultPoint(req.TypeName, applyAction(vals[0].IsNull(), false), req.Address)
	ae.applied(req, ty, resp.ApplyResponse)
}

// applyEmitter sends one apply item's events: progress until the result,
// then the result. A replan item's start (Started) is sent only once the
// apply has run for startedDelay or reports progress: a quick, quiet
// apply's result is its only event and says itself that the apply started
// and how long it ran, one message per instance instead of two.
type applyEmitter struct {
	emit      func(*proto.ApplyResourceChange_Event)
	mu        sync.Mutex // a provider may report progress from several goroutines
	finished  bool
	begun     time.Time // when the apply started; zero before
	startSent bool
	timer     *time.Timer
}

// startedDelay is how long an apply runs before its start is sent on its
// own: short enough that the CLI's "Creating..." is not late to the eye.
const startedDelay = 50 * time.Millisecond

func (ae *applyEmitter) started() {
	ae.mu.Lock()
	defer ae.mu.Unlock()
	ae.begun = time.Now()
	ae.timer = time.AfterFunc(startedDelay, func() {
		ae.mu.Lock()
		defer ae.mu.Unlock()
		if !ae.finished {
			ae.sendStarted()
		}
	})
}

// sendStarted sends Started once. ae.mu held.
func (ae *applyEmitter) sendStarted() {
	if ae.startSent || ae.begun.IsZero() {
		return
	}
	ae.startSent = true
	ae.emit(&proto.ApplyResourceChange_Event{Event: &proto.ApplyResourceChange_Event_Started{
		Started: &proto.ApplyResourceChange_Started{ElapsedNs: int64(time.Since(ae.begun))}}})
}

func (ae *applyEmitter) progress(p Progress) {
	ae.mu.Lock()
	defer ae.mu.Unlock()
	if ae.finished {
		return // after the result: the engine no longer listens
	}
	ae.sendStarted()
	ae.emit(&proto.ApplyResourceChange_Event{Event: &proto.ApplyResourceChange_Event_Progress{
		Progress: &proto.ApplyResourceChange_Progress{Message: p.Message, Current: p.Current, Total: p.Total, ElapsedNs: int64(p.Elapsed), Unit: p.Unit}}})
}

func (ae *applyEmitter) result(r *proto.ApplyResourceChange_Result) {
	ae.mu.Lock()
	defer ae.mu.Unlock()
	ae.finished = true
	if ae.timer != nil {
		ae.timer.Stop()
	}
	if !ae.begun.IsZero() {
		r.ElapsedNs = int64(time.Since(ae.begun))
	}
	ae.emit(&proto.ApplyResourceChange_Event{Event: &proto.ApplyResourceChange_Event_Result{Result: r}})
}

// failed answers an item that could not be decoded: nothing was done.
func (ae *applyEmitter) failed(req *proto.ApplyResourceChange_Request, diags Diagnostics) {
	if req.Replan {
		ae.notApplied(PlanApplyResponse{ApplyResponse: ApplyResponse{Diagnostics: diags}})
		return
	}
	ae.result(&proto.ApplyResourceChange_Result{NewState: req.Prior, Private: req.Private, Diagnostics: diagsToProto(diags)})
}

func (ae *applyEmitter) notApplied(resp PlanApplyResponse) {
	r := &proto.ApplyResourceChange_Result{NotApplied: true, PlanChanged: resp.PlanChanged, Diagnostics: diagsToProto(resp.Diagnostics)}
	if resp.PlanChanged {
		r.Changed = pathToProto(resp.Changed)
	}
	ae.result(r)
}

func (ae *applyEmitter) applied(req *proto.ApplyResourceChange_Request, ty cty.Type, resp ApplyResponse) {
	diags := resp.Diagnostics
	state, err := encodeValue(resp.NewState, ty)
	if err != nil {
		diags = append(diags, badValue("new state", req.Address, err))
		state = req.Prior
	}
	ae.result(&proto.ApplyResourceChange_Result{NewState: state, Private: resp.Private, Diagnostics: diagsToProto(diags)})
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
