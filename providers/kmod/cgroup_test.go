package kmod_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/kmod"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

const cgType = "kmod_cgroup"

func cgCfg(t *testing.T, p sdk.Provider, attrs map[string]cty.Value) cty.Value {
	t.Helper()
	return sdktest.Object(t, sdktest.Schema(t, p, cgType).Block, attrs)
}

func TestCgroupValidate(t *testing.T) {
	p := kmod.New()
	tests := []struct {
		attrs map[string]cty.Value
		want  string
	}{
		{map[string]cty.Value{"path": cty.StringVal("sparkform/serve"), "memory_max": cty.StringVal("9g"),
			"memory_swap_max": cty.StringVal("0"), "cpus": cty.NumberIntVal(6), "pids_max": cty.StringVal("max")}, ""},
		{map[string]cty.Value{"path": cty.StringVal("a"), "cpu_max": cty.StringVal("max")}, ""},
		{map[string]cty.Value{"path": cty.StringVal("../etc")}, "no \"..\""},
		{map[string]cty.Value{"path": cty.StringVal("a/../../b")}, "Invalid cgroup path"},
		{map[string]cty.Value{"path": cty.StringVal("/abs")}, "relative to the cgroup root"},
		{map[string]cty.Value{"path": cty.StringVal("a/cgroup.procs")}, "cannot start with \"cgroup.\""},
		{map[string]cty.Value{"path": cty.StringVal("a"), "memory_max": cty.StringVal("nine gigs")}, "is not a size"},
		{map[string]cty.Value{"path": cty.StringVal("a"), "cpus": cty.NumberIntVal(0)}, "above 0"},
		{map[string]cty.Value{"path": cty.StringVal("a"), "cpu_max": cty.StringVal("6cpus 100000")}, "positive integer"},
		{map[string]cty.Value{"path": cty.StringVal("a"), "pids_max": cty.StringVal("lots")}, "number of processes"},
		{map[string]cty.Value{"path": cty.StringVal("a"), "cpus": cty.NumberIntVal(2), "cpu_max": cty.StringVal("max")}, "not both"},
		{map[string]cty.Value{"path": cty.UnknownVal(cty.String), "memory_max": cty.UnknownVal(cty.String)}, ""},
	}
	for _, tt := range tests {
		diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: cgType, Config: cgCfg(t, p, tt.attrs)})
		got := ""
		if err := diags.Err(); err != nil {
			got = err.Error()
		}
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%v: got %q, want %q", tt.attrs, got, tt.want)
		}
	}
}

// TestCgroupNeedsV2 runs on this machine's real cgroup root (or a missing
// one): without cgroup.controllers there the error must say so.
func TestCgroupNeedsV2(t *testing.T) {
	p := sdktest.GRPC(t, kmod.NewWithConfig(kmod.Config{CgroupRoot: t.TempDir()}))
	n := sdk.Node{Name: "local", Transport: "local", Become: true}
	cfg := cgCfg(t, p, map[string]cty.Value{"path": cty.StringVal("sparkform-test"), "memory_max": cty.StringVal("1g")})
	null := cty.NullVal(cfg.Type())
	proposed := sdk.ProposedNew(sdktest.Schema(t, p, cgType).Block, null, cfg)
	// Plan already says so (one remote command), before any apply.
	plan := p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: cgType, Node: n, Prior: null, Config: cfg, Proposed: proposed})
	if err := plan.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "no cgroup v2") {
		t.Fatalf("plan: want a clear no-cgroup-v2 error, got %v", err)
	}
	// And apply, should it be reached anyway.
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: cgType, Node: n,
		Prior: null, Planned: proposed, Config: cfg}, nil)
	if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "no cgroup v2") || !strings.Contains(err.Error(), "cgroup.controllers is missing") {
		t.Fatalf("want a clear no-cgroup-v2 error, got %v", err)
	}
}

func TestSizes(t *testing.T) {
	tests := []struct{ in, want string }{
		{"9g", "9663676416"}, {"9G", "9663676416"}, {"512m", "536870912"}, {"0", "0"}, {"max", "max"},
		{"1000", "0"}, {"4097", "4096"}, {"1k", "0"}, {"2gib", "2147483648"},
	}
	for _, tt := range tests {
		if got, err := kmod.MemKernel(tt.in); err != nil || got != tt.want {
			t.Errorf("MemKernel(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "g", "-1", "1.5g", "9x", "99999999999999999999"} {
		if _, err := kmod.MemKernel(bad); !errors.Is(err, kmod.ErrBadValue) {
			t.Errorf("MemKernel(%q) err = %v, want ErrBadValue", bad, err)
		}
	}
}

func TestParamEqual(t *testing.T) {
	tests := []struct {
		want, observed string
		eq             bool
	}{
		{"1", "Y", true}, {"y", "Y", true}, {"Y", "Y", true}, {"on", "Y", true},
		{"0", "N", true}, {"n", "N", true}, {"off", "N", true},
		{"1", "N", false}, {"0", "Y", false}, {"maybe", "Y", false},
		{"16", "16", true}, {"0x10", "16", true}, {"010", "8", true}, {"17", "16", false},
		{"abc", "abc", true}, {"abc", "abd", false},
	}
	for _, tt := range tests {
		if got := kmod.ParamEqual(tt.want, tt.observed); got != tt.eq {
			t.Errorf("ParamEqual(%q, %q) = %v, want %v", tt.want, tt.observed, got, tt.eq)
		}
	}
}
