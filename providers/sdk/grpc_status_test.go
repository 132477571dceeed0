package sdk_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// service is a resource type with live facts and output: it answers
// Status from the items it is given and streams Logs, recording what it
// saw.
type service struct {
	thing
	mu       sync.Mutex
	items    []sdk.StatusItem
	logsReq  sdk.LogsRequest
	followed chan struct{} // closed when a follow ends because its context did
}

var serviceSchema = &sdk.ResourceSchema{Logs: true, Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
	"name":    {Type: cty.String, Required: true},
	"running": {Type: cty.Bool, Computed: true},
}}}

func (s *service) Schema() *sdk.ResourceSchema { return serviceSchema }

func (s *service) Status(_ context.Context, _ sdk.Node, items []sdk.StatusItem) ([]sdk.StatusResult, int, sdk.Diagnostics) {
	s.mu.Lock()
	s.items = append(s.items, items...)
	s.mu.Unlock()
	out := make([]sdk.StatusResult, len(items))
	for i, it := range items {
		name := it.State.GetAttr("name").AsString()
		switch {
		case !it.ObservedKnown || it.Observed.IsNull():
			out[i] = sdk.StatusResult{Health: sdk.HealthDown, Summary: name + " missing"}
		default:
			out[i] = sdk.StatusResult{Health: sdk.HealthOK, Summary: name + " running",
				Facts: []sdk.Fact{{Name: "state", Value: "running"}, {Name: "restarts", Value: "2"}}}
		}
	}
	return out, 1, nil
}

func (s *service) Logs(ctx context.Context, req sdk.LogsRequest, emit func(sdk.LogLine) error) sdk.Diagnostics {
	s.mu.Lock()
	s.logsReq = req
	s.mu.Unlock()
	t0 := time.Date(2026, 12, 6, 8, 0, 0, 5, time.UTC)
	for i := 0; ; i++ {
		stream := "stdout"
		if i%2 == 1 {
			stream = "stderr"
		}
		if err := emit(sdk.LogLine{Stream: stream, Text: "line " + string(rune('a'+i%26)), Time: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			return sdk.Diagnostics{sdk.FromError("emit", err)}
		}
		if !req.Follow && i == 2 {
			return sdk.Diagnostics{{Severity: sdk.Warning, Summary: "three lines only"}}
		}
		if req.Follow {
			select {
			case <-ctx.Done():
				close(s.followed)
				return nil
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

func newService(t *testing.T) (*service, sdk.Provider) {
	s := &service{followed: make(chan struct{})}
	router := &sdk.Router{Name: "test", Resources: map[string]sdk.Resource{"test_svc": s, "test_thing": &thing{}}}
	return s, sdktest.GRPC(t, router)
}

func svcVal(name string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(name), "running": cty.True})
}

func TestReadStatusRoundTrip(t *testing.T) {
	s, p := newService(t)
	if sc := sdktest.Schema(t, p, "test_svc"); !sc.Logs {
		t.Errorf("schema's Logs did not cross the wire")
	}
	if sc := sdktest.Schema(t, p, "test_thing"); sc.Logs {
		t.Errorf("test_thing says it has logs")
	}
	sr, ok := p.(sdk.StatusReader)
	if !ok {
		t.Fatalf("the gRPC client %T is no StatusReader", p)
	}
	req := sdk.StatusRequest{Node: node, Items: []sdk.StatusItem{
		{TypeName: "test_svc", Address: "test_svc.a", State: svcVal("a"), Observed: svcVal("a"), ObservedKnown: true},
		{TypeName: "test_thing", Address: "test_thing.x", State: nullThing()},
		{TypeName: "test_svc", Address: "test_svc.b", State: svcVal("b"), Observed: cty.NullVal(serviceSchema.Block.ImpliedType()), ObservedKnown: true},
		{TypeName: "test_svc", Address: "test_svc.c", State: svcVal("c")},
	}}
	resp := sr.ReadStatus(context.Background(), req)
	if resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics.Err())
	}
	want := []sdk.StatusResult{
		{Health: sdk.HealthOK, Summary: "a running", Facts: []sdk.Fact{{Name: "state", Value: "running"}, {Name: "restarts", Value: "2"}}},
		{Unavailable: true},
		{Health: sdk.HealthDown, Summary: "b missing"},
		{Health: sdk.HealthDown, Summary: "c missing"},
	}
	if !reflect.DeepEqual(resp.Results, want) {
		t.Errorf("results\n got %+v\nwant %+v", resp.Results, want)
	}
	if resp.RoundTrips != 1 {
		t.Errorf("round trips %d; want 1", resp.RoundTrips)
	}
	// What the provider saw: states and observed values, null and unread
	// told apart.
	if len(s.items) != 3 {
		t.Fatalf("provider saw %d items; want 3", len(s.items))
	}
	if !s.items[0].ObservedKnown || !s.items[0].Observed.RawEquals(svcVal("a")) || !s.items[0].State.RawEquals(svcVal("a")) {
		t.Errorf("item a: %#v", s.items[0])
	}
	if !s.items[1].ObservedKnown || !s.items[1].Observed.IsNull() {
		t.Errorf("item b (gone): observed %#v known %v", s.items[1].Observed, s.items[1].ObservedKnown)
	}
	if s.items[2].ObservedKnown {
		t.Errorf("item c (not read) arrived as observed")
	}
}

func TestLogsStreamsLinesInOrder(t *testing.T) {
	s, p := newService(t)
	ls := p.(sdk.LogStreamer)
	since := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	var got []sdk.LogLine
	diags := ls.Logs(context.Background(), sdk.LogsRequest{TypeName: "test_svc", Address: "test_svc.a", Node: node, State: svcVal("a"), Tail: 10, Since: since},
		func(l sdk.LogLine) error { got = append(got, l); return nil })
	if len(diags) != 1 || diags[0].Summary != "three lines only" {
		t.Errorf("diagnostics %v; want the provider's warning", diags)
	}
	if len(got) != 3 || got[0].Text != "line a" || got[1].Stream != "stderr" || got[2].Text != "line c" {
		t.Fatalf("lines %+v", got)
	}
	if want := time.Date(2026, 12, 6, 8, 0, 2, 5, time.UTC); !got[2].Time.Equal(want) {
		t.Errorf("time %v; want %v", got[2].Time, want)
	}
	if s.logsReq.Tail != 10 || !s.logsReq.Since.Equal(since) || s.logsReq.Node.Host != node.Host || !s.logsReq.State.RawEquals(svcVal("a")) {
		t.Errorf("request as the provider saw it: %+v", s.logsReq)
	}
}

func TestLogsFollowEndsWithTheContext(t *testing.T) {
	s, p := newService(t)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	diags := p.(sdk.LogStreamer).Logs(ctx, sdk.LogsRequest{TypeName: "test_svc", Address: "test_svc.a", Node: node, State: svcVal("a"), Follow: true, Tail: -1},
		func(sdk.LogLine) error {
			if n++; n == 5 {
				cancel() // Ctrl-C
			}
			return nil
		})
	if len(diags) != 0 {
		t.Errorf("a follow ended by its caller is no error: %v", diags)
	}
	select {
	case <-s.followed:
	case <-time.After(10 * time.Second):
		t.Fatal("the provider's follow did not see the cancel")
	}
}

func TestLogsOfATypeWithout(t *testing.T) {
	_, p := newService(t)
	diags := p.(sdk.LogStreamer).Logs(context.Background(), sdk.LogsRequest{TypeName: "test_thing", Address: "test_thing.x", Node: node, State: nullThing()},
		func(sdk.LogLine) error { return nil })
	if !diags.HasErrors() || !strings.Contains(diags.Err().Error(), "test_thing.x is a test_thing, which has no logs") {
		t.Errorf("diagnostics %v", diags)
	}
}

// oldProvider is a provider built before ReadStatus and Logs: only the
// methods of sdk.Provider, so its plugin answers both Unimplemented, as a
// plugin built from the older generated code does.
type oldProvider struct{ sdk.Provider }

func TestStatusAndLogsOfAnOldPlugin(t *testing.T) {
	router := &sdk.Router{Name: "test", Resources: map[string]sdk.Resource{"test_svc": &service{}}}
	p := sdktest.GRPC(t, oldProvider{router})
	resp := p.(sdk.StatusReader).ReadStatus(context.Background(), sdk.StatusRequest{Node: node, Items: []sdk.StatusItem{
		{TypeName: "test_svc", Address: "test_svc.a", State: svcVal("a")},
		{TypeName: "test_svc", Address: "test_svc.b", State: svcVal("b")},
	}})
	if len(resp.Diagnostics) != 0 {
		t.Errorf("an old plugin's status is no error: %v", resp.Diagnostics)
	}
	if !reflect.DeepEqual(resp.Results, sdk.Unavailable(2)) {
		t.Errorf("results %+v; want both unavailable", resp.Results)
	}
	diags := p.(sdk.LogStreamer).Logs(context.Background(), sdk.LogsRequest{TypeName: "test_svc", Address: "test_svc.a", Node: node, State: svcVal("a")},
		func(sdk.LogLine) error { t.Error("a line from a plugin without Logs"); return nil })
	if !diags.HasErrors() || !strings.Contains(diags.Err().Error(), "predates logs") {
		t.Errorf("diagnostics %v; want one saying the plugin predates logs", diags)
	}
	// Everything else still works.
	if _, d := p.GetSchema(context.Background()); d.HasErrors() {
		t.Error(d.Err())
	}
}
