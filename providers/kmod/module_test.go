package kmod_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/kernelsim"
	"github.com/sparkform/sparkform/providers/kmod"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

const modType = "kmod_module"

// simProvider is the kmod provider, over real gRPC, pointed at a fresh
// simulated kernel.
func simProvider(t *testing.T) (sdk.Provider, *kernelsim.Sim) {
	t.Helper()
	s := kernelsim.New(t, kernelsim.SeedCatalog)
	p := kmod.NewWithConfig(kmod.Config{
		SysfsRoot: s.SysfsRoot(), Modprobe: s.Tool("modprobe"), Rmmod: s.Tool("rmmod"),
		CgroupRoot: filepath.Join(s.Root, "no-cgroup"), RestoreDir: restoreDir(s),
	})
	return sdktest.GRPC(t, p), s
}

// restoreDir is where simProvider keeps its restore records.
func restoreDir(s *kernelsim.Sim) string { return filepath.Join(s.Root, "sparkform-state") }

func modCfg(t *testing.T, p sdk.Provider, name string, params map[string]string, state string) cty.Value {
	t.Helper()
	attrs := map[string]cty.Value{"name": cty.StringVal(name)}
	if params != nil {
		m := map[string]cty.Value{}
		for k, v := range params {
			m[k] = cty.StringVal(v)
		}
		attrs["params"] = cty.MapVal(m)
	}
	if state != "" {
		attrs["state"] = cty.StringVal(state)
	}
	return sdktest.Object(t, sdktest.Schema(t, p, modType).Block, attrs)
}

// step plans config against prior and applies it, returning the response
// without failing on errors (callers check).
func step(t *testing.T, p sdk.Provider, n sdk.Node, prior cty.Value, private []byte, cfg cty.Value) (sdk.PlanResponse, sdk.ApplyResponse) {
	t.Helper()
	plan := sdktest.Plan(t, p, modType, n, prior, private, cfg)
	if prior == cty.NilVal {
		prior = cty.NullVal(plan.Planned.Type())
	}
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: modType, Address: "kmod_module.x",
		Node: n, Prior: prior, Planned: plan.Planned, Config: cfg, Private: plan.PlannedPrivate}, nil)
	return plan, resp
}

func destroy(t *testing.T, p sdk.Provider, n sdk.Node, st cty.Value, private []byte) sdk.ApplyResponse {
	return p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: modType, Address: "kmod_module.x",
		Node: n, Prior: st, Planned: cty.NullVal(st.Type()), Config: cty.NullVal(st.Type()), Private: private}, nil)
}

func read(t *testing.T, p sdk.Provider, n sdk.Node, st cty.Value, private []byte) cty.Value {
	t.Helper()
	return sdktest.Read(t, p, modType, n, st, private).NewState
}

func noChange(t *testing.T, p sdk.Provider, n sdk.Node, st cty.Value, private []byte, cfg cty.Value) {
	t.Helper()
	plan := sdktest.Plan(t, p, modType, n, st, private, cfg)
	if !plan.Planned.RawEquals(st) {
		t.Fatalf("plan shows a change, want none:\nstate:   %#v\nplanned: %#v", st, plan.Planned)
	}
}

func hasChange(t *testing.T, p sdk.Provider, n sdk.Node, st cty.Value, private []byte, cfg cty.Value) {
	t.Helper()
	plan := sdktest.Plan(t, p, modType, n, st, private, cfg)
	if plan.Planned.RawEquals(st) {
		t.Fatalf("plan shows no change, want one (state %#v)", st)
	}
}

func attrStr(v cty.Value, path ...string) string {
	for _, p := range path {
		if v.Type().IsObjectType() {
			v = v.GetAttr(p)
		} else {
			v = v.Index(cty.StringVal(p))
		}
	}
	if v.IsNull() {
		return "<null>"
	}
	if v.Type() == cty.Bool {
		if v.True() {
			return "true"
		}
		return "false"
	}
	return v.AsString()
}

func wantModule(t *testing.T, s *kernelsim.Sim, name string, loaded bool, params map[string]string) {
	t.Helper()
	if got := s.Loaded(name); got != loaded {
		t.Fatalf("%s loaded = %v, want %v", name, got, loaded)
	}
	for k, v := range params {
		if got := s.Param(name, k); got != v {
			t.Fatalf("%s %s = %q, want %q", name, k, got, v)
		}
	}
}

func noModprobeD(t *testing.T, s *kernelsim.Sim) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(s.Root, "etc", "modprobe.d"))
	for _, e := range ents {
		if e.Name() != "admin.conf" {
			t.Fatalf("the provider wrote %s into modprobe.d; it must never persist anything", e.Name())
		}
	}
}

// TestSeedUnlockDisplayRAM is the seed's unlock/restore pair: nvidia_drm
// reloaded with modeset=1 fbdev=0, idempotent, reset by a reboot, restored
// to the plain module on destroy.
func TestSeedUnlockDisplayRAM(t *testing.T) {
	for _, tn := range nodes() {
		t.Run(tn.name, func(t *testing.T) {
			n := tn.get(t)
			p, s := simProvider(t)
			cfg := modCfg(t, p, "nvidia-drm", map[string]string{"modeset": "1", "fbdev": "0"}, "")
			st, priv := sdktest.Create(t, p, modType, n, cfg)
			wantModule(t, s, "nvidia_drm", true, map[string]string{"modeset": "Y", "fbdev": "N"})
			wantModule(t, s, "drm", true, nil) // rmmod, not modprobe -r: drm stayed
			if s.Refcnt("drm") != 1 {
				t.Errorf("drm refcnt = %d, want 1 (held by nvidia_drm again)", s.Refcnt("drm"))
			}
			noModprobeD(t, s)
			if got := attrStr(st, "prior", "params", "modeset") + attrStr(st, "prior", "loaded"); got != "Ntrue" {
				t.Errorf("prior = %#v, want loaded with modeset N", st.GetAttr("prior"))
			}
			if attrStr(st, "observed_params", "modeset") != "Y" {
				t.Errorf("observed_params = %#v", st.GetAttr("observed_params"))
			}
			// Second plan: no change ("1" means Y).
			noChange(t, p, n, read(t, p, n, st, priv), priv, cfg)

			// A reboot resets the module: drift, and apply converges again.
			if err := s.Reboot(); err != nil {
				t.Fatal(err)
			}
			drifted := read(t, p, n, st, priv)
			if attrStr(drifted, "params", "modeset") != "N" {
				t.Fatalf("after reboot params = %#v, want modeset N observed", drifted.GetAttr("params"))
			}
			hasChange(t, p, n, drifted, priv, cfg)
			_, resp := step(t, p, n, drifted, priv, cfg)
			if resp.Diagnostics.HasErrors() {
				t.Fatal(resp.Diagnostics.Err())
			}
			wantModule(t, s, "nvidia_drm", true, map[string]string{"modeset": "Y"})
			if attrStr(resp.NewState, "prior", "params", "modeset") != "N" {
				t.Errorf("prior changed by the second apply: %#v", resp.NewState.GetAttr("prior"))
			}
			// Destroy: the plain module is back, exactly as before.
			sdktest.Destroy(t, p, modType, n, resp.NewState, resp.Private)
			wantModule(t, s, "nvidia_drm", true, map[string]string{"modeset": "N", "fbdev": "N"})
			wantModule(t, s, "drm", true, nil)
			noModprobeD(t, s)
		})
	}
}

func TestModuleLifecycles(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node)
	}{
		{"was not loaded: destroy unloads", func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node) {
			st, priv := sdktest.Create(t, p, modType, n, modCfg(t, p, "brd", map[string]string{"rd_nr": "2", "rd_size": "0x2000"}, ""))
			wantModule(t, s, "brd", true, map[string]string{"rd_nr": "2", "rd_size": "8192"})
			if attrStr(st, "prior", "loaded") != "false" {
				t.Fatalf("prior = %#v", st.GetAttr("prior"))
			}
			sdktest.Destroy(t, p, modType, n, st, priv)
			wantModule(t, s, "brd", false, nil)
		}},
		{"drift after a manual reload", func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node) {
			cfg := modCfg(t, p, "brd", map[string]string{"rd_nr": "2"}, "")
			st, priv := sdktest.Create(t, p, modType, n, cfg)
			s.Main("rmmod", []string{"brd"}, os.Stdout, os.Stderr)
			s.Main("modprobe", []string{"brd", "rd_nr=4"}, os.Stdout, os.Stderr)
			d := read(t, p, n, st, priv)
			if attrStr(d, "params", "rd_nr") != "4" {
				t.Fatalf("drift not seen: %#v", d)
			}
			hasChange(t, p, n, d, priv, cfg)
			s.Main("rmmod", []string{"brd"}, os.Stdout, os.Stderr)
			d = read(t, p, n, st, priv)
			if attrStr(d, "state") != "unloaded" || attrStr(d, "loaded") != "false" {
				t.Fatalf("unload not seen: %#v", d)
			}
			hasChange(t, p, n, d, priv, cfg)
			_, resp := step(t, p, n, d, priv, cfg)
			if resp.Diagnostics.HasErrors() {
				t.Fatal(resp.Diagnostics.Err())
			}
			wantModule(t, s, "brd", true, map[string]string{"rd_nr": "2"})
			sdktest.Destroy(t, p, modType, n, resp.NewState, resp.Private)
			wantModule(t, s, "brd", false, nil)
		}},
		{"destroy reloads with explicit values where modprobe.d differs", func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node) {
			st, priv := sdktest.Create(t, p, modType, n, modCfg(t, p, "nvidia_drm", map[string]string{"modeset": "1"}, ""))
			// An administrator adds an options line after the first apply.
			os.WriteFile(filepath.Join(s.Root, "etc", "modprobe.d", "admin.conf"), []byte("options nvidia_drm fbdev=1 modeset=1\n"), 0o644)
			sdktest.Destroy(t, p, modType, n, st, priv)
			wantModule(t, s, "nvidia_drm", true, map[string]string{"modeset": "N", "fbdev": "N"})
		}},
		{"state unloaded, then destroy puts it back", func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node) {
			s.Main("rmmod", []string{"nvidia_drm"}, os.Stdout, os.Stderr)
			s.Main("modprobe", []string{"nvidia_drm", "fbdev=1"}, os.Stdout, os.Stderr)
			cfg := modCfg(t, p, "nvidia_drm", nil, "unloaded")
			st, priv := sdktest.Create(t, p, modType, n, cfg)
			wantModule(t, s, "nvidia_drm", false, nil)
			wantModule(t, s, "drm", true, nil)
			noChange(t, p, n, read(t, p, n, st, priv), priv, cfg)
			sdktest.Destroy(t, p, modType, n, st, priv)
			wantModule(t, s, "nvidia_drm", true, map[string]string{"fbdev": "Y", "modeset": "N"})
		}},
		{"in use: the node is left as it was, and destroy retries", func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node) {
			s.Use("nvidia_drm")
			_, resp := step(t, p, n, cty.NilVal, nil, modCfg(t, p, "nvidia_drm", map[string]string{"modeset": "1"}, ""))
			err := resp.Diagnostics.Err()
			if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "refcount 1") ||
				!strings.Contains(err.Error(), "left as it was") {
				t.Fatalf("want an in-use error naming the refcount, got %v", err)
			}
			wantModule(t, s, "nvidia_drm", true, map[string]string{"modeset": "N"})
			if resp.NewState.IsNull() || attrStr(resp.NewState, "params", "modeset") != "N" || attrStr(resp.NewState, "prior", "params", "modeset") != "N" {
				t.Fatalf("state must say what is there (modeset N) and keep prior: %#v", resp.NewState)
			}
			s.Release("nvidia_drm")
			_, resp = step(t, p, n, resp.NewState, resp.Private, modCfg(t, p, "nvidia_drm", map[string]string{"modeset": "1"}, ""))
			if resp.Diagnostics.HasErrors() {
				t.Fatal(resp.Diagnostics.Err())
			}
			s.Use("nvidia_drm")
			d := destroy(t, p, n, resp.NewState, resp.Private)
			if !d.Diagnostics.HasErrors() || d.NewState.IsNull() || attrStr(d.NewState, "prior", "params", "modeset") != "N" {
				t.Fatalf("destroy of a module in use must fail and keep prior: %v %#v", d.Diagnostics.Err(), d.NewState)
			}
			wantModule(t, s, "nvidia_drm", true, map[string]string{"modeset": "Y"})
			s.Release("nvidia_drm")
			sdktest.Destroy(t, p, modType, n, d.NewState, d.Private)
			wantModule(t, s, "nvidia_drm", true, map[string]string{"modeset": "N"})
		}},
		{"holders are named", func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node) {
			_, resp := step(t, p, n, cty.NilVal, nil, modCfg(t, p, "drm", nil, "unloaded"))
			if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "held by modules: nvidia_drm") {
				t.Fatalf("want the holder named, got %v", err)
			}
			wantModule(t, s, "drm", true, nil)
		}},
		{"a value the kernel rejects: loaded back as before", func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node) {
			_, resp := step(t, p, n, cty.NilVal, nil, modCfg(t, p, "nvidia_drm", map[string]string{"modeset": "maybe"}, ""))
			err := resp.Diagnostics.Err()
			if err == nil || !strings.Contains(err.Error(), "Invalid argument") || !strings.Contains(err.Error(), "loaded back") {
				t.Fatalf("got %v", err)
			}
			wantModule(t, s, "nvidia_drm", true, map[string]string{"modeset": "N"})
			if attrStr(resp.NewState, "loaded") != "true" {
				t.Fatalf("state: %#v", resp.NewState)
			}
		}},
		{"unknown module", func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node) {
			_, resp := step(t, p, n, cty.NilVal, nil, modCfg(t, p, "nosuchmod", nil, ""))
			if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "Module nosuchmod not found") {
				t.Fatalf("got %v", err)
			}
		}},
		{"a parameter sysfs does not show is a warning", func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node) {
			_, resp := step(t, p, n, cty.NilVal, nil, modCfg(t, p, "brd", map[string]string{"rd_nr": "1", "nosuch": "3"}, ""))
			if resp.Diagnostics.HasErrors() || len(resp.Diagnostics) != 1 || !strings.Contains(resp.Diagnostics[0].Detail, "nosuch") {
				t.Fatalf("want one warning naming nosuch, got %#v", resp.Diagnostics)
			}
		}},
		{"import records prior", func(t *testing.T, p sdk.Provider, s *kernelsim.Sim, n sdk.Node) {
			resp := p.ImportResource(context.Background(), sdk.ImportRequest{TypeName: modType, Node: n, ID: "nvidia-drm"})
			if resp.Diagnostics.HasErrors() {
				t.Fatal(resp.Diagnostics.Err())
			}
			if attrStr(resp.State, "name") != "nvidia_drm" || attrStr(resp.State, "prior", "params", "modeset") != "N" || attrStr(resp.State, "loaded") != "true" {
				t.Fatalf("import: %#v", resp.State)
			}
		}},
	}
	for _, tn := range nodes() {
		t.Run(tn.name, func(t *testing.T) {
			n := tn.get(t)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					p, s := simProvider(t)
					tt.run(t, p, s, n)
				})
			}
		})
	}
}

func TestPlanComparesAsTheKernelMeansIt(t *testing.T) {
	p, _ := simProvider(t)
	n := sdk.Node{Name: "local", Transport: "local"}
	st, priv := sdktest.Create(t, p, modType, n, modCfg(t, p, "nvidia_drm", map[string]string{"modeset": "1", "fbdev": "0"}, ""))
	st = read(t, p, n, st, priv)
	tests := []struct {
		params map[string]string
		state  string
		change bool
	}{
		{map[string]string{"modeset": "1", "fbdev": "0"}, "", false},
		{map[string]string{"modeset": "y", "fbdev": "n"}, "", false},
		{map[string]string{"modeset": "Y", "fbdev": "N"}, "loaded", false},
		{map[string]string{"modeset": "on"}, "", false}, // fbdev not named: never drift
		{nil, "", false},
		{map[string]string{"modeset": "0"}, "", true},
		{map[string]string{"modeset": "1", "fbdev": "1"}, "", true},
		{nil, "unloaded", true},
	}
	for _, tt := range tests {
		plan := sdktest.Plan(t, p, modType, n, st, priv, modCfg(t, p, "nvidia_drm", tt.params, tt.state))
		if changed := !plan.Planned.RawEquals(st); changed != tt.change {
			t.Errorf("params %v state %q: change = %v, want %v", tt.params, tt.state, changed, tt.change)
		}
	}
	// A rename replaces.
	plan := sdktest.Plan(t, p, modType, n, st, priv, modCfg(t, p, "brd", nil, ""))
	if len(plan.RequiresReplace) != 1 {
		t.Errorf("rename: RequiresReplace = %v", plan.RequiresReplace)
	}
	// Unknown params (from another resource) plan as a change with unknowns.
	cfg := with(modCfg(t, p, "nvidia_drm", nil, ""), "params", cty.UnknownVal(cty.Map(cty.String)))
	plan = sdktest.Plan(t, p, modType, n, st, priv, cfg)
	if plan.Planned.GetAttr("observed_params").IsKnown() {
		t.Errorf("unknown params should plan observed_params as unknown")
	}
}

func with(v cty.Value, attr string, a cty.Value) cty.Value {
	m := v.AsValueMap()
	m[attr] = a
	return cty.ObjectVal(m)
}

func TestReadIsOneRoundTripPerNode(t *testing.T) {
	p, s := simProvider(t)
	n := sdk.Node{Name: "local", Transport: "local"}
	var items []sdk.ReadItem
	for _, m := range []string{"brd", "loop", "nvidia_drm"} {
		st, priv := sdktest.Create(t, p, modType, n, modCfg(t, p, m, nil, ""))
		items = append(items, sdk.ReadItem{TypeName: modType, Address: "kmod_module." + m, Prior: st, Private: priv})
	}
	s.Main("rmmod", []string{"loop"}, os.Stdout, os.Stderr)
	resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n, Resources: items})
	if resp.Diagnostics.HasErrors() || resp.RoundTrips != 1 || len(resp.Results) != 3 {
		t.Fatalf("RoundTrips = %d, results %d, %v", resp.RoundTrips, len(resp.Results), resp.Diagnostics.Err())
	}
	for i, want := range []string{"true", "false", "true"} {
		if got := attrStr(resp.Results[i].NewState, "loaded"); got != want {
			t.Errorf("%s loaded = %s, want %s", items[i].Address, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	p := kmod.New()
	tests := []struct {
		name   string
		params map[string]string
		state  string
		want   string
	}{
		{"nvidia_drm", map[string]string{"modeset": "1"}, "", ""},
		{"nvidia drm", nil, "", "Invalid module name"},
		{"brd", nil, "gone", "Invalid state"},
		{"brd", map[string]string{"rd nr": "1"}, "", "Invalid parameter name"},
		{"brd", map[string]string{"rd_nr": "1\n2"}, "", "newline"},
		// The kernel's parameter parser splits at whitespace and groups
		// with double quotes: such a value would set other parameters.
		{"brd", map[string]string{"rd_nr": "2\" max_part=\"7"}, "", "double quote"},
		{"brd", map[string]string{"rd_nr": "2 max_part=7"}, "", "space"},
		{"brd", map[string]string{"rd_nr": "2\tmax_part=7"}, "", "0x09"},
		{"brd", map[string]string{"rd_nr": "2\u00a0"}, "", "non-ASCII"},
		{"brd", map[string]string{"rd_nr": "1,2", "x": "a=b", "y": "$(z)"}, "", ""},
		{"brd", map[string]string{"rd_nr": "1"}, "unloaded", "takes no params"},
	}
	for _, tt := range tests {
		diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: modType, Config: modCfg(t, p, tt.name, tt.params, tt.state)})
		got := ""
		if err := diags.Err(); err != nil {
			got = err.Error()
		}
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s %v %q: got %q, want %q", tt.name, tt.params, tt.state, got, tt.want)
		}
	}
	// Unknowns never fail validation.
	cfg := with(modCfg(t, p, "x", nil, ""), "name", cty.UnknownVal(cty.String))
	cfg = with(cfg, "params", cty.UnknownVal(cty.Map(cty.String)))
	if diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: modType, Config: cfg}); diags.HasErrors() {
		t.Errorf("unknowns: %v", diags.Err())
	}
}

func TestNodeUnreachableKeepsRestoreData(t *testing.T) {
	p, _ := simProvider(t)
	n := sdk.Node{Name: "local", Transport: "local"}
	st, priv := sdktest.Create(t, p, modType, n, modCfg(t, p, "nvidia_drm", map[string]string{"modeset": "1"}, ""))
	gone := sdk.Node{Name: "gone", Transport: "carrier-pigeon"}
	d := destroy(t, p, gone, st, priv)
	if !d.Diagnostics.HasErrors() || d.NewState.IsNull() || string(d.Private) != string(priv) {
		t.Fatalf("want an error, the state and the restore data kept; got %v %#v %s", d.Diagnostics.Err(), d.NewState, d.Private)
	}
	if d.NewState.GetAttr("prior").IsNull() {
		t.Fatal("prior dropped")
	}
}
