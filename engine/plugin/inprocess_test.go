package plugin

import (
	"context"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// An in-process provider is served without a plugin: nothing starts (not
// even with no SelfExe to start), it wins over a built-in of the same
// name, it makes no RPCs, and a create/read cycle works as through the
// plugin.
func TestInProcessStartsNoPlugin(t *testing.T) {
	starts := startLog(t)
	h := NewHost(Options{Builtins: []string{"sparkform"}, InProcess: map[string]func() sdk.Provider{"sparkform": builtin.New}})
	t.Cleanup(h.Close)
	ctx := context.Background()
	s, err := h.Schema(ctx, "sparkform")
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.Provider(ctx, "sparkform")
	if err != nil {
		t.Fatal(err)
	}
	if p2, _ := h.Provider(ctx, "sparkform"); p2 != p {
		t.Error("a second Provider call made a second provider")
	}
	rs := s.ResourceTypes["sparkform_data"]
	cfg := sdktest.Object(t, rs.Block, map[string]cty.Value{"input": cty.StringVal("x")})
	state, _ := sdktest.Create(t, p, "sparkform_data", local, cfg)
	if got := state.GetAttr("output"); !got.RawEquals(cty.StringVal("x")) {
		t.Errorf("output = %#v", got)
	}
	// What comes back as it was sent says so, as through a plugin.
	read := p.ReadResources(ctx, sdk.ReadRequest{Node: local, Resources: []sdk.ReadItem{{TypeName: "sparkform_data", Prior: state}}})
	if len(read.Results) != 1 || !read.Results[0].Unchanged {
		t.Errorf("read of an unchanged object: %+v; want Unchanged", read.Results)
	}
	plan := p.PlanResourceChange(ctx, sdk.PlanRequest{TypeName: "sparkform_data", Node: local, Prior: state, Config: cfg})
	if !plan.Unchanged || !plan.Planned.RawEquals(state) {
		t.Errorf("no-op plan: unchanged %v, planned %#v; want the prior, Unchanged", plan.Unchanged, plan.Planned)
	}
	changed := sdktest.Object(t, rs.Block, map[string]cty.Value{"input": cty.StringVal("y")})
	if plan := p.PlanResourceChange(ctx, sdk.PlanRequest{TypeName: "sparkform_data", Node: local, Prior: state, Config: changed}); plan.Unchanged {
		t.Error("a plan that changes input says Unchanged")
	}
	if got := starts(); len(got) != 0 {
		t.Errorf("plugins started: %v", got)
	}
	if got := h.Stats(); len(got) != 0 {
		t.Errorf("Stats = %v; an in-process provider makes no RPCs", got)
	}
	h.Stop(ctx) // reaches the in-process provider; must not fail
	h.Close()
	if _, err := h.Provider(ctx, "sparkform"); err == nil {
		t.Error("Provider after Close succeeded")
	}
}

// panicky is a provider whose every call panics.
type panicky struct{}

func (panicky) GetSchema(context.Context) (*sdk.Schema, sdk.Diagnostics) {
	return &sdk.Schema{ResourceTypes: map[string]*sdk.ResourceSchema{"panicky_thing": {Block: &sdk.Block{
		Attributes: map[string]*sdk.Attribute{"v": {Type: cty.String, Optional: true}}}}}}, nil
}
func (panicky) ValidateResourceConfig(context.Context, sdk.ValidateRequest) sdk.Diagnostics {
	panic("validate")
}
func (panicky) ReadResources(context.Context, sdk.ReadRequest) sdk.ReadResponse { panic("read") }
func (panicky) PlanResourceChange(context.Context, sdk.PlanRequest) sdk.PlanResponse {
	panic("plan")
}
func (panicky) ApplyResourceChange(context.Context, sdk.ApplyRequest, func(sdk.Progress)) sdk.ApplyResponse {
	panic("apply")
}
func (panicky) ImportResource(context.Context, sdk.ImportRequest) sdk.ImportResponse {
	panic("import")
}
func (panicky) Stop(context.Context) error { panic("stop") }

// A panic in an in-process provider is its call's error, naming the
// provider and the method; sparkform carries on. An apply that panicked
// returns the prior value and is not an unknown outcome: the provider
// reaches no node, so nothing outside state changed.
func TestInProcessPanicIsDiagnostic(t *testing.T) {
	h := NewHost(Options{InProcess: map[string]func() sdk.Provider{"panicky": func() sdk.Provider { return panicky{} }}})
	t.Cleanup(h.Close)
	ctx := context.Background()
	p, err := h.Provider(ctx, "panicky")
	if err != nil {
		t.Fatal(err)
	}
	ty := cty.Object(map[string]cty.Type{"v": cty.String})
	prior := cty.ObjectVal(map[string]cty.Value{"v": cty.StringVal("before")})
	planned := cty.ObjectVal(map[string]cty.Value{"v": cty.StringVal("after")})
	apply := p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: "panicky_thing", Node: local, Prior: prior, Planned: planned, Private: []byte("p")}, nil)
	created := p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: "panicky_thing", Node: local, Prior: cty.NilVal, Planned: planned}, nil)
	for _, c := range []struct {
		method string
		diags  sdk.Diagnostics
	}{
		{"ValidateResourceConfig", p.ValidateResourceConfig(ctx, sdk.ValidateRequest{TypeName: "panicky_thing", Config: cty.NullVal(ty)})},
		{"ReadResources", p.ReadResources(ctx, sdk.ReadRequest{Node: local}).Diagnostics},
		{"PlanResourceChange", p.PlanResourceChange(ctx, sdk.PlanRequest{TypeName: "panicky_thing"}).Diagnostics},
		{"ApplyResourceChange", apply.Diagnostics},
		{"ImportResource", p.ImportResource(ctx, sdk.ImportRequest{TypeName: "panicky_thing"}).Diagnostics},
	} {
		if !c.diags.HasErrors() || !strings.Contains(c.diags[0].Summary, "panicky panicked") || !strings.Contains(c.diags[0].Detail, c.method) {
			t.Errorf("%s: diagnostics %v; want an error naming the provider and the method", c.method, c.diags)
		}
	}
	if apply.OutcomeUnknown || !apply.NewState.RawEquals(prior) || string(apply.Private) != "p" {
		t.Errorf("apply that panicked returned %#v (private %q, outcome unknown %v); want the prior value, known", apply.NewState, apply.Private, apply.OutcomeUnknown)
	}
	if created.OutcomeUnknown || !created.NewState.IsNull() || !created.NewState.Type().Equals(ty) {
		t.Errorf("create that panicked returned %#v; want a null of the type", created.NewState)
	}
	if err := p.Stop(ctx); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("Stop: %v", err)
	}
}

// markSeer is sparkform_data, counting the requests that reach it with a
// marked value.
type markSeer struct {
	sdk.Provider
	marked int
}

func (m *markSeer) see(vs ...cty.Value) {
	for _, v := range vs {
		if v != cty.NilVal && v.ContainsMarked() {
			m.marked++
		}
	}
}

func (m *markSeer) ValidateResourceConfig(ctx context.Context, req sdk.ValidateRequest) sdk.Diagnostics {
	m.see(req.Config)
	return m.Provider.ValidateResourceConfig(ctx, req)
}

func (m *markSeer) ReadResources(ctx context.Context, req sdk.ReadRequest) sdk.ReadResponse {
	for _, it := range req.Resources {
		m.see(it.Prior)
	}
	return m.Provider.ReadResources(ctx, req)
}

func (m *markSeer) PlanResourceChange(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	m.see(req.Prior, req.Config, req.Proposed, req.Replaces)
	return m.Provider.PlanResourceChange(ctx, req)
}

func (m *markSeer) ApplyResourceChange(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	m.see(req.Prior, req.Planned, req.Config)
	return m.Provider.ApplyResourceChange(ctx, req, progress)
}

// Values reach an in-process provider without marks, as they reach a
// plugin (the wire cannot carry them): sensitive() input planned,
// applied and read back comes out unmarked, and the caller's values keep
// theirs.
func TestInProcessStripsMarks(t *testing.T) {
	seer := &markSeer{Provider: builtin.New()}
	h := NewHost(Options{InProcess: map[string]func() sdk.Provider{"sparkform": func() sdk.Provider { return seer }}})
	t.Cleanup(h.Close)
	ctx := context.Background()
	p, err := h.Provider(ctx, "sparkform")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := p.GetSchema(ctx)
	block := s.ResourceTypes["sparkform_data"].Block
	secret := cty.ObjectVal(map[string]cty.Value{"k": cty.StringVal("s3cret").Mark("sensitive")})
	cfg := sdktest.Object(t, block, map[string]cty.Value{"input": secret})
	if d := p.ValidateResourceConfig(ctx, sdk.ValidateRequest{TypeName: "sparkform_data", Config: cfg}); d.HasErrors() {
		t.Fatal(d)
	}
	plan := p.PlanResourceChange(ctx, sdk.PlanRequest{TypeName: "sparkform_data", Node: local, Prior: cty.NullVal(block.ImpliedType()), Config: cfg})
	if plan.Diagnostics.HasErrors() {
		t.Fatal(plan.Diagnostics)
	}
	applied := p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: "sparkform_data", Node: local, Prior: cty.NullVal(block.ImpliedType()),
		Planned: plan.Planned, Config: cfg}, nil)
	if applied.Diagnostics.HasErrors() {
		t.Fatal(applied.Diagnostics)
	}
	marked := applied.NewState.Mark("sensitive")
	items := []sdk.ReadItem{{TypeName: "sparkform_data", Prior: marked}}
	read := p.ReadResources(ctx, sdk.ReadRequest{Node: local, Resources: items})
	if seer.marked != 0 {
		t.Errorf("%d requests reached the provider with marks", seer.marked)
	}
	for name, v := range map[string]cty.Value{"planned": plan.Planned, "applied": applied.NewState, "read": read.Results[0].NewState} {
		if v.ContainsMarked() {
			t.Errorf("%s value %#v holds marks", name, v)
		}
	}
	if got := applied.NewState.GetAttr("output").GetAttr("k"); !got.RawEquals(cty.StringVal("s3cret")) {
		t.Errorf("output.k = %#v", got)
	}
	if !items[0].Prior.IsMarked() {
		t.Error("the caller's read item lost its marks")
	}
}
