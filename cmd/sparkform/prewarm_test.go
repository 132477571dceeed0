package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
)

// TestPrewarmDialsParallelismNodes: while its plugins start, a plan dials
// only as many nodes as -parallelism lets be in flight, the ones its node
// check takes first (NodesFromVariables' order); the node check uses
// those dials and dials the others itself: every node once.
func TestPrewarmDialsParallelismNodes(t *testing.T) {
	bed := testbed.StartT(t, 4)
	n0 := bed.Nodes[0]
	dir := t.TempDir()
	src := fmt.Sprintf(`
variable "nodes" {}
node "n" {
  for_each      = var.nodes
  host          = each.value.host
  port          = each.value.port
  user          = %q
  identity_file = %q
  known_hosts   = %q
}
`, n0.User, n0.IdentityFile, n0.KnownHosts)
	if err := os.WriteFile(filepath.Join(dir, "main.sf.hcl"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	mod, diags := config.LoadDir(dir)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	nodes := map[string]cty.Value{}
	for i, n := range bed.Nodes {
		nodes[fmt.Sprintf("k%d", i)] = cty.ObjectVal(map[string]cty.Value{"host": cty.StringVal(n.Host), "port": cty.NumberIntVal(int64(n.Port))})
	}
	vals := map[string]cty.Value{"nodes": cty.ObjectVal(nodes)}

	for _, tc := range []struct{ parallelism, early int }{{1, 1}, {2, 2}, {10, 4}} {
		t.Run(fmt.Sprint(tc.parallelism), func(t *testing.T) {
			m := &meta{stderr: io.Discard, pool: node.NewPool()}
			defer m.pool.Close()
			if got := m.prewarmNodes(mod, vals, tc.parallelism); got != tc.early {
				t.Errorf("prewarmNodes says %d nodes, want %d", got, tc.early)
			}
			if got := m.pool.Dials(); got != int64(tc.early) {
				t.Fatalf("-parallelism=%d: %d nodes dialled early, want %d", tc.parallelism, got, tc.early)
			}
			order := engine.NodesFromVariables(mod, vals)
			for i, n := range order {
				if err := m.checkNode(t.Context(), n); err != nil {
					t.Fatalf("node check of %s: %v", n.Name, err)
				}
				if want := max(tc.early, i+1); m.pool.Dials() != int64(want) {
					t.Fatalf("after the node check of %s (%d of %d): %d dials, want %d", n.Name, i+1, len(order), m.pool.Dials(), want)
				}
			}
		})
	}
}
