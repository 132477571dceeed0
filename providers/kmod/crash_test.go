package kmod_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/kernelsim"
	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/kmod"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// recovered is what the engine rebuilds from a journal intent after a
// crash between the node change and the reply: the planned value with its
// unknowns (prior among them) as null, and the planned private data.
func recovered(planned cty.Value) cty.Value {
	v, _ := cty.Transform(planned, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if !v.IsKnown() {
			return cty.NullVal(v.Type()), nil
		}
		return v, nil
	})
	return v
}

// TestLostReplyKeepsFirstPrior: the reply of a kmod_module change is lost
// (the CLI or the plugin was killed after the module was reloaded), so the
// prior values it carried are gone with it. Whatever follows (the engine's
// recovery and a tainted replacement, a create from nothing, a node left
// half-way with the module unloaded), destroy must put back the values the
// module had before sparkform first touched it: modeset=N, loaded.
func TestLostReplyKeepsFirstPrior(t *testing.T) {
	want := map[string]string{"modeset": "1", "fbdev": "0"}
	tests := []struct {
		name string
		// after runs once the first reply is lost and returns the state
		// and private data the next destroy gets.
		after func(t *testing.T, p sdk.Provider, n sdk.Node, s *kernelsim.Sim, planned cty.Value, planPriv []byte) (cty.Value, []byte)
	}{
		{"recovered as tainted, then replaced", func(t *testing.T, p sdk.Provider, n sdk.Node, _ *kernelsim.Sim, planned cty.Value, planPriv []byte) (cty.Value, []byte) {
			// Refresh of the recovered instance, then the replacement:
			// its destroy half, then its create half.
			res := sdktest.Read(t, p, modType, n, recovered(planned), planPriv)
			if d := destroy(t, p, n, res.NewState, res.Private); d.Diagnostics.HasErrors() {
				t.Fatalf("destroy half of the replacement: %v", d.Diagnostics.Err())
			}
			return sdktest.Create(t, p, modType, n, modCfg(t, p, "nvidia_drm", want, ""))
		}},
		{"the instance dropped from state, created again", func(t *testing.T, p sdk.Provider, n sdk.Node, _ *kernelsim.Sim, _ cty.Value, _ []byte) (cty.Value, []byte) {
			return sdktest.Create(t, p, modType, n, modCfg(t, p, "nvidia_drm", want, ""))
		}},
		{"recovered, updated in place", func(t *testing.T, p sdk.Provider, n sdk.Node, s *kernelsim.Sim, planned cty.Value, planPriv []byte) (cty.Value, []byte) {
			res := sdktest.Read(t, p, modType, n, recovered(planned), planPriv)
			_, resp := step(t, p, n, res.NewState, res.Private, modCfg(t, p, "nvidia_drm", map[string]string{"modeset": "1"}, ""))
			if resp.Diagnostics.HasErrors() {
				t.Fatal(resp.Diagnostics.Err())
			}
			return resp.NewState, resp.Private
		}},
		{"killed with the module unloaded, recovered, destroyed", func(t *testing.T, p sdk.Provider, n sdk.Node, s *kernelsim.Sim, planned cty.Value, planPriv []byte) (cty.Value, []byte) {
			if code := s.Main("rmmod", []string{"nvidia_drm"}, nil, nil); code != 0 {
				t.Fatalf("rmmod: %d", code)
			}
			res := sdktest.Read(t, p, modType, n, recovered(planned), planPriv)
			return res.NewState, res.Private
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, s := simProvider(t)
			n := sdk.Node{Name: "local", Transport: "local", Become: true}
			if got := s.Param("nvidia_drm", "modeset"); got != "N" {
				t.Fatalf("simulated nvidia_drm starts with modeset=%s", got)
			}
			plan, resp := step(t, p, n, cty.NilVal, nil, modCfg(t, p, "nvidia_drm", want, ""))
			if resp.Diagnostics.HasErrors() || s.Param("nvidia_drm", "modeset") != "Y" {
				t.Fatalf("first apply: modeset=%s %v", s.Param("nvidia_drm", "modeset"), resp.Diagnostics.Err())
			}
			if _, err := os.Stat(restoreDir(s)); err != nil {
				t.Fatalf("no restore record on the node after the change: %v", err)
			}
			// The reply (resp) is lost here.
			st, priv := tt.after(t, p, n, s, plan.Planned, plan.PlannedPrivate)
			if d := destroy(t, p, n, st, priv); d.Diagnostics.HasErrors() {
				t.Fatalf("destroy: %v", d.Diagnostics.Err())
			}
			if !s.Loaded("nvidia_drm") || s.Param("nvidia_drm", "modeset") != "N" || s.Param("nvidia_drm", "fbdev") != "N" {
				t.Fatalf("after destroy: loaded=%v modeset=%s fbdev=%s, want loaded with modeset=N fbdev=N (the first prior)",
					s.Loaded("nvidia_drm"), s.Param("nvidia_drm", "modeset"), s.Param("nvidia_drm", "fbdev"))
			}
			if _, err := os.Stat(restoreDir(s)); !os.IsNotExist(err) {
				t.Errorf("restore record folder left after destroy: %v", err)
			}
		})
	}
}

// TestCgroupDestroyCutShort: a kmod_cgroup destroy whose link to the node
// drops after it removed the group, before the ancestors it created and
// its restore record: the destroy is an error and the instance stays in
// state (before, a warning "Ancestor group left in place ... cannot remove
// it now" and a null state: the ancestors and the record stayed forever).
// The next destroy finishes, and an ancestor that other groups use now is
// left to them with a warning, its record gone.
func TestCgroupDestroyCutShort(t *testing.T) {
	root := realpart.Cgroup2Root(t)
	bed := testbed.StartT(t, 1)
	n := bed.Nodes[0].SDK()
	n.Become = true
	recs := t.TempDir()
	if err := os.Chmod(recs, 0o755); err != nil {
		t.Fatal(err)
	}
	p := sdktest.GRPC(t, kmod.NewWithConfig(kmod.Config{CgroupRoot: root, RestoreDir: recs}))
	top := fmt.Sprintf("sparkform-cut-%d", os.Getpid())
	t.Cleanup(func() {
		for _, d := range []string{"other", "b/serve", "b", "a/serve", "a", ""} {
			_ = os.Remove(filepath.Join(root, top, d))
		}
	})
	records := func() []string {
		got, _ := filepath.Glob(filepath.Join(recs, "restore", "kmod_cgroup", "*"))
		return got
	}
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join(root, rel))
		return err == nil
	}
	for _, tc := range []struct {
		name, sub string
		foreign   bool // another group appears in the ancestor before the second destroy
	}{{"link dropped, destroy again", "a", false}, {"link dropped, then the ancestor used by another group", "b", true}} {
		t.Run(tc.name, func(t *testing.T) {
			gpath := top + "/" + tc.sub + "/serve"
			cfg := cgCfg(t, p, map[string]cty.Value{"path": cty.StringVal(gpath)})
			st, priv := sdktest.Create(t, p, cgType, n, cfg)
			if !exists(gpath) || len(records()) != 1 {
				t.Fatalf("after create: group there %v, records %v", exists(gpath), records())
			}
			kmod.SetTestStep(func(_, name string) {
				if name == "delete-group-removed" {
					bed.Nodes[0].DropConnections()
				}
			})
			del := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: cgType, Node: n, Address: "kmod_cgroup.g",
				Prior: st, Planned: cty.NullVal(cfg.Type()), Config: cty.NullVal(cfg.Type()), Private: priv}, nil)
			kmod.SetTestStep(nil)
			if !del.Diagnostics.HasErrors() || del.NewState.IsNull() {
				t.Fatalf("destroy cut short: want an error and the instance kept, got state %#v, diagnostics %v", del.NewState, del.Diagnostics)
			}
			if exists(gpath) || !exists(top+"/"+tc.sub) || len(records()) != 1 {
				t.Fatalf("after the cut: group %v (want gone), ancestor %v (want there), records %v (want 1); %v", exists(gpath), exists(top+"/"+tc.sub), records(), del.Diagnostics.Err())
			}
			if tc.foreign {
				if err := os.Mkdir(filepath.Join(root, top, tc.sub, "other"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			res := sdktest.Read(t, p, cgType, n, del.NewState, del.Private)
			again := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: cgType, Node: n, Address: "kmod_cgroup.g",
				Prior: res.NewState, Planned: cty.NullVal(cfg.Type()), Config: cty.NullVal(cfg.Type()), Private: res.Private}, nil)
			if again.Diagnostics.HasErrors() || !again.NewState.IsNull() {
				t.Fatalf("second destroy: state %#v, %v", again.NewState, again.Diagnostics.Err())
			}
			if len(records()) != 0 {
				t.Errorf("restore records left: %v", records())
			}
			if tc.foreign {
				// It, and the ancestor above it, stay with a warning each.
				if !exists(top+"/"+tc.sub+"/other") || len(again.Diagnostics) != 2 || !strings.Contains(again.Diagnostics[0].Detail, top+"/"+tc.sub+" on") ||
					!strings.Contains(again.Diagnostics[1].Detail, "other groups or processes") {
					t.Errorf("ancestor with another group in it: want it and its parent kept with a warning each, got %v", again.Diagnostics)
				}
				_ = os.Remove(filepath.Join(root, top, tc.sub, "other"))
				_ = os.Remove(filepath.Join(root, top, tc.sub))
			} else if exists(top + "/" + tc.sub) {
				t.Errorf("the ancestor sparkform created is still there")
			}
		})
	}
}
