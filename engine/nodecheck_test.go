package engine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
)

// TestNodesFromVariables: the nodes the variables alone decide are the
// ones the plan's node check reaches (same names and connection keys);
// a node that needs a local or another node, a local node and one whose
// arguments do not evaluate are left out, without an error.
func TestNodesFromVariables(t *testing.T) {
	dir := t.TempDir()
	src := `
variable "nodes" {}
locals { jump_user = "ops" }
node "spark" {
  for_each    = var.nodes
  host        = each.value.host
  port        = each.value.port
  user        = "kilork"
  become      = true
  known_hosts = "/etc/ssh/known"
}
node "single" {
  host = "10.0.0.9"
}
node "here" {
  transport = "local"
}
node "via_local" {
  host = "10.0.0.8"
  user = local.jump_user
}
node "bad_port" {
  host = "10.0.0.7"
  port = "not a number"
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.sf.hcl"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	mod, diags := config.LoadDir(dir)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	vars := map[string]cty.Value{"nodes": cty.ObjectVal(map[string]cty.Value{
		"a": cty.ObjectVal(map[string]cty.Value{"host": cty.StringVal("10.0.0.1"), "port": cty.NumberIntVal(2201)}),
		"b": cty.ObjectVal(map[string]cty.Value{"host": cty.StringVal("10.0.0.2"), "port": cty.NumberIntVal(22)}),
	})}
	got := NodesFromVariables(mod, vars)
	var names []string
	for _, n := range got {
		names = append(names, n.Name)
	}
	want := []string{`node.single`, `node.spark["a"]`, `node.spark["b"]`}
	if !slices.Equal(names, want) {
		t.Fatalf("nodes %q, want %q", names, want)
	}

	// The very nodes (connection keys) the plan's evaluation makes.
	e := New(Options{Module: mod, Providers: newBed(t).provs})
	cg, ev, d := e.planConfig(t.Context(), PlanOptions{Variables: vars})
	if cg == nil || ev == nil {
		t.Fatalf("planConfig: %v", d)
	}
	cfg := ev.nodeInstances()
	for _, n := range got {
		if c, ok := cfg[n.Name]; !ok || c.Key() != n.Key() {
			t.Errorf("%s: key %q, the plan's is %q", n.Name, n.Key(), c.Key())
		}
	}
	if g := cfg[`node.spark["a"]`]; g.Port != 2201 || !g.Become || g.User != "kilork" {
		t.Errorf("node.spark[a] = %+v", g)
	}
}
