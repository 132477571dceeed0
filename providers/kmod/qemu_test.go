package kmod_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/testbed/qemunode"
	"github.com/sparkform/sparkform/providers/kmod"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// TestRealKernel runs the provider, with its production settings (real
// /sys, real modprobe/rmmod, real cgroup2), against a real Linux kernel
// booted under qemu and reached over SSH with the sparkform transport.
func TestRealKernel(t *testing.T) {
	t0 := time.Now()
	vm := qemunode.StartT(t)
	n := vm.SDK()
	pool := node.NewPool()
	t.Cleanup(func() { pool.Close() })
	conn, err := pool.Get(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	// sh runs a test-fixed script in the guest (no user values in it).
	sh := func(t *testing.T, script string) string {
		t.Helper()
		res, err := conn.Run(context.Background(), node.Cmd{Argv: []string{"sh", "-c", script}})
		if err != nil {
			t.Fatalf("guest: %s: %v", script, err)
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	p := sdktest.GRPC(t, kmod.New())

	t.Run("module not loaded before: apply, no change, drift, destroy unloads", func(t *testing.T) {
		if got := sh(t, "[ -d /sys/module/brd ] && echo loaded || echo absent"); got != "absent" {
			t.Fatalf("brd: %s", got)
		}
		cfg := modCfg(t, p, "brd", map[string]string{"rd_nr": "2", "rd_size": "8192"}, "")
		st, priv := sdktest.Create(t, p, modType, n, cfg)
		if got := sh(t, "echo $(cat /sys/module/brd/parameters/rd_nr /sys/module/brd/parameters/rd_size)"); got != "2 8192" {
			t.Fatalf("brd params: %s", got)
		}
		if attrStr(st, "prior", "loaded") != "false" {
			t.Fatalf("prior: %#v", st.GetAttr("prior"))
		}
		noChange(t, p, n, read(t, p, n, st, priv), priv, cfg)
		sh(t, "rmmod brd && modprobe brd rd_nr=3")
		d := read(t, p, n, st, priv)
		if attrStr(d, "params", "rd_nr") != "3" || attrStr(d, "params", "rd_size") != "16384" {
			t.Fatalf("drift not seen: %#v", d.GetAttr("params"))
		}
		_, resp := step(t, p, n, d, priv, cfg)
		if resp.Diagnostics.HasErrors() {
			t.Fatal(resp.Diagnostics.Err())
		}
		if got := sh(t, "cat /sys/module/brd/parameters/rd_nr"); got != "2" {
			t.Fatalf("rd_nr after converge: %s", got)
		}
		sdktest.Destroy(t, p, modType, n, resp.NewState, resp.Private)
		if got := sh(t, "[ -d /sys/module/brd ] && echo loaded || echo absent"); got != "absent" {
			t.Fatalf("destroy left brd: %s", got)
		}
	})

	t.Run("module loaded before: destroy restores the exact prior values", func(t *testing.T) {
		sh(t, "modprobe brd rd_nr=5 max_part=2")
		before := sh(t, "grep -r . /sys/module/brd/parameters | sort")
		cfg := modCfg(t, p, "brd", map[string]string{"rd_nr": "1"}, "")
		st, priv := sdktest.Create(t, p, modType, n, cfg)
		if got := sh(t, "echo $(cat /sys/module/brd/parameters/rd_nr /sys/module/brd/parameters/max_part)"); got != "1 1" {
			t.Fatalf("after apply rd_nr max_part = %s", got)
		}
		sdktest.Destroy(t, p, modType, n, st, priv)
		if after := sh(t, "grep -r . /sys/module/brd/parameters | sort"); after != before {
			t.Fatalf("restore differs:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		sh(t, "rmmod brd")
	})

	t.Run("a quoted parameter value is refused at validate; the kernel unchanged", func(t *testing.T) {
		// First, why: on this kernel modprobe joins KEY=VALUE words into
		// one string and the kernel's parser splits it at spaces, with
		// double quotes grouping, so this one value also sets max_part.
		got := sh(t, `modprobe brd 'rd_nr=2" max_part="7' && cat /sys/module/brd/parameters/max_part; rmmod brd`)
		if got == "1" {
			t.Fatalf("the kernel did not take max_part from the quoted value (max_part=%s): the hazard this refusal guards against is gone?", got)
		}
		t.Logf("modprobe brd 'rd_nr=2\" max_part=\"7' on %s leaves max_part=%s (default 1)", vm.Image.KernelVer, got)

		sh(t, "modprobe brd rd_nr=1")
		t.Cleanup(func() { conn.Run(context.Background(), node.Cmd{Argv: []string{"rmmod", "brd"}}) })
		before := sh(t, "grep -r . /sys/module/brd/parameters | sort")
		cfg := modCfg(t, p, "brd", map[string]string{"rd_nr": "2\" max_part=\"7"}, "")
		diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: modType, Config: cfg})
		err := diags.Err()
		if err == nil || !strings.Contains(err.Error(), "rd_nr") || !strings.Contains(err.Error(), "double quote") {
			t.Fatalf("validate: want an error about the double quote in rd_nr, got %v", err)
		}
		if len(diags) != 1 || !diags[0].Path.Equals(sdk.AttrPath("params").Index(cty.StringVal("rd_nr"))) {
			t.Fatalf("want one diagnostic on the params attribute, got %#v", diags)
		}
		// A value known only at apply (from another resource) meets the
		// same check there, before modprobe runs.
		planned := cty.ObjectVal(map[string]cty.Value{
			"name": cty.StringVal("brd"), "params": cfg.GetAttr("params"), "state": cty.NullVal(cty.String),
			"loaded": cty.True, "observed_params": cty.UnknownVal(cty.Map(cty.String)), "prior": cty.UnknownVal(cfg.GetAttr("prior").Type()),
		})
		resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: modType, Address: "kmod_module.x", Node: n,
			Prior: cty.NullVal(cfg.Type()), Planned: planned, Config: cfg}, nil)
		if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "double quote") {
			t.Fatalf("apply: want the double-quote refusal, got %v", err)
		}
		if after := sh(t, "grep -r . /sys/module/brd/parameters | sort"); after != before {
			t.Fatalf("the kernel changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})

	t.Run("module in use: the real kernel's refcount, node left as it was", func(t *testing.T) {
		sh(t, "modprobe brd rd_nr=1")
		pid := sh(t, "setsid sh -c 'exec 3</dev/ram0; exec sleep 600' >/dev/null 2>&1 </dev/null & echo $!")
		t.Cleanup(func() {
			conn.Run(context.Background(), node.Cmd{Argv: []string{"sh", "-c", "kill " + pid + "; sleep 0.2; rmmod brd"}})
		})
		sh(t, "while [ \"$(cat /sys/module/brd/refcnt)\" = 0 ]; do sleep 0.1; done")
		_, resp := step(t, p, n, cty.NilVal, nil, modCfg(t, p, "brd", map[string]string{"rd_nr": "2"}, ""))
		err := resp.Diagnostics.Err()
		if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "refcount 1") {
			t.Fatalf("want an in-use error with refcount 1, got %v", err)
		}
		if got := sh(t, "cat /sys/module/brd/parameters/rd_nr"); got != "1" {
			t.Fatalf("node changed: rd_nr %s", got)
		}
		if attrStr(resp.NewState, "params", "rd_nr") != "1" || attrStr(resp.NewState, "prior", "params", "rd_nr") != "1" {
			t.Fatalf("state must say rd_nr=1 and keep prior: %#v", resp.NewState)
		}
	})

	t.Run("cgroup: apply, no change, drift, non-empty destroy, destroy", func(t *testing.T) {
		rootBefore := sh(t, "cat /sys/fs/cgroup/cgroup.subtree_control")
		cfg := cgCfg(t, p, map[string]cty.Value{
			"path": cty.StringVal("sparkform/serve"), "memory_max": cty.StringVal("9g"),
			"memory_swap_max": cty.StringVal("0"), "cpus": cty.NumberIntVal(6), "pids_max": cty.StringVal("100"),
		})
		st, priv := sdktest.Create(t, p, cgType, n, cfg)
		got := sh(t, "cd /sys/fs/cgroup/sparkform/serve && echo \"$(cat memory.max)|$(cat memory.swap.max)|$(cat cpu.max)|$(cat pids.max)\"")
		if got != "9663676416|0|600000 100000|100" {
			t.Fatalf("limits: %s", got)
		}
		if en := strList(st.GetAttr("enabled_controllers")); len(en) == 0 {
			t.Fatalf("enabled_controllers empty (root subtree_control was %q)", rootBefore)
		}
		plan := sdktest.Plan(t, p, cgType, n, sdktest.Read(t, p, cgType, n, st, priv).NewState, priv, cfg)
		if !plan.Planned.RawEquals(sdktest.Read(t, p, cgType, n, st, priv).NewState) {
			t.Fatalf("second plan shows a change: %#v", plan.Planned)
		}
		sh(t, "echo 1G > /sys/fs/cgroup/sparkform/serve/memory.max")
		d := sdktest.Read(t, p, cgType, n, st, priv).NewState
		if attrStr(d, "memory_max") != "1073741824" {
			t.Fatalf("drift not seen: %#v", d)
		}
		plan = sdktest.Plan(t, p, cgType, n, d, priv, cfg)
		resp, _ := sdktest.Apply(t, p, cgType, n, d, plan.Planned, cfg, plan.PlannedPrivate)
		if got := sh(t, "cat /sys/fs/cgroup/sparkform/serve/memory.max"); got != "9663676416" {
			t.Fatalf("memory.max after converge: %s", got)
		}
		pid := sh(t, "setsid sleep 600 >/dev/null 2>&1 </dev/null & echo $!")
		sh(t, "echo "+pid+" > /sys/fs/cgroup/sparkform/serve/cgroup.procs")
		del := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: cgType, Node: n,
			Prior: resp.NewState, Planned: cty.NullVal(cfg.Type()), Config: cty.NullVal(cfg.Type()), Private: resp.Private}, nil)
		if err := del.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), pid) || del.NewState.IsNull() {
			t.Fatalf("destroy of a group with pid %s: want an error naming it and the state kept, got %v", pid, err)
		}
		sh(t, "kill "+pid+"; while [ -s /sys/fs/cgroup/sparkform/serve/cgroup.procs ]; do sleep 0.1; done")
		sdktest.Destroy(t, p, cgType, n, del.NewState, del.Private)
		if got := sh(t, "[ -e /sys/fs/cgroup/sparkform ] && echo there || echo gone"); got != "gone" {
			t.Fatalf("sparkform group: %s", got)
		}
		if got := sh(t, "cat /sys/fs/cgroup/cgroup.subtree_control"); got != rootBefore {
			t.Fatalf("root subtree_control %q, was %q before", got, rootBefore)
		}
	})

	t.Run("cgroup: the create's reply is lost; destroy still undoes what it made", func(t *testing.T) {
		// The CLI, the plugin or the link dies after the apply changed the
		// node and before its reply was stored: the engine rebuilds the
		// instance from its journal intent (no private data), refreshes
		// it, and later destroys it. What the apply created and enabled
		// must come back from the node's restore record.
		rootBefore := sh(t, "cat /sys/fs/cgroup/cgroup.subtree_control")
		cfg := cgCfg(t, p, map[string]cty.Value{"path": cty.StringVal("lost/serve"), "memory_max": cty.StringVal("1g"), "pids_max": cty.StringVal("50")})
		plan := sdktest.Plan(t, p, cgType, n, cty.NilVal, nil, cfg)
		lost, _ := sdktest.Apply(t, p, cgType, n, cty.NullVal(cfg.Type()), plan.Planned, cfg, plan.PlannedPrivate)
		if en := strList(lost.NewState.GetAttr("enabled_controllers")); len(en) == 0 {
			t.Fatalf("the apply enabled nothing (root subtree_control was %q): the test needs it to", rootBefore)
		}
		if got := sh(t, "ls -A /var/lib/sparkform/restore/kmod_cgroup | wc -l"); got != "1" {
			t.Fatalf("%s restore records after the apply, want 1", got)
		}
		res := sdktest.Read(t, p, cgType, n, recovered(plan.Planned), plan.PlannedPrivate)
		for _, attr := range []string{"enabled_controllers", "created_paths"} {
			if got, want := strList(res.NewState.GetAttr(attr)), strList(lost.NewState.GetAttr(attr)); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("refreshed %s = %q, want the lost reply's %q", attr, got, want)
			}
		}
		del := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: cgType, Node: n,
			Prior: res.NewState, Planned: cty.NullVal(cfg.Type()), Config: cty.NullVal(cfg.Type()), Private: res.Private}, nil)
		if len(del.Diagnostics) > 0 || !del.NewState.IsNull() {
			t.Fatalf("destroy: want no diagnostics and a null state, got %v %#v", del.Diagnostics, del.NewState)
		}
		if got := sh(t, "[ -e /sys/fs/cgroup/lost ] && echo there || echo gone"); got != "gone" {
			t.Fatalf("the group's ancestor sparkform created: %s", got)
		}
		if got := sh(t, "cat /sys/fs/cgroup/cgroup.subtree_control"); got != rootBefore {
			t.Fatalf("root subtree_control %q, was %q before", got, rootBefore)
		}
		if got := sh(t, "ls -A /var/lib/sparkform/restore/kmod_cgroup 2>/dev/null | wc -l"); got != "0" {
			t.Fatalf("%s restore records left after the destroy", got)
		}
	})

	t.Run("batched read of both types is one round trip each", func(t *testing.T) {
		st, priv := sdktest.Create(t, p, modType, n, modCfg(t, p, "loop", nil, ""))
		cst, cpriv := sdktest.Create(t, p, cgType, n, cgCfg(t, p, map[string]cty.Value{"path": cty.StringVal("batch"), "pids_max": cty.StringVal("50")}))
		resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n, Resources: []sdk.ReadItem{
			{TypeName: modType, Prior: st, Private: priv}, {TypeName: cgType, Prior: cst, Private: cpriv},
			{TypeName: modType, Prior: st, Private: priv},
		}})
		if resp.Diagnostics.HasErrors() || resp.RoundTrips != 2 {
			t.Fatalf("RoundTrips = %d (want 2), %v", resp.RoundTrips, resp.Diagnostics.Err())
		}
		sdktest.Destroy(t, p, cgType, n, cst, cpriv)
		sdktest.Destroy(t, p, modType, n, st, priv)
	})
	t.Logf("real-kernel run: boot %s, whole test %s", vm.BootTime.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))

}

func strList(v cty.Value) []string {
	var out []string
	if v.IsNull() || !v.IsKnown() {
		return out
	}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e.AsString())
	}
	return out
}
