package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/kernelsim"
	"github.com/sparkform/sparkform/internal/kernelsim/kmodsim"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/registry"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// The kmod provider this binary serves (`sparkform internal-plugin kmod`,
// built without the kmodsim tag as it ships) drives the real kernel even
// when the old test variables point at a simulated one; only a test build
// (kmodsim) follows them. A module loaded only in the simulator tells which
// kernel each provider read.
func TestShippedKmodIgnoresTestVariables(t *testing.T) {
	const mod = "sparkform_sim_only"
	s := kernelsim.New(t, "# kernelsim catalogue\n"+mod+" boot size=4096\n")
	t.Setenv(kmodsim.EnvSysfsRoot, s.SysfsRoot())
	t.Setenv(kmodsim.EnvModprobe, s.Tool("modprobe"))
	t.Setenv(kmodsim.EnvRmmod, s.Tool("rmmod"))
	t.Setenv(kmodsim.EnvCgroupRoot, filepath.Join(s.Root, "no-cgroup"))

	loaded := func(p sdk.Provider) string {
		t.Helper()
		p = sdktest.GRPC(t, p)
		prior := sdktest.Object(t, sdktest.Schema(t, p, "kmod_module").Block, map[string]cty.Value{
			"name": cty.StringVal(mod), "loaded": cty.True,
		})
		resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: sdk.Node{Name: "node.local", Transport: "local"},
			Resources: []sdk.ReadItem{{TypeName: "kmod_module", Address: "kmod_module.x", Prior: prior}}})
		if err := resp.Diagnostics.Err(); err != nil || len(resp.Results) != 1 {
			t.Fatalf("read: %v (%d results)", err, len(resp.Results))
		}
		if err := resp.Results[0].Diagnostics.Err(); err != nil {
			t.Fatalf("read %s: %v", mod, err)
		}
		st := resp.Results[0].NewState
		if st.IsNull() || st.GetAttr("loaded").IsNull() {
			return "false"
		}
		return map[bool]string{true: "true", false: "false"}[st.GetAttr("loaded").True()]
	}
	if got := loaded(kmodsim.New()); got != "true" {
		t.Fatalf("the test build's provider sees %s loaded = %s in the simulator; the check below would prove nothing", mod, got)
	}
	shipped, _ := registry.Lookup("kmod")
	if got := loaded(shipped.New()); got != "false" {
		t.Errorf("the shipped kmod provider read the simulated kernel named by SPARKFORM_KMOD_* (%s loaded = %s); it must drive the real kernel", mod, got)
	}
	// The one a shared plugin process builds, on its shared pool.
	if got := loaded(shipped.NewWithPool(node.NewPool())); got != "false" {
		t.Errorf("the shipped kmod provider on a shared pool read the simulated kernel named by SPARKFORM_KMOD_* (%s loaded = %s); it must drive the real kernel", mod, got)
	}
}
