package sdktest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sparkform/sparkform/providers/sdk"
)

// GRPC serves p on a gRPC server listening on a unix socket and returns a
// Provider connected to it through the same plugin adapters a plugin
// process uses. Server and connection close when the test ends.
func GRPC(t testing.TB, p sdk.Provider) sdk.Provider {
	t.Helper()
	// A short directory: unix socket paths are limited to ~100 bytes and
	// t.TempDir() embeds the (possibly long) test name.
	dir, err := os.MkdirTemp("", "sdktest")
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "provider.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("sdktest: listen: %v", err)
	}
	plug := &sdk.GRPCProviderPlugin{Impl: p}
	srv := sdk.NewGRPCServerWithLimits(nil)
	if err := plug.GRPCServer(nil, srv); err != nil {
		t.Fatalf("sdktest: register: %v", err)
	}
	go func() { _ = srv.Serve(l) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		t.Fatalf("sdktest: dial: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
	})
	raw, err := plug.GRPCClient(context.Background(), nil, conn)
	if err != nil {
		t.Fatalf("sdktest: client: %v", err)
	}
	return raw.(sdk.Provider)
}

// Schema returns the schema of one resource type of p.
func Schema(t testing.TB, p sdk.Provider, typeName string) *sdk.ResourceSchema {
	t.Helper()
	s, diags := p.GetSchema(context.Background())
	if diags.HasErrors() {
		t.Fatalf("GetSchema: %v", diags.Err())
	}
	rs, ok := s.ResourceTypes[typeName]
	if !ok {
		names := make([]string, 0, len(s.ResourceTypes))
		for n := range s.ResourceTypes {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Fatalf("provider has no resource type %q; it serves %v", typeName, names)
	}
	return rs
}

// Object builds a value of the block's type from attrs: attributes and
// blocks not named are null (blocks: empty list/set), and each value is
// converted to the attribute's type. A name the block does not have, or a
// value that cannot convert, fails the test.
func Object(t testing.TB, b *sdk.Block, attrs map[string]cty.Value) cty.Value {
	t.Helper()
	v, err := object(b, attrs)
	if err != nil {
		t.Fatalf("sdktest.Object: %v", err)
	}
	return v
}

func object(b *sdk.Block, attrs map[string]cty.Value) (cty.Value, error) {
	for name := range attrs {
		if b.Attributes[name] == nil && b.BlockTypes[name] == nil {
			return cty.NilVal, fmt.Errorf("no attribute or block %q (have %s)", name, strings.Join(b.AttributeNames(), ", "))
		}
	}
	ty := b.ImpliedType()
	vals := make(map[string]cty.Value, len(ty.AttributeTypes()))
	for name, aty := range ty.AttributeTypes() {
		v, ok := attrs[name]
		switch {
		case !ok && b.BlockTypes[name] != nil && b.BlockTypes[name].Nesting != sdk.NestingSingle:
			if aty.IsSetType() {
				vals[name] = cty.SetValEmpty(aty.ElementType())
			} else {
				vals[name] = cty.ListValEmpty(aty.ElementType())
			}
		case !ok:
			vals[name] = cty.NullVal(aty)
		default:
			cv, err := convert.Convert(v, aty)
			if err != nil {
				return cty.NilVal, fmt.Errorf("%s: %v", name, err)
			}
			vals[name] = cv
		}
	}
	return cty.ObjectVal(vals), nil
}

// Plan runs PlanResourceChange for config against prior the way the engine
// does (Proposed from sdk.ProposedNew) and fails the test on errors.
func Plan(t testing.TB, p sdk.Provider, typeName string, node sdk.Node, prior cty.Value, priorPrivate []byte, config cty.Value) sdk.PlanResponse {
	t.Helper()
	rs := Schema(t, p, typeName)
	if prior == cty.NilVal {
		prior = cty.NullVal(rs.Block.ImpliedType())
	}
	resp := p.PlanResourceChange(context.Background(), sdk.PlanRequest{
		TypeName: typeName, Address: typeName + ".test", Node: node,
		Prior: prior, Config: config, Proposed: sdk.ProposedNew(rs.Block, prior, config), PriorPrivate: priorPrivate,
	})
	if resp.Diagnostics.HasErrors() {
		t.Fatalf("PlanResourceChange %s: %v", typeName, resp.Diagnostics.Err())
	}
	return resp
}

// Apply runs ApplyResourceChange of planned over prior, collecting the
// progress events, and fails the test on errors.
func Apply(t testing.TB, p sdk.Provider, typeName string, node sdk.Node, prior, planned, config cty.Value, private []byte) (sdk.ApplyResponse, []sdk.Progress) {
	t.Helper()
	var events []sdk.Progress
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{
		TypeName: typeName, Address: typeName + ".test", Node: node,
		Prior: prior, Planned: planned, Config: config, Private: private,
	}, func(ev sdk.Progress) { events = append(events, ev) })
	if resp.Diagnostics.HasErrors() {
		t.Fatalf("ApplyResourceChange %s: %v", typeName, resp.Diagnostics.Err())
	}
	return resp, events
}

// Read reads one instance and fails the test on errors.
func Read(t testing.TB, p sdk.Provider, typeName string, node sdk.Node, prior cty.Value, private []byte) sdk.ReadResult {
	t.Helper()
	resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: node, Resources: []sdk.ReadItem{{
		TypeName: typeName, Address: typeName + ".test", Prior: prior, Private: private,
	}}})
	if resp.Diagnostics.HasErrors() {
		t.Fatalf("ReadResources %s: %v", typeName, resp.Diagnostics.Err())
	}
	if len(resp.Results) != 1 {
		t.Fatalf("ReadResources %s: %d results for 1 instance", typeName, len(resp.Results))
	}
	if resp.Results[0].Diagnostics.HasErrors() {
		t.Fatalf("ReadResources %s: %v", typeName, resp.Results[0].Diagnostics.Err())
	}
	return resp.Results[0]
}

// Create plans and applies config from nothing, then reads the result back
// and fails the test unless Read reports exactly what Apply returned (a
// provider whose Read disagrees with its Apply shows drift forever). It
// returns the applied state and private data.
func Create(t testing.TB, p sdk.Provider, typeName string, node sdk.Node, config cty.Value) (cty.Value, []byte) {
	t.Helper()
	rs := Schema(t, p, typeName)
	null := cty.NullVal(rs.Block.ImpliedType())
	plan := Plan(t, p, typeName, node, null, nil, config)
	applied, _ := Apply(t, p, typeName, node, null, plan.Planned, config, plan.PlannedPrivate)
	if applied.NewState.IsNull() || !applied.NewState.IsWhollyKnown() {
		t.Fatalf("Apply %s returned %#v; want a wholly known object", typeName, applied.NewState)
	}
	read := Read(t, p, typeName, node, applied.NewState, applied.Private)
	if !read.NewState.RawEquals(applied.NewState) {
		t.Fatalf("Read after Apply of %s differs:\napplied: %#v\nread:    %#v", typeName, applied.NewState, read.NewState)
	}
	return applied.NewState, applied.Private
}

// Destroy applies a delete of state and fails the test unless the
// provider reports the object gone (a null new state).
func Destroy(t testing.TB, p sdk.Provider, typeName string, node sdk.Node, state cty.Value, private []byte) {
	t.Helper()
	rs := Schema(t, p, typeName)
	null := cty.NullVal(rs.Block.ImpliedType())
	resp, _ := Apply(t, p, typeName, node, state, null, null, private)
	if !resp.NewState.IsNull() {
		t.Fatalf("Destroy %s left %#v; want null", typeName, resp.NewState)
	}
}
