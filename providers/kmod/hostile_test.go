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

// TestModuleHostileRefused: names that modprobe or rmmod would read as an
// option, or a shell as code, are refused by Validate with a clear message
// and, when they are only known at apply, by Apply before any command.
func TestModuleHostileRefused(t *testing.T) {
	p, s := simProvider(t)
	mark := filepath.Join(t.TempDir(), "pwned")
	tests := []struct {
		name   string
		params map[string]string
		want   string
		// applyWant, when set, is what Apply says: it turns '-' into
		// '_' (the kernel's own spelling), so "-r" is looked up as "_r".
		applyWant string
	}{
		{"-r", nil, "is not a module name", "Module _r not found"},
		{"--force", nil, "is not a module name", "Module __force not found"},
		{"$(touch " + mark + ")", nil, "is not a module name", ""},
		{"`touch " + mark + "`", nil, "is not a module name", ""},
		{"brd;touch " + mark, nil, "is not a module name", ""},
		{"brd " + mark, nil, "is not a module name", ""},
		{"../../etc", nil, "is not a module name", ""},
		{"brd", map[string]string{"--config": mark}, "is not a module parameter name", ""},
		{"brd", map[string]string{"-C": mark}, "is not a module parameter name", ""},
		{"brd", map[string]string{"rd_nr": "1\ntouch " + mark}, "newline or NUL", ""},
	}
	n := sdk.Node{Name: "local", Transport: "local"}
	good := modCfg(t, p, "brd", nil, "")
	plan := sdktest.Plan(t, p, modType, n, cty.NilVal, nil, good)
	for _, tt := range tests {
		cfg := modCfg(t, p, tt.name, tt.params, "")
		diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: modType, Config: cfg})
		if err := diags.Err(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("validate %q %v: want %q, got %v", tt.name, tt.params, tt.want, err)
		}
		// Known only at apply: a plan made with a placeholder, applied
		// with the hostile value.
		planned := setAttrs(plan.Planned, map[string]cty.Value{"name": cty.StringVal(tt.name), "params": cfg.GetAttr("params")})
		resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: modType, Address: "kmod_module.x",
			Node: n, Prior: cty.NullVal(planned.Type()), Planned: planned, Config: cfg}, nil)
		want := tt.want
		if tt.applyWant != "" {
			want = tt.applyWant
		}
		if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("apply %q %v: want %q, got %v", tt.name, tt.params, want, err)
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("an injected command ran (%s exists)", mark)
	}
	if s.Loaded("brd") {
		t.Errorf("brd was loaded by a refused apply")
	}
}

// TestModuleHostileParamValue: a string parameter's value, however it
// looks, reaches modprobe as one argument and nothing in it runs.
func TestModuleHostileParamValue(t *testing.T) {
	const catalog = "strmod size=4096 label:charp=none\n"
	for _, tn := range nodes() {
		t.Run(tn.name, func(t *testing.T) {
			n := tn.get(t)
			s := kernelsim.New(t, catalog)
			p := sdktest.GRPC(t, kmod.NewWithConfig(kmod.Config{
				SysfsRoot: s.SysfsRoot(), Modprobe: s.Tool("modprobe"), Rmmod: s.Tool("rmmod"),
				CgroupRoot: filepath.Join(s.Root, "no-cgroup"),
			}))
			mark := filepath.Join(s.Root, "pwned")
			// Values with spaces or double quotes are refused (see
			// TestValidate): the kernel would split them.
			for _, v := range []string{"$(touch${IFS}MARK)", "`touch${IFS}MARK`", "a;touch${IFS}MARK", `it's`, "-r", "*", `x\ny`} {
				v = strings.ReplaceAll(v, "MARK", mark)
				cfg := modCfg(t, p, "strmod", map[string]string{"label": v}, "")
				_, resp := step(t, p, n, cty.NilVal, nil, cfg)
				if err := resp.Diagnostics.Err(); err != nil {
					t.Fatalf("value %q: %v", v, err)
				}
				if got := resp.NewState.GetAttr("observed_params").Index(cty.StringVal("label")); got.AsString() != v {
					t.Errorf("value %q: the kernel shows %q", v, got.AsString())
				}
				if _, err := os.Stat(mark); err == nil {
					t.Fatalf("value %q ran an injected command", v)
				}
				if d := destroy(t, p, n, resp.NewState, resp.Private); d.Diagnostics.HasErrors() {
					t.Fatalf("destroy: %v", d.Diagnostics.Err())
				}
			}
		})
	}
}

// TestCgroupHostilePathsRead: group names with shell syntax, quotes, globs
// and a literal backslash-n reach the read script as arguments; each
// group's answer is its own (no line forged by a name).
func TestCgroupHostilePathsRead(t *testing.T) {
	root := t.TempDir()
	// Group names hold no '/', so the marker is relative to where the
	// local node runs commands: this test's working directory.
	const markName = "pwned-kmod-cgroup-test"
	mark, err := filepath.Abs(markName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(mark) })
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := sdktest.GRPC(t, kmod.NewWithConfig(kmod.Config{CgroupRoot: root}))
	n := sdk.Node{Name: "local", Transport: "local"}
	names := []string{"$(touch MARK)", "`touch MARK`", "a b", "-rf", "*", `it's "q"`, `x\nE`, "y;touch MARK"}
	for i, name := range names {
		name = strings.ReplaceAll(name, "MARK", markName)
		exists := i%2 == 0
		if exists {
			d := filepath.Join(root, "sf", name)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			for f, v := range map[string]string{"memory.max": "1048576\n", "cgroup.procs": ""} {
				if err := os.WriteFile(filepath.Join(d, f), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		cfg := cgCfg(t, p, map[string]cty.Value{"path": cty.StringVal("sf/" + name), "memory_max": cty.StringVal("1m")})
		if d := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: cgType, Config: cfg}); d.HasErrors() {
			t.Fatalf("%q: %v", name, d.Err())
		}
		prior := setAttrs(sdk.ProposedNew(sdktest.Schema(t, p, cgType).Block, cty.NullVal(cfg.Type()), cfg), map[string]cty.Value{
			"exists": cty.True, "observed": cty.MapValEmpty(cty.String),
			"enabled_controllers": cty.ListValEmpty(cty.String), "created_paths": cty.ListValEmpty(cty.String),
		})
		got := sdktest.Read(t, p, cgType, n, prior, nil).NewState
		if got.GetAttr("exists").True() != exists {
			t.Errorf("%q: exists = %v, want %v", name, got.GetAttr("exists").True(), exists)
		}
		if exists {
			if mm := got.GetAttr("observed").Index(cty.StringVal("memory.max")).AsString(); mm != "1048576" {
				t.Errorf("%q: observed memory.max %q", name, mm)
			}
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("an injected command ran (%s exists)", mark)
	}
}

// setAttrs returns obj with the given attributes replaced.
func setAttrs(obj cty.Value, set map[string]cty.Value) cty.Value {
	m := obj.AsValueMap()
	for k, v := range set {
		if v == cty.NilVal {
			v = cty.NullVal(m[k].Type())
		}
		m[k] = v
	}
	return cty.ObjectVal(m)
}
