package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sparkform/sparkform/providers/sdk/proto"
)

var (
	_ StatusReader = (*GRPCClient)(nil)
	_ LogStreamer  = (*GRPCClient)(nil)
)

// ReadStatus implements StatusReader. A plugin that predates ReadStatus
// answers Unimplemented: every item is then Unavailable, not an error, so
// old plugins keep working with `sparkform status`.
func (c *GRPCClient) ReadStatus(ctx context.Context, req StatusRequest) StatusResponse {
	items := make([]*proto.ReadStatus_Item, len(req.Items))
	for i, it := range req.Items {
		ty, diags := c.typeOf(ctx, it.TypeName)
		if diags.HasErrors() {
			return StatusResponse{Diagnostics: diags}
		}
		st, err := encodeValue(it.State, ty)
		if err != nil {
			return StatusResponse{Diagnostics: Diagnostics{badValue("state", it.Address, err)}}
		}
		var obs []byte
		if it.ObservedKnown {
			if obs, err = encodeValue(it.Observed, ty); err != nil {
				return StatusResponse{Diagnostics: Diagnostics{badValue("observed value", it.Address, err)}}
			}
		}
		items[i] = &proto.ReadStatus_Item{TypeName: it.TypeName, Address: it.Address, State: st, Observed: obs,
			ObservedKnown: it.ObservedKnown, Private: it.Private}
	}
	resp, err := c.client.ReadStatus(ctx, &proto.ReadStatus_Request{Node: nodeToProto(req.Node), Items: items}, callOpts...)
	if status.Code(err) == codes.Unimplemented {
		return StatusResponse{Results: Unavailable(len(items))}
	}
	if err != nil {
		addr := ""
		if len(req.Items) > 0 {
			addr = req.Items[0].Address
		}
		return StatusResponse{Diagnostics: Diagnostics{c.rpcError(ctx, "ReadStatus", addr, err)}}
	}
	out := StatusResponse{Diagnostics: diagsFromProto(resp.Diagnostics), RoundTrips: int(resp.RoundTrips)}
	if len(resp.Results) == 0 && len(items) > 0 {
		return out // a batch-wide failure, explained by the diagnostics
	}
	if len(resp.Results) != len(items) {
		out.Diagnostics = append(out.Diagnostics, Errorf(nil, "Provider bug", "ReadStatus returned %d results for %d instances", len(resp.Results), len(items)))
		return out
	}
	out.Results = make([]StatusResult, len(items))
	for i, r := range resp.Results {
		res := StatusResult{Health: Health(r.Health), Summary: r.Summary, Diagnostics: diagsFromProto(r.Diagnostics), Unavailable: r.Unavailable}
		for _, f := range r.Facts {
			res.Facts = append(res.Facts, Fact{Name: f.Name, Value: f.Value})
		}
		out.Results[i] = res
	}
	return out
}

// Logs implements LogStreamer. The stream ends when the plugin ends it,
// when emit fails (its error is the diagnostic), or when ctx ends, which
// is how a follow stops and is no error.
func (c *GRPCClient) Logs(ctx context.Context, req LogsRequest, emit func(LogLine) error) Diagnostics {
	ty, diags := c.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return diags
	}
	st, err := encodeValue(req.State, ty)
	if err != nil {
		return Diagnostics{badValue("state", req.Address, err)}
	}
	preq := &proto.Logs_Request{TypeName: req.TypeName, Address: req.Address, Node: nodeToProto(req.Node), State: st,
		Private: req.Private, Follow: req.Follow, Tail: int64(req.Tail)}
	if !req.Since.IsZero() {
		preq.SinceUnixNs = req.Since.UnixNano()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.client.Logs(ctx, preq, callOpts...)
	for err == nil {
		var m *proto.Logs_Lines
		if m, err = stream.Recv(); err != nil {
			break
		}
		for _, l := range m.Lines {
			line := LogLine{Stream: l.Stream, Text: l.Text}
			if l.TimeUnixNs != 0 {
				line.Time = time.Unix(0, l.TimeUnixNs)
			}
			if eerr := emit(line); eerr != nil {
				return Diagnostics{FromError("Cannot write the logs of "+req.Address, eerr)}
			}
		}
		if d := diagsFromProto(m.Diagnostics); len(d) > 0 {
			return d
		}
	}
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case ctx.Err() != nil:
		return nil // the caller stopped following
	case status.Code(err) == codes.Unimplemented:
		return Diagnostics{Errorf(nil, "No logs", "the plugin serving %s predates logs (%v): update it", req.TypeName, ErrNoLogs)}
	}
	return Diagnostics{c.rpcError(ctx, "Logs", req.Address, err)}
}

// ReadStatus implements proto.ProviderServer: Unimplemented when the
// provider is no StatusReader, as an older plugin would answer.
func (s *GRPCServer) ReadStatus(ctx context.Context, req *proto.ReadStatus_Request) (*proto.ReadStatus_Response, error) {
	sr, ok := s.impl.(StatusReader)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this provider reports no status")
	}
	items := make([]StatusItem, len(req.Items))
	for i, it := range req.Items {
		ty, diags := s.typeOf(ctx, it.TypeName)
		if diags.HasErrors() {
			return &proto.ReadStatus_Response{Diagnostics: diagsToProto(diags)}, nil
		}
		st, err := decodeValue(it.State, ty)
		if err != nil {
			return &proto.ReadStatus_Response{Diagnostics: diagsToProto(Diagnostics{badValue("state", it.Address, err)})}, nil
		}
		obs := cty.NullVal(ty)
		if it.ObservedKnown {
			if obs, err = decodeValue(it.Observed, ty); err != nil {
				return &proto.ReadStatus_Response{Diagnostics: diagsToProto(Diagnostics{badValue("observed value", it.Address, err)})}, nil
			}
		}
		items[i] = StatusItem{TypeName: it.TypeName, Address: it.Address, State: st, Observed: obs, ObservedKnown: it.ObservedKnown, Private: it.Private}
	}
	resp := sr.ReadStatus(ctx, StatusRequest{Node: nodeFromProto(req.Node), Items: items})
	out := &proto.ReadStatus_Response{RoundTrips: int64(resp.RoundTrips), Diagnostics: diagsToProto(resp.Diagnostics)}
	if len(resp.Results) == len(items) {
		out.Results = make([]*proto.ReadStatus_Result, len(items))
		for i, r := range resp.Results {
			pr := &proto.ReadStatus_Result{Health: string(r.Health), Summary: r.Summary, Diagnostics: diagsToProto(r.Diagnostics), Unavailable: r.Unavailable}
			for _, f := range r.Facts {
				pr.Facts = append(pr.Facts, &proto.ReadStatus_Fact{Name: f.Name, Value: f.Value})
			}
			out.Results[i] = pr
		}
	} else if !resp.Diagnostics.HasErrors() {
		out.Diagnostics = append(out.Diagnostics, diagsToProto(Diagnostics{Errorf(nil, "Provider bug",
			"ReadStatus returned %d results for %d instances", len(resp.Results), len(items))})...)
	}
	return out, nil
}

// Logs implements proto.ProviderServer: one message per line as it comes
// (a follow shows each line at once), diagnostics in a last message.
func (s *GRPCServer) Logs(req *proto.Logs_Request, stream grpc.ServerStreamingServer[proto.Logs_Lines]) error {
	ls, ok := s.impl.(LogStreamer)
	if !ok {
		return status.Error(codes.Unimplemented, "this provider serves no logs")
	}
	ctx := stream.Context()
	ty, diags := s.typeOf(ctx, req.TypeName)
	if diags.HasErrors() {
		return stream.Send(&proto.Logs_Lines{Diagnostics: diagsToProto(diags)})
	}
	st, err := decodeValue(req.State, ty)
	if err != nil {
		return stream.Send(&proto.Logs_Lines{Diagnostics: diagsToProto(Diagnostics{badValue("state", req.Address, err)})})
	}
	lr := LogsRequest{TypeName: req.TypeName, Address: req.Address, Node: nodeFromProto(req.Node), State: st,
		Private: req.Private, Follow: req.Follow, Tail: int(req.Tail)}
	if req.SinceUnixNs != 0 {
		lr.Since = time.Unix(0, req.SinceUnixNs)
	}
	diags = ls.Logs(ctx, lr, func(l LogLine) error {
		pl := &proto.Logs_Line{Stream: l.Stream, Text: l.Text}
		if !l.Time.IsZero() {
			pl.TimeUnixNs = l.Time.UnixNano()
		}
		if err := stream.Send(&proto.Logs_Lines{Lines: []*proto.Logs_Line{pl}}); err != nil {
			return fmt.Errorf("sending a log line: %w", err)
		}
		return nil
	})
	if len(diags) > 0 && ctx.Err() == nil {
		return stream.Send(&proto.Logs_Lines{Diagnostics: diagsToProto(diags)})
	}
	return nil
}
