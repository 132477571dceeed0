package kmod_test

import (
	"testing"

	"github.com/sparkform/sparkform/providers/kmod"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestConfigForNode shows the {node} placeholder: one provider process,
// one simulated kernel per node.
func TestConfigForNode(t *testing.T) {
	cfg := kmod.Config{SysfsRoot: "/sim/{node}/sys", Modprobe: "/sim/{node}/bin/modprobe", Rmmod: "rmmod", CgroupRoot: "/cg/{node}"}
	for _, tc := range []struct{ name, key string }{
		{`node.spark["spark-01"]`, "spark-01"},
		{`node.n[1]`, "1"},
		{`node.local`, "local"},
		{`node.x["a/b"]`, "a_b"},
	} {
		n := sdk.Node{Name: tc.name}
		if got := kmod.NodeKey(n); got != tc.key {
			t.Errorf("NodeKey(%s) = %q, want %q", tc.name, got, tc.key)
		}
		got := cfg.For(n)
		want := kmod.Config{SysfsRoot: "/sim/" + tc.key + "/sys", Modprobe: "/sim/" + tc.key + "/bin/modprobe", Rmmod: "rmmod", CgroupRoot: "/cg/{node}"}
		if got != want {
			t.Errorf("For(%s) = %+v, want %+v", tc.name, got, want)
		}
	}
	plain := kmod.Config{SysfsRoot: "/sys"}
	if got := plain.For(sdk.Node{Name: "node.a"}); got != plain {
		t.Errorf("a config without {node} changed: %+v", got)
	}
}
