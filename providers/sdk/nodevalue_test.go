package sdk_test

import (
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestNodeFromValue reads back every field a node value carries (the
// value engine/config builds), hops included; a value that is not a node
// is a clear error.
func TestNodeFromValue(t *testing.T) {
	nc := config.NodeConfig{Transport: "ssh", Host: "10.0.0.2", Port: 2222, User: "spark", IdentityFile: "/k/id",
		KnownHosts: "/k/known_hosts", Become: true, Timeout: 7 * time.Second, IdentityFiles: []string{"/k/a", "/k/b"},
		IdentitiesOnly: true, ProxyJump: []config.Hop{{Host: "bastion", Port: 22, User: "j", IdentityFiles: []string{"/k/j"}}}}
	n, err := sdk.NodeFromValue(config.NodeValue(`node.spark["a"]`, nc))
	if err != nil {
		t.Fatal(err)
	}
	want := sdk.Node{Name: `node.spark["a"]`, Transport: "ssh", Host: "10.0.0.2", Port: 2222, User: "spark",
		IdentityFile: "/k/id", KnownHosts: "/k/known_hosts", Become: true, Timeout: 7 * time.Second,
		IdentityFiles: []string{"/k/a", "/k/b"}, IdentitiesOnly: true,
		ProxyJump: []sdk.Node{{Name: `node.spark["a"] via bastion`, Transport: "ssh", Host: "bastion", Port: 22, User: "j",
			IdentityFiles: []string{"/k/j"}, KnownHosts: "/k/known_hosts", Timeout: 7 * time.Second}}}
	if !n.Equal(&want) {
		t.Fatalf("NodeFromValue = %+v\nwant %+v", n, want)
	}
	for _, bad := range []cty.Value{cty.NullVal(cty.DynamicPseudoType), cty.StringVal("spark-01"),
		cty.ObjectVal(map[string]cty.Value{"host": cty.StringVal("x")}), cty.UnknownVal(cty.DynamicPseudoType)} {
		if _, err := sdk.NodeFromValue(bad); err == nil {
			t.Errorf("NodeFromValue(%#v) accepted", bad)
		}
	}
}
