package kmod_test

import (
	"os"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/kernelsim"
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
