package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// thing is a resource type with every shape the protocol must carry:
// required/optional/computed/sensitive/force-new attributes, a dynamic
// attribute, maps, and list, set and single nested blocks. It records the
// requests it sees so tests can check what crossed the wire.
type thing struct {
	mu   sync.Mutex
	seen []any

	plan    func(sdk.PlanRequest) sdk.PlanResponse
	apply   func(context.Context, sdk.ApplyRequest, func(sdk.Progress)) sdk.ApplyResponse
	read    func([]sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics)
	started chan struct{} // closed by blocking applies once they run
}

var thingSchema = &sdk.ResourceSchema{
	Version:       3,
	Description:   "a test thing",
	Identity:      []string{"name"},
	LocalPlan:     true,
	LocalApply:    true,
	ResumesCreate: true,
	IdentityFold:  map[string]string{"name": sdk.FoldDashUnderscore},
	Block: &sdk.Block{
		Attributes: map[string]*sdk.Attribute{
			"id":     {Type: cty.String, Computed: true, Description: "the id"},
			"name":   {Type: cty.String, Required: true, ForceNew: true},
			"secret": {Type: cty.String, Optional: true, Sensitive: true},
			"dyn":    {Type: cty.DynamicPseudoType, Optional: true, SensitiveWith: []string{"secret"}},
			"tags":   {Type: cty.Map(cty.String), Optional: true, Computed: true},
			"ports":  {Type: cty.Set(cty.Number), Optional: true},
			"nested": {Type: cty.Object(map[string]cty.Type{"a": cty.List(cty.Bool), "b": cty.Tuple([]cty.Type{cty.String, cty.Number})}), Optional: true},
		},
		BlockTypes: map[string]*sdk.NestedBlock{
			"mount": {Nesting: sdk.NestingList, MinItems: 0, MaxItems: 8, Description: "a mount", Block: sdk.Block{
				Attributes: map[string]*sdk.Attribute{
					"source":    {Type: cty.String, Required: true},
					"read_only": {Type: cty.Bool, Optional: true},
				}}},
			"rule": {Nesting: sdk.NestingSet, ForceNew: true, Block: sdk.Block{
				Attributes: map[string]*sdk.Attribute{"port": {Type: cty.Number, Required: true}}}},
			"limits": {Nesting: sdk.NestingSingle, Block: sdk.Block{
				Attributes: map[string]*sdk.Attribute{"memory": {Type: cty.String, Optional: true}},
				BlockTypes: map[string]*sdk.NestedBlock{"inner": {Nesting: sdk.NestingList, Block: sdk.Block{
					Attributes: map[string]*sdk.Attribute{"x": {Type: cty.Number, Optional: true}}}}},
			}},
		},
	},
}

var thingType = thingSchema.Block.ImpliedType()

func (r *thing) record(v any) {
	r.mu.Lock()
	r.seen = append(r.seen, v)
	r.mu.Unlock()
}

func (r *thing) last() any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[len(r.seen)-1]
}

func (r *thing) Schema() *sdk.ResourceSchema { return thingSchema }

func (r *thing) Validate(_ context.Context, config cty.Value) sdk.Diagnostics {
	r.record(config)
	var diags sdk.Diagnostics
	if config.IsNull() || !config.IsKnown() {
		return nil
	}
	if n := config.GetAttr("name"); n.IsKnown() && !n.IsNull() && n.AsString() == "" {
		diags = append(diags, sdk.Errorf(cty.GetAttrPath("name"), "Empty name", "name must not be empty"))
	}
	if m := config.GetAttr("mount"); m.IsKnown() && !m.IsNull() {
		for it := m.ElementIterator(); it.Next(); {
			k, v := it.Element()
			if s := v.GetAttr("source"); s.IsKnown() && !s.IsNull() && !strings.HasPrefix(s.AsString(), "/") {
				diags = append(diags, sdk.Diagnostic{Severity: sdk.Warning, Summary: "Relative source",
					Path: cty.GetAttrPath("mount").Index(k).GetAttr("source")})
			}
		}
	}
	if t := config.GetAttr("tags"); t.IsKnown() && !t.IsNull() {
		for it := t.ElementIterator(); it.Next(); {
			k, _ := it.Element()
			if k.AsString() == "bad" {
				diags = append(diags, sdk.Errorf(cty.GetAttrPath("tags").Index(k), "Bad tag", "tag %q is reserved", k.AsString()))
			}
		}
	}
	if p := config.GetAttr("ports"); p.IsWhollyKnown() && !p.IsNull() {
		for it := p.ElementIterator(); it.Next(); {
			_, v := it.Element()
			if v.Equals(cty.NumberIntVal(0)).True() || v.Equals(cty.NumberFloatVal(0.5)).True() {
				diags = append(diags, sdk.Errorf(cty.GetAttrPath("ports").Index(v), "Bad port", "port %s", v.AsBigFloat().String()))
			}
		}
	}
	return diags
}

func (r *thing) Read(_ context.Context, node sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	r.record(node)
	if r.read != nil {
		return r.read(items)
	}
	out := make([]sdk.ReadResult, len(items))
	for i, it := range items {
		out[i] = sdk.ReadResult{NewState: it.Prior, Private: it.Private}
	}
	return out, 1, nil
}

func (r *thing) Plan(_ context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	r.record(req)
	if r.plan != nil {
		return r.plan(req)
	}
	return sdk.DefaultPlan(thingSchema, req)
}

func (r *thing) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	r.record(req)
	if r.apply != nil {
		return r.apply(ctx, req, progress)
	}
	if req.Planned.IsNull() {
		return sdk.ApplyResponse{NewState: req.Planned}
	}
	vals := req.Planned.AsValueMap()
	vals["id"] = cty.StringVal("id-" + req.Planned.GetAttr("name").AsString())
	if !vals["tags"].IsKnown() {
		vals["tags"] = cty.MapValEmpty(cty.String)
	}
	return sdk.ApplyResponse{NewState: cty.ObjectVal(vals), Private: []byte("restore-info")}
}

func (r *thing) Import(_ context.Context, req sdk.ImportRequest) sdk.ImportResponse {
	r.record(req)
	if req.ID == "missing" {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Not found", "no thing %q on %s", req.ID, req.Node.Name)}}
	}
	vals := map[string]cty.Value{}
	for name, ty := range thingType.AttributeTypes() {
		vals[name] = cty.NullVal(ty)
	}
	vals["id"] = cty.StringVal(req.ID)
	vals["name"] = cty.StringVal("imported")
	return sdk.ImportResponse{State: cty.ObjectVal(vals), Private: []byte("p")}
}

func nullThing() cty.Value { return cty.NullVal(thingType) }

func newThing(t *testing.T) (*thing, sdk.Provider) {
	r := &thing{started: make(chan struct{})}
	router := &sdk.Router{Name: "test", Resources: map[string]sdk.Resource{"test_thing": r, "test_other": &thing{}}}
	return r, sdktest.GRPC(t, router)
}

var node = sdk.Node{Name: `node.spark["spark-01"]`, Transport: "ssh", Host: "127.0.0.2", Port: 2222, User: "kilork",
	IdentityFile: "/id", KnownHosts: "/kh", Become: true, Timeout: 1500 * time.Millisecond,
	IdentityFiles: []string{"/a", "/b"}, IdentitiesOnly: true,
	ProxyJump: []sdk.Node{{Host: "outer", Port: 443, User: "j"}, {Host: "bastion", Port: 22, User: "k", IdentityFiles: []string{"/c"}}}}

// fullConfig is a config value with unknowns, nulls, nested blocks, a
// dynamic value and a sensitive (marked) attribute.
func fullConfig(t *testing.T) cty.Value {
	return sdktest.Object(t, thingSchema.Block, map[string]cty.Value{
		"name":   cty.StringVal("ds41"),
		"secret": cty.StringVal("s3cret").Mark("sensitive"),
		"dyn": cty.ObjectVal(map[string]cty.Value{
			"host": cty.StringVal("192.168.100.11"),
			"rank": cty.UnknownVal(cty.Number),
			"list": cty.TupleVal([]cty.Value{cty.NullVal(cty.String), cty.True}),
		}),
		"ports":  cty.SetVal([]cty.Value{cty.NumberIntVal(8000), cty.UnknownVal(cty.Number)}),
		"nested": cty.ObjectVal(map[string]cty.Value{"a": cty.ListVal([]cty.Value{cty.True}), "b": cty.UnknownVal(cty.Tuple([]cty.Type{cty.String, cty.Number}))}),
		"mount": cty.ListVal([]cty.Value{
			cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal("/hub"), "read_only": cty.True}),
			cty.ObjectVal(map[string]cty.Value{"source": cty.UnknownVal(cty.String), "read_only": cty.NullVal(cty.Bool)}),
		}),
		"rule": cty.SetVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(22)})}),
		"limits": cty.ObjectVal(map[string]cty.Value{
			"memory": cty.StringVal("9g"),
			"inner":  cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"x": cty.NullVal(cty.Number)})}),
		}),
	})
}

func unmarked(v cty.Value) cty.Value {
	u, _ := v.UnmarkDeep()
	return u
}

func TestGetSchemaRoundTrip(t *testing.T) {
	_, p := newThing(t)
	s, diags := p.GetSchema(context.Background())
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if len(s.ResourceTypes) != 2 {
		t.Fatalf("got %d types; want 2", len(s.ResourceTypes))
	}
	got := s.ResourceTypes["test_thing"]
	if got.Version != 3 || got.Description != "a test thing" || !reflect.DeepEqual(got.Identity, []string{"name"}) || !got.LocalPlan || !got.LocalApply || !got.ResumesCreate || got.IdentityFold["name"] != sdk.FoldDashUnderscore {
		t.Errorf("version %d description %q identity %v local plan %v local apply %v resumes create %v", got.Version, got.Description, got.Identity, got.LocalPlan, got.LocalApply, got.ResumesCreate)
	}
	compareBlock(t, "test_thing", thingSchema.Block, got.Block)
	if !got.Block.ImpliedType().Equals(thingType) {
		t.Errorf("implied type %#v; want %#v", got.Block.ImpliedType(), thingType)
	}
}

func compareBlock(t *testing.T, where string, want, got *sdk.Block) {
	t.Helper()
	if len(want.Attributes) != len(got.Attributes) || len(want.BlockTypes) != len(got.BlockTypes) {
		t.Errorf("%s: %d attrs/%d blocks; want %d/%d", where, len(got.Attributes), len(got.BlockTypes), len(want.Attributes), len(want.BlockTypes))
	}
	for name, wa := range want.Attributes {
		ga := got.Attributes[name]
		if ga == nil {
			t.Errorf("%s.%s missing", where, name)
			continue
		}
		if !ga.Type.Equals(wa.Type) {
			t.Errorf("%s.%s type %#v; want %#v", where, name, ga.Type, wa.Type)
		}
		gc, wc := *ga, *wa
		gc.Type, wc.Type = cty.NilType, cty.NilType
		if !reflect.DeepEqual(gc, wc) {
			t.Errorf("%s.%s = %+v; want %+v", where, name, gc, wc)
		}
	}
	for name, wb := range want.BlockTypes {
		gb := got.BlockTypes[name]
		if gb == nil {
			t.Errorf("%s block %s missing", where, name)
			continue
		}
		if gb.Nesting != wb.Nesting || gb.MinItems != wb.MinItems || gb.MaxItems != wb.MaxItems || gb.ForceNew != wb.ForceNew || gb.Description != wb.Description {
			t.Errorf("%s block %s = %+v; want %+v", where, name, gb, wb)
		}
		compareBlock(t, where+"."+name, &wb.Block, &gb.Block)
	}
}

func TestValidateDiagnosticPaths(t *testing.T) {
	r, p := newThing(t)
	cfg := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{
		"name": cty.StringVal(""),
		"tags": cty.MapVal(map[string]cty.Value{"bad": cty.StringVal("x"), "ok": cty.UnknownVal(cty.String)}),
		"mount": cty.ListVal([]cty.Value{
			cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal("/a"), "read_only": cty.NullVal(cty.Bool)}),
			cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal("rel"), "read_only": cty.NullVal(cty.Bool)}),
		}),
		"ports": cty.SetVal([]cty.Value{cty.NumberIntVal(0), cty.NumberFloatVal(0.5), cty.NumberIntVal(80)}),
	})
	diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: "test_thing", Config: cfg})
	if got := r.last().(cty.Value); !got.RawEquals(cfg) {
		t.Errorf("provider saw config %#v; want %#v", got, cfg)
	}
	want := map[string]sdk.Diagnostic{
		"Empty name":      {Severity: sdk.Error, Summary: "Empty name", Detail: "name must not be empty", Path: cty.GetAttrPath("name")},
		"Relative source": {Severity: sdk.Warning, Summary: "Relative source", Path: cty.GetAttrPath("mount").IndexInt(1).GetAttr("source")},
		"Bad tag":         {Severity: sdk.Error, Summary: "Bad tag", Detail: `tag "bad" is reserved`, Path: cty.GetAttrPath("tags").IndexString("bad")},
	}
	var ports []cty.Path
	for _, d := range diags {
		if d.Summary == "Bad port" {
			ports = append(ports, d.Path)
			continue
		}
		w, ok := want[d.Summary]
		if !ok {
			t.Errorf("unexpected diagnostic %+v", d)
			continue
		}
		delete(want, d.Summary)
		if d.Severity != w.Severity || d.Detail != w.Detail || !d.Path.Equals(w.Path) {
			t.Errorf("diagnostic %+v; want %+v", d, w)
		}
	}
	for s := range want {
		t.Errorf("diagnostic %q did not arrive", s)
	}
	// Set elements are addressed by value: an integer and a fraction.
	if len(ports) != 2 {
		t.Fatalf("got %d port diagnostics; want 2", len(ports))
	}
	for _, path := range ports {
		k := path[len(path)-1].(cty.IndexStep).Key
		if !k.Equals(cty.NumberIntVal(0)).True() && !k.Equals(cty.NumberFloatVal(0.5)).True() {
			t.Errorf("port path key %#v; want 0 or 0.5", k)
		}
	}
}

func TestPlanCarriesUnknownsNullsAndNestedBlocks(t *testing.T) {
	r, p := newThing(t)
	cfg := fullConfig(t)
	null := nullThing()
	old := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"id": cty.StringVal("old"), "name": cty.StringVal("ds41")})
	resp := p.PlanResourceChange(context.Background(), sdk.PlanRequest{
		TypeName: "test_thing", Address: `test_thing.x["a"]`, Node: node,
		Prior: null, Config: cfg, Proposed: sdk.ProposedNew(thingSchema.Block, null, cfg), PriorPrivate: []byte("pp"), Replaces: old, Offline: true,
	})
	if resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics.Err())
	}
	seen := r.last().(sdk.PlanRequest)
	if seen.Address != `test_thing.x["a"]` || !reflect.DeepEqual(seen.Node, node) || string(seen.PriorPrivate) != "pp" || !seen.Replaces.RawEquals(old) || !seen.Offline {
		t.Errorf("provider saw address %q node %+v private %q replaces %#v", seen.Address, seen.Node, seen.PriorPrivate, seen.Replaces)
	}
	if !seen.Prior.RawEquals(null) {
		t.Errorf("prior = %#v; want null", seen.Prior)
	}
	// Marks do not cross the wire; everything else arrives exactly.
	if !seen.Config.RawEquals(unmarked(cfg)) {
		t.Errorf("provider saw config\n%#v\nwant\n%#v", seen.Config, unmarked(cfg))
	}
	wantPlanned := unmarked(sdk.ProposedNew(thingSchema.Block, null, cfg))
	if !resp.Planned.RawEquals(wantPlanned) {
		t.Errorf("planned\n%#v\nwant\n%#v", resp.Planned, wantPlanned)
	}
	if resp.Planned.GetAttr("id").IsKnown() || resp.Planned.GetAttr("dyn").GetAttr("rank").IsKnown() {
		t.Error("unknowns became known")
	}
	if string(resp.PlannedPrivate) != "pp" {
		t.Errorf("planned private %q", resp.PlannedPrivate)
	}
}

func TestPlanRequiresReplacePaths(t *testing.T) {
	r, p := newThing(t)
	prior := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{
		"id": cty.StringVal("id-a"), "name": cty.StringVal("a"),
		"rule": cty.SetVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(22)})}),
	})
	cfg := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{
		"name": cty.StringVal("b"),
		"rule": cty.SetVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(23)})}),
	})
	custom := []cty.Path{cty.GetAttrPath("rule").Index(cty.ObjectVal(map[string]cty.Value{"port": cty.NumberIntVal(23)})).GetAttr("port")}
	r.plan = func(req sdk.PlanRequest) sdk.PlanResponse {
		resp := sdk.DefaultPlan(thingSchema, req)
		resp.RequiresReplace = append(resp.RequiresReplace, custom...)
		return resp
	}
	resp := sdktest.Plan(t, p, "test_thing", node, prior, nil, cfg)
	if seen := r.last().(sdk.PlanRequest).Replaces; !seen.RawEquals(nullThing()) {
		t.Errorf("Replaces unset arrived as %#v; want null", seen)
	}
	var got []string
	for _, path := range resp.RequiresReplace {
		got = append(got, fmt.Sprintf("%#v", path))
	}
	for _, want := range []cty.Path{cty.GetAttrPath("name"), cty.GetAttrPath("rule"), custom[0]} {
		found := false
		for _, path := range resp.RequiresReplace {
			found = found || path.Equals(want)
		}
		if !found {
			t.Errorf("replace paths %v lack %#v", got, want)
		}
	}
	if resp.Planned.GetAttr("id").IsKnown() {
		t.Error("computed id should be unknown in a replacing plan")
	}
}

func TestReadBatchInOrder(t *testing.T) {
	r, p := newThing(t)
	other := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal("o"), "id": cty.StringVal("o")})
	var items []sdk.ReadItem
	for i := range 5 {
		ty := "test_thing"
		if i%2 == 1 {
			ty = "test_other"
		}
		items = append(items, sdk.ReadItem{TypeName: ty, Address: fmt.Sprintf("%s.x[%d]", ty, i),
			Prior:   sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal(fmt.Sprint(i)), "id": cty.StringVal(fmt.Sprint(i)), "dyn": cty.NumberIntVal(int64(i))}),
			Private: []byte{byte(i)}})
	}
	// test_thing reports item 0 gone, item 2 changed with a diagnostic.
	r.read = func(its []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
		out := make([]sdk.ReadResult, len(its))
		for i, it := range its {
			out[i] = sdk.ReadResult{NewState: it.Prior, Private: append(it.Private, 'r')}
		}
		out[0].NewState = nullThing()
		out[1] = sdk.ReadResult{NewState: other, Diagnostics: sdk.Diagnostics{{Severity: sdk.Warning, Summary: "drift", Path: cty.GetAttrPath("name")}}}
		return out, 2, nil
	}
	resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: node, Resources: items})
	if resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics.Err())
	}
	if resp.RoundTrips != 3 { // 2 from test_thing, 1 from test_other
		t.Errorf("round trips %d; want 3", resp.RoundTrips)
	}
	if got := r.last().(sdk.Node); !reflect.DeepEqual(got, node) {
		t.Errorf("provider saw node %+v; want %+v", got, node)
	}
	want := []struct {
		state   cty.Value
		private string
		diag    string
	}{
		{nullThing(), "\x00r", ""},
		{items[1].Prior, "\x01", ""},
		{other, "", "drift"},
		{items[3].Prior, "\x03", ""},
		{items[4].Prior, "\x04r", ""},
	}
	for i, w := range want {
		got := resp.Results[i]
		if !got.NewState.RawEquals(w.state) || string(got.Private) != w.private {
			t.Errorf("result %d = %#v %q; want %#v %q", i, got.NewState, got.Private, w.state, w.private)
		}
		if (w.diag == "") != (len(got.Diagnostics) == 0) || (w.diag != "" && got.Diagnostics[0].Summary != w.diag) {
			t.Errorf("result %d diagnostics %v; want %q", i, got.Diagnostics, w.diag)
		}
	}
}

func TestApplyStreamsProgressThenResult(t *testing.T) {
	r, p := newThing(t)
	r.apply = func(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
		for i := int64(1); i <= 3; i++ {
			progress(sdk.Progress{Message: fmt.Sprintf("layer %d/3", i), Current: i, Total: 3, Unit: sdk.UnitBytes, Elapsed: time.Duration(i) * time.Second})
		}
		vals := req.Planned.AsValueMap()
		vals["id"] = cty.StringVal("new")
		return sdk.ApplyResponse{NewState: cty.ObjectVal(vals), Private: []byte("restore: modeset=0"),
			Diagnostics: sdk.Diagnostics{{Severity: sdk.Warning, Summary: "slow pull"}}}
	}
	cfg := fullConfig(t)
	planned := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{
		"name": cty.StringVal("n"), "secret": cty.StringVal("s").Mark("sensitive"), "dyn": cty.ListVal([]cty.Value{cty.StringVal("x")}),
		"id": cty.UnknownVal(cty.String),
	})
	var events []sdk.Progress
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{
		TypeName: "test_thing", Address: "test_thing.x", Node: node, Prior: nullThing(), Planned: planned, Config: cfg, Private: []byte("in"),
	}, func(ev sdk.Progress) { events = append(events, ev) })
	if resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics.Err())
	}
	if len(events) != 3 {
		t.Fatalf("got %d progress events; want 3: %+v", len(events), events)
	}
	for i, ev := range events {
		want := sdk.Progress{Message: fmt.Sprintf("layer %d/3", i+1), Current: int64(i + 1), Total: 3, Unit: sdk.UnitBytes, Elapsed: time.Duration(i+1) * time.Second}
		if ev != want {
			t.Errorf("event %d = %+v; want %+v", i, ev, want)
		}
	}
	seen := r.last().(sdk.ApplyRequest)
	if !seen.Planned.RawEquals(unmarked(planned)) || !seen.Config.RawEquals(unmarked(cfg)) || string(seen.Private) != "in" {
		t.Errorf("provider saw planned %#v config %#v private %q", seen.Planned, seen.Config, seen.Private)
	}
	if got := resp.NewState.GetAttr("id"); !got.RawEquals(cty.StringVal("new")) {
		t.Errorf("id = %#v", got)
	}
	if got := resp.NewState.GetAttr("dyn"); !got.RawEquals(cty.ListVal([]cty.Value{cty.StringVal("x")})) {
		t.Errorf("dyn = %#v", got)
	}
	if string(resp.Private) != "restore: modeset=0" || len(resp.Diagnostics) != 1 || resp.Diagnostics[0].Severity != sdk.Warning {
		t.Errorf("private %q diags %v", resp.Private, resp.Diagnostics)
	}
}

func TestApplyDeleteAndImport(t *testing.T) {
	_, p := newThing(t)
	state, priv := sdktest.Create(t, p, "test_thing", node, sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal("a")}))
	if string(priv) != "restore-info" || state.GetAttr("id").AsString() != "id-a" {
		t.Errorf("state %#v private %q", state, priv)
	}
	sdktest.Destroy(t, p, "test_thing", node, state, priv)

	imp := p.ImportResource(context.Background(), sdk.ImportRequest{TypeName: "test_thing", Node: node, ID: "abc"})
	if imp.Diagnostics.HasErrors() || imp.State.GetAttr("id").AsString() != "abc" || string(imp.Private) != "p" {
		t.Errorf("import: %#v %q %v", imp.State, imp.Private, imp.Diagnostics)
	}
	imp = p.ImportResource(context.Background(), sdk.ImportRequest{TypeName: "test_thing", Node: node, ID: "missing"})
	if !imp.Diagnostics.HasErrors() || !strings.Contains(imp.Diagnostics[0].Detail, `node.spark["spark-01"]`) {
		t.Errorf("import of a missing thing: %v", imp.Diagnostics)
	}
}

func TestUnknownResourceType(t *testing.T) {
	_, p := newThing(t)
	diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: "test_nope", Config: cty.EmptyObjectVal})
	if !diags.HasErrors() || !strings.Contains(diags[0].Detail, "test_nope") || !strings.Contains(diags[0].Detail, "test_thing") {
		t.Errorf("diags %v; want an error naming test_nope and listing test_thing", diags)
	}
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: "test_nope"}, nil)
	if !resp.Diagnostics.HasErrors() {
		t.Error("apply of an unknown type succeeded")
	}
}

// A provider that returns a value of the wrong shape gets a diagnostic,
// not a crash of the plugin.
func TestProviderReturnsWrongShape(t *testing.T) {
	r, p := newThing(t)
	r.plan = func(sdk.PlanRequest) sdk.PlanResponse {
		return sdk.PlanResponse{Planned: cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("x")})}
	}
	resp := p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: "test_thing", Address: "test_thing.bad",
		Prior: nullThing(), Config: nullThing(), Proposed: nullThing()})
	if !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics.Err().Error(), "test_thing.bad") {
		t.Fatalf("diags %v; want an invalid value error naming the instance", resp.Diagnostics)
	}
	// The plugin still serves.
	if d := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: "test_thing", Config: nullThing()}); d.HasErrors() {
		t.Errorf("validate after a bad plan: %v", d)
	}
}

func blockingApply(r *thing) {
	var once sync.Once
	r.apply = func(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
		progress(sdk.Progress{Message: "started"})
		once.Do(func() { close(r.started) })
		select {
		case <-ctx.Done():
			return sdk.ApplyResponse{NewState: req.Prior, Diagnostics: sdk.Diagnostics{sdk.FromError("Interrupted", context.Cause(ctx))}}
		case <-time.After(30 * time.Second):
			return sdk.ApplyResponse{NewState: req.Planned}
		}
	}
}

// Cancelling the engine's ctx cancels the provider's ctx in the plugin.
func TestApplyCancelReachesProvider(t *testing.T) {
	r, p := newThing(t)
	blockingApply(r)
	done := make(chan struct{})
	var providerSaw error
	inner := r.apply
	r.apply = func(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
		defer close(done)
		resp := inner(ctx, req, progress)
		providerSaw = ctx.Err()
		return resp
	}
	ctx, cancel := context.WithCancel(context.Background())
	planned := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal("a")})
	var resp sdk.ApplyResponse
	go func() {
		<-r.started
		cancel()
	}()
	resp = p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: "test_thing", Address: "test_thing.slow", Prior: nullThing(), Planned: planned}, nil)
	if !resp.Diagnostics.HasErrors() || resp.Diagnostics[0].Summary != "Cancelled" || !strings.Contains(resp.Diagnostics[0].Detail, "test_thing.slow") {
		t.Errorf("diags %v; want Cancelled naming the instance", resp.Diagnostics)
	}
	if !resp.NewState.IsNull() {
		t.Errorf("state after a cancelled create = %#v; want the prior (null)", resp.NewState)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the provider's apply did not see the cancellation")
	}
	if !errors.Is(providerSaw, context.Canceled) {
		t.Errorf("provider ctx err = %v; want context.Canceled", providerSaw)
	}
}

// Stop reaches the provider (Router cancels its in-flight calls) and the
// interrupted apply still returns its result over the stream.
func TestStopInterruptsApply(t *testing.T) {
	r, p := newThing(t)
	blockingApply(r)
	planned := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal("a")})
	// The Stop reply may arrive after the apply's: wait for it before the
	// test's cleanup closes the connection under it.
	stopped := make(chan error, 1)
	go func() {
		<-r.started
		stopped <- p.Stop(context.Background())
	}()
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: "test_thing", Address: "test_thing.slow", Prior: nullThing(), Planned: planned}, nil)
	if !resp.Diagnostics.HasErrors() || resp.Diagnostics[0].Summary != "Interrupted" {
		t.Errorf("diags %v; want the provider's Interrupted", resp.Diagnostics)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Stop: %v", err)
	}
}

type stopErr struct{ sdk.Router }

func (*stopErr) Stop(context.Context) error { return errors.New("cannot stop: module busy") }

func TestStopErrorArrives(t *testing.T) {
	p := sdktest.GRPC(t, &stopErr{})
	if err := p.Stop(context.Background()); err == nil || err.Error() != "cannot stop: module busy" {
		t.Errorf("Stop = %v", err)
	}
}

// A value built by an HCL function (a different code path for numbers and
// strings in cty) encodes the same way.
func TestFunctionResultsRoundTrip(t *testing.T) {
	r, p := newThing(t)
	j, err := stdlib.JSONDecode(cty.StringVal(`{"a":[1,2.5,"x"],"b":{"c":null}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal("j"), "dyn": j})
	if d := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: "test_thing", Config: cfg}); d.HasErrors() {
		t.Fatal(d.Err())
	}
	if got := r.last().(cty.Value).GetAttr("dyn"); !got.RawEquals(j) {
		t.Errorf("dyn = %#v; want %#v", got, j)
	}
}

func benchProvider(b *testing.B) sdk.Provider {
	r := &thing{}
	return sdktest.GRPC(b, &sdk.Router{Name: "test", Resources: map[string]sdk.Resource{"test_thing": r}})
}

// BenchmarkGRPCPlan is one PlanResourceChange through in-process gRPC.
func BenchmarkGRPCPlan(b *testing.B) {
	p := benchProvider(b)
	prior := cty.ObjectVal(map[string]cty.Value{})
	_ = prior
	cfg := sdktest.Object(b, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal("a"), "dyn": cty.StringVal("x")})
	req := sdk.PlanRequest{TypeName: "test_thing", Address: "test_thing.a", Node: node, Prior: nullThing(), Config: cfg,
		Proposed: sdk.ProposedNew(thingSchema.Block, nullThing(), cfg)}
	b.ReportAllocs()
	for b.Loop() {
		if resp := p.PlanResourceChange(context.Background(), req); resp.Diagnostics.HasErrors() {
			b.Fatal(resp.Diagnostics.Err())
		}
	}
}

// BenchmarkGRPCRead1000 is one batched ReadResources of 1,000 instances.
func BenchmarkGRPCRead1000(b *testing.B) {
	p := benchProvider(b)
	items := make([]sdk.ReadItem, 1000)
	for i := range items {
		items[i] = sdk.ReadItem{TypeName: "test_thing", Address: fmt.Sprintf("test_thing.a[%d]", i),
			Prior: sdktest.Object(b, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal(fmt.Sprint(i)), "id": cty.StringVal(fmt.Sprint(i))})}
	}
	req := sdk.ReadRequest{Node: node, Resources: items}
	b.ReportAllocs()
	for b.Loop() {
		if resp := p.ReadResources(context.Background(), req); resp.Diagnostics.HasErrors() {
			b.Fatal(resp.Diagnostics.Err())
		}
	}
}

// Other work adds fields to the protocol's Go types; a field the adapters
// do not carry would silently arrive as its zero value. This fails first.
func TestAdaptersCarryEveryField(t *testing.T) {
	carried := map[reflect.Type][]string{
		reflect.TypeFor[sdk.ValidateRequest](): {"TypeName", "Config"},
		reflect.TypeFor[sdk.ReadRequest]():     {"Node", "Resources"},
		// PriorStored travels as Prior's bytes (encodeStored).
		reflect.TypeFor[sdk.ReadItem]():     {"TypeName", "Address", "Prior", "PriorStored", "Private"},
		reflect.TypeFor[sdk.ReadResponse](): {"Results", "Diagnostics", "RoundTrips"},
		// Unchanged is the client's reading of the result's unchanged flag.
		reflect.TypeFor[sdk.ReadResult]():  {"NewState", "Private", "Diagnostics", "Unchanged"},
		reflect.TypeFor[sdk.PlanRequest](): {"TypeName", "Address", "Node", "Prior", "PriorStored", "Config", "Proposed", "PriorPrivate", "Replaces", "Offline"},
		// Unchanged is the client's reading of planned_unchanged.
		reflect.TypeFor[sdk.PlanResponse](): {"Planned", "RequiresReplace", "PlannedPrivate", "Diagnostics", "Unchanged"},
		reflect.TypeFor[sdk.ApplyRequest](): {"TypeName", "Address", "Node", "Prior", "Planned", "Config", "Private"},
		// OutcomeUnknown is the client's own finding (the call failed in
		// transport), never sent by a plugin.
		reflect.TypeFor[sdk.ApplyResponse]():  {"NewState", "Private", "Diagnostics", "OutcomeUnknown"},
		reflect.TypeFor[sdk.Progress]():       {"Message", "Current", "Total", "Unit", "Elapsed"},
		reflect.TypeFor[sdk.ImportRequest]():  {"TypeName", "Node", "ID"},
		reflect.TypeFor[sdk.ImportResponse](): {"State", "Private", "Diagnostics"},
		reflect.TypeFor[sdk.Node]():           {"Name", "Transport", "Host", "Port", "HostAlias", "User", "IdentityFile", "IdentityFiles", "IdentitiesOnly", "KnownHosts", "ProxyJump", "Become", "Timeout"},
		reflect.TypeFor[sdk.Diagnostic]():     {"Severity", "Summary", "Detail", "Path"},
		reflect.TypeFor[sdk.Schema]():         {"ResourceTypes"},
		reflect.TypeFor[sdk.ResourceSchema](): {"Version", "Description", "Block", "Identity", "IdentityFold", "LocalPlan", "LocalApply", "Logs", "ResumesCreate"},
		reflect.TypeFor[sdk.StatusRequest]():  {"Node", "Items"},
		reflect.TypeFor[sdk.StatusItem]():     {"TypeName", "Address", "State", "Observed", "ObservedKnown", "Private"},
		reflect.TypeFor[sdk.StatusResponse](): {"Results", "Diagnostics", "RoundTrips"},
		reflect.TypeFor[sdk.StatusResult]():   {"Health", "Summary", "Facts", "Diagnostics", "Unavailable"},
		reflect.TypeFor[sdk.Fact]():           {"Name", "Value"},
		reflect.TypeFor[sdk.LogsRequest]():    {"TypeName", "Address", "Node", "State", "Private", "Follow", "Tail", "Since"},
		reflect.TypeFor[sdk.LogLine]():        {"Stream", "Text", "Time"},
		reflect.TypeFor[sdk.Block]():          {"Attributes", "BlockTypes"},
		reflect.TypeFor[sdk.Attribute]():      {"Type", "Description", "Required", "Optional", "Computed", "ForceNew", "Sensitive", "SensitiveWith", "Volatile"},
		reflect.TypeFor[sdk.NestedBlock]():    {"Nesting", "Block", "MinItems", "MaxItems", "ForceNew", "Description"},
	}
	for rt, fields := range carried {
		var got []string
		for i := range rt.NumField() {
			if rt.Field(i).IsExported() {
				got = append(got, rt.Field(i).Name)
			}
		}
		if !slices.Equal(got, fields) {
			t.Errorf("sdk.%s has fields %v; the gRPC adapters carry %v. Add the new field to proto/provider.proto, "+
				"go generate ./providers/sdk/proto, map it in grpc_client.go and grpc_server.go, and update this list",
				rt.Name(), got, fields)
		}
	}
}

// A plan that leaves Proposed unset gets ProposedNew computed in the
// plugin from the same schema; a plan that returns the prior unchanged
// comes back as exactly the prior, and one that changes it as the change.
func TestPlanDefaultProposedAndUnchangedPrior(t *testing.T) {
	r, p := newThing(t)
	cfg := fullConfig(t)
	prior := unmarked(sdk.ProposedNew(thingSchema.Block, nullThing(), cfg))
	prior = cty.ObjectVal(func() map[string]cty.Value {
		m := prior.AsValueMap()
		m["id"] = cty.StringVal("i-1")
		m["tags"] = cty.MapValEmpty(cty.String)
		m["dyn"] = cty.StringVal("known")
		return m
	}())
	cfg = unmarked(cfg)
	r.plan = func(req sdk.PlanRequest) sdk.PlanResponse { return sdk.PlanResponse{Planned: req.Prior} }
	resp := p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: "test_thing", Address: "test_thing.u", Node: node, Prior: prior, Config: cfg})
	if resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics.Err())
	}
	if !resp.Planned.RawEquals(prior) {
		t.Errorf("unchanged plan came back as\n%#v\nwant the prior\n%#v", resp.Planned, prior)
	}
	if seen := r.last().(sdk.PlanRequest); !seen.Proposed.RawEquals(sdk.ProposedNew(thingSchema.Block, prior, cfg)) {
		t.Errorf("provider saw proposed\n%#v\nwant ProposedNew\n%#v", seen.Proposed, sdk.ProposedNew(thingSchema.Block, prior, cfg))
	}
	changed := cty.ObjectVal(func() map[string]cty.Value { m := prior.AsValueMap(); m["id"] = cty.StringVal("i-2"); return m }())
	r.plan = func(sdk.PlanRequest) sdk.PlanResponse { return sdk.PlanResponse{Planned: changed} }
	resp = p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: "test_thing", Address: "test_thing.u", Node: node, Prior: prior, Config: cfg})
	if !resp.Planned.RawEquals(changed) {
		t.Errorf("changed plan came back as %#v", resp.Planned)
	}
}

// PlanAndApply over the wire: the plugin plans with the request's values
// (prior, config, prior private, the replaced object), applies that plan
// (with its planned private data) and reports the start once: with the
// result for a quick, quiet apply (backdated by how long it ran), on its
// own for one that runs longer than a moment. A plan that differs from
// the reviewed one is refused with the path, and Apply is never called.
func TestPlanAndApplyOverTheWire(t *testing.T) {
	r, p := newThing(t)
	var sleep time.Duration
	r.plan = func(req sdk.PlanRequest) sdk.PlanResponse {
		resp := sdk.DefaultPlan(thingSchema, req)
		resp.PlannedPrivate = append([]byte("planned:"), req.PriorPrivate...)
		return resp
	}
	r.apply = func(_ context.Context, req sdk.ApplyRequest, _ func(sdk.Progress)) sdk.ApplyResponse {
		time.Sleep(sleep)
		vals := req.Planned.AsValueMap()
		vals["id"] = cty.StringVal("new")
		return sdk.ApplyResponse{NewState: cty.ObjectVal(vals), Private: req.Private}
	}
	cfg := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal("n")})
	reviewed := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal("n"), "id": cty.UnknownVal(cty.String), "tags": cty.UnknownVal(cty.Map(cty.String))})
	old := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal("old"), "id": cty.StringVal("o")})
	var told time.Time // when started was called
	call := func(reviewed cty.Value) (sdk.PlanApplyResponse, []time.Time, time.Time) {
		var starts []time.Time
		resp := sdk.PlanAndApply(context.Background(), p, sdk.PlanApplyRequest{TypeName: "test_thing", Address: "test_thing.x", Node: node,
			Prior: nullThing(), PriorPrivate: []byte("p"), Config: cfg, Replaces: old, Reviewed: reviewed},
			func(at time.Time) { starts, told = append(starts, at), time.Now() }, nil)
		return resp, starts, time.Now()
	}
	for _, sleep = range []time.Duration{0, 300 * time.Millisecond} {
		began := time.Now()
		resp, starts, end := call(reviewed)
		if !resp.Applied || resp.Diagnostics.HasErrors() || resp.NewState.GetAttr("id").AsString() != "new" || string(resp.Private) != "planned:p" {
			t.Fatalf("sleep %v: applied %v, state %#v, private %q, diags %v", sleep, resp.Applied, resp.NewState, resp.Private, resp.Diagnostics)
		}
		if len(starts) != 1 || starts[0].Before(began) || starts[0].After(end) {
			t.Errorf("sleep %v: starts %v (call %v..%v); want one, within the call", sleep, starts, began, end)
		}
		// A long apply's start is told while it runs, dated when it began:
		// at least the 50 ms the plugin waits before telling it.
		if sleep > 0 && (end.Sub(told) < sleep/3 || told.Sub(starts[0]) < 50*time.Millisecond) {
			t.Errorf("sleep %v: the start (%v) was told at %v, %v before the end; want it told while the apply runs, dated when it began",
				sleep, starts[0], told, end.Sub(told))
		}
		var plan sdk.PlanRequest
		for _, v := range r.seen {
			if pr, ok := v.(sdk.PlanRequest); ok {
				plan = pr
			}
		}
		if !plan.Replaces.RawEquals(old) || string(plan.PriorPrivate) != "p" || !plan.Prior.IsNull() {
			t.Errorf("the plugin planned from replaces %#v, prior private %q, prior %#v", plan.Replaces, plan.PriorPrivate, plan.Prior)
		}
	}
	r.seen = nil
	changed := sdktest.Object(t, thingSchema.Block, map[string]cty.Value{"name": cty.StringVal("reviewed"), "id": cty.UnknownVal(cty.String)})
	resp, starts, _ := call(changed)
	if resp.Applied || !resp.PlanChanged || sdk.DescribePath(resp.Changed) != "name" || len(starts) != 0 {
		t.Errorf("changed plan: applied %v, changed %v at %q, starts %v", resp.Applied, resp.PlanChanged, sdk.DescribePath(resp.Changed), starts)
	}
	for _, v := range r.seen {
		if _, ok := v.(sdk.ApplyRequest); ok {
			t.Errorf("Apply was called for a changed plan")
		}
	}
}

// createdThing is test_thing as a create from fullConfig leaves it (id
// i-1, no tags), unmarked, with set's changes.
func createdThing(t *testing.T, set func(m map[string]cty.Value)) cty.Value {
	m := unmarked(sdk.ProposedNew(thingSchema.Block, nullThing(), fullConfig(t))).AsValueMap()
	m["id"] = cty.StringVal("i-1")
	m["tags"] = cty.MapValEmpty(cty.String)
	set(m)
	return cty.ObjectVal(m)
}

// An "unchanged" answer (a read that found the prior, a plan that keeps
// it) stands for the value the plugin saw: the prior without its marks,
// which do not cross the wire, as a value sent back would have been. A
// plan that differs from the prior only in an unknown's refinement is a
// change and comes back as planned.
func TestUnchangedAnswersStandForTheValueSent(t *testing.T) {
	r, p := newThing(t)
	ctx := context.Background()
	prior := createdThing(t, func(m map[string]cty.Value) {
		m["dyn"] = cty.StringVal("known")
		m["secret"] = cty.StringVal("s3cret").Mark("sensitive")
	})
	want := unmarked(prior)

	rr := p.ReadResources(ctx, sdk.ReadRequest{Node: node, Resources: []sdk.ReadItem{{TypeName: "test_thing", Address: "test_thing.u", Prior: prior}}})
	if rr.Diagnostics.HasErrors() || len(rr.Results) != 1 {
		t.Fatalf("read: %v", rr.Diagnostics.Err())
	}
	if got := rr.Results[0].NewState; !got.RawEquals(want) {
		t.Errorf("unchanged read came back as\n%#v\nwant the prior as sent (unmarked)\n%#v", got, want)
	}

	r.plan = func(req sdk.PlanRequest) sdk.PlanResponse { return sdk.PlanResponse{Planned: req.Prior} }
	resp := p.PlanResourceChange(ctx, sdk.PlanRequest{TypeName: "test_thing", Address: "test_thing.u", Node: node, Prior: prior, Config: unmarked(fullConfig(t))})
	if resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics.Err())
	}
	if !resp.Planned.RawEquals(want) {
		t.Errorf("unchanged plan came back as\n%#v\nwant the prior as sent (unmarked)\n%#v", resp.Planned, want)
	}

	// A prior with an unknown id; the plan refines it (not null): that is
	// not the prior, and must not be answered as if it were.
	withUnknown := cty.ObjectVal(func() map[string]cty.Value { m := want.AsValueMap(); m["id"] = cty.UnknownVal(cty.String); return m }())
	refined := cty.ObjectVal(func() map[string]cty.Value {
		m := want.AsValueMap()
		m["id"] = cty.UnknownVal(cty.String).RefineNotNull()
		return m
	}())
	r.plan = func(sdk.PlanRequest) sdk.PlanResponse { return sdk.PlanResponse{Planned: refined} }
	resp = p.PlanResourceChange(ctx, sdk.PlanRequest{TypeName: "test_thing", Address: "test_thing.u", Node: node, Prior: withUnknown, Config: unmarked(fullConfig(t))})
	if resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics.Err())
	}
	if !resp.Planned.RawEquals(refined) {
		t.Errorf("refined plan came back as\n%#v\nwant\n%#v", resp.Planned, refined)
	}
	// The same unknown kept as it is: unchanged, and exactly the prior.
	r.plan = func(req sdk.PlanRequest) sdk.PlanResponse { return sdk.PlanResponse{Planned: req.Prior} }
	resp = p.PlanResourceChange(ctx, sdk.PlanRequest{TypeName: "test_thing", Address: "test_thing.u", Node: node, Prior: withUnknown, Config: unmarked(fullConfig(t))})
	if !resp.Planned.RawEquals(withUnknown) {
		t.Errorf("plan keeping an unknown came back as\n%#v\nwant\n%#v", resp.Planned, withUnknown)
	}
}

// A prior sent with its stored form (sdk.Stored, as state keeps it)
// reaches the provider as that value, in reads and plans; a read that
// finds it unchanged says so (Unchanged) and one that finds another value
// does not.
func TestStoredPriorsOverTheWire(t *testing.T) {
	r, p := newThing(t)
	ctx := context.Background()
	prior := createdThing(t, func(m map[string]cty.Value) {
		m["dyn"] = cty.ObjectVal(map[string]cty.Value{"host": cty.StringVal("h"), "n": cty.NumberIntVal(2)})
		m["ports"] = cty.SetVal([]cty.Value{cty.NumberIntVal(8000)})
		m["nested"] = cty.NullVal(m["nested"].Type())
		m["mount"] = cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal("/hub"), "read_only": cty.True})})
	})
	st := sdk.StoredOf(t, prior)
	edited := cty.ObjectVal(func() map[string]cty.Value { m := prior.AsValueMap(); m["id"] = cty.StringVal("i-2"); return m }())
	var got []cty.Value
	r.read = func(items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
		out := make([]sdk.ReadResult, len(items))
		for i, it := range items {
			got = append(got, it.Prior)
			out[i] = sdk.ReadResult{NewState: it.Prior, Private: it.Private}
			if it.Address == "test_thing.b" {
				out[i].NewState = edited
			}
		}
		return out, 1, nil
	}
	rr := p.ReadResources(ctx, sdk.ReadRequest{Node: node, Resources: []sdk.ReadItem{
		{TypeName: "test_thing", Address: "test_thing.a", Prior: prior, PriorStored: st, Private: []byte("p")},
		{TypeName: "test_thing", Address: "test_thing.b", Prior: prior, PriorStored: st},
	}})
	if rr.Diagnostics.HasErrors() || len(rr.Results) != 2 {
		t.Fatalf("read: %v", rr.Diagnostics.Err())
	}
	for i, g := range got {
		if !g.RawEquals(prior) {
			t.Errorf("provider read prior %d as\n%#v\nwant\n%#v", i, g, prior)
		}
	}
	if a := rr.Results[0]; !a.Unchanged || !a.NewState.RawEquals(prior) || string(a.Private) != "p" {
		t.Errorf("unchanged read: %+v; want Unchanged and the prior", a)
	}
	if b := rr.Results[1]; b.Unchanged || !b.NewState.RawEquals(edited) {
		t.Errorf("changed read: %+v; want the new value, not Unchanged", b)
	}

	r.plan = func(req sdk.PlanRequest) sdk.PlanResponse {
		if !req.Prior.RawEquals(prior) {
			t.Errorf("provider planned from\n%#v\nwant\n%#v", req.Prior, prior)
		}
		return sdk.PlanResponse{Planned: req.Prior}
	}
	resp := p.PlanResourceChange(ctx, sdk.PlanRequest{TypeName: "test_thing", Address: "test_thing.a", Node: node,
		Prior: prior, PriorStored: st, Config: unmarked(fullConfig(t))})
	if resp.Diagnostics.HasErrors() || !resp.Planned.RawEquals(prior) || !resp.Unchanged {
		t.Errorf("plan: %v, unchanged %v, planned\n%#v\nwant the prior, unchanged", resp.Diagnostics.Err(), resp.Unchanged, resp.Planned)
	}
	r.plan = func(req sdk.PlanRequest) sdk.PlanResponse { return sdk.PlanResponse{Planned: edited} }
	resp = p.PlanResourceChange(ctx, sdk.PlanRequest{TypeName: "test_thing", Address: "test_thing.a", Node: node,
		Prior: prior, PriorStored: st, Config: unmarked(fullConfig(t))})
	if resp.Diagnostics.HasErrors() || !resp.Planned.RawEquals(edited) || resp.Unchanged {
		t.Errorf("plan: %v, unchanged %v, planned\n%#v\nwant the new value, not unchanged", resp.Diagnostics.Err(), resp.Unchanged, resp.Planned)
	}
}
