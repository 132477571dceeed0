package gitkit_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/sdk"
)

// recovered is what the engine rebuilds from a journal intent after a
// crash between the node change and the reply: the planned value with its
// unknowns as null.
func recovered(planned cty.Value) cty.Value {
	v, _ := cty.Transform(planned, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if !v.IsKnown() {
			return cty.NullVal(v.Type()), nil
		}
		return v, nil
	})
	return v
}

// TestLostReplyRemovesMadeParents: the reply of a create is lost (CLI or
// plugin killed after stage.sh ran), and with it the list of parent
// folders the create made. Whatever follows, the last destroy leaves the
// node's folder as it was before the first apply.
func TestLostReplyRemovesMadeParents(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		cases := []struct {
			name  string
			after func(t *testing.T, in *instance, path string, cfg, planned cty.Value, planPriv []byte)
		}{
			{"recovered as tainted, replaced, destroyed", func(t *testing.T, in *instance, path string, cfg, planned cty.Value, planPriv []byte) {
				in.state, in.priv = recovered(planned), planPriv
				in.refresh()
				if in.state.IsNull() {
					t.Fatal("the staged tree is not seen after the lost reply")
				}
				in.destroy() // the destroy half of the replacement
				in.converge(cfg)
			}},
			{"killed between mkdir and move, kept in state by its record, staged again", func(t *testing.T, in *instance, path string, cfg, planned cty.Value, planPriv []byte) {
				n.run(t, "rm", "-rf", path) // the parents stay, as after a kill -9 of stage.sh
				in.state, in.priv = recovered(planned), planPriv
				in.refresh()
				// The folders made for it and its restore record are still
				// on the node: the instance is not gone until they are.
				if in.state.IsNull() {
					t.Fatal("path removed, its made folders and restore record left: read says the instance is gone")
				}
				in.converge(cfg)
				if !n.exists(path) {
					t.Fatal("the converging apply did not stage the tree again")
				}
			}},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				base := filepath.Join(n.dir, "lost", string(rune('a'+i)))
				n.run(t, "mkdir", "-p", base)
				path := filepath.Join(base, "exl3-kit", "deep", "878e0ee")
				cfg := config(fx.url, fx.c1, "release/runtime", path)
				in := newInstance(t, p, n.node, "gitkit_checkout.kit")
				pr := in.plan(cfg)
				if pr.Diagnostics.HasErrors() {
					t.Fatal(pr.Diagnostics.Err())
				}
				saved := in.state
				resp, _ := in.apply(cfg, pr)
				if resp.Diagnostics.HasErrors() || !n.exists(path) {
					t.Fatalf("first apply: %v", resp.Diagnostics.Err())
				}
				in.state, in.priv = saved, nil // the reply is lost
				tc.after(t, in, path, cfg, pr.Planned, pr.PlannedPrivate)
				in.destroy()
				if got := n.list(t, base); len(got) != 0 {
					t.Fatalf("destroy left %v in %s (want it empty, as before the first apply)", got, base)
				}
			})
		}
	})
}

// hasRecord reports whether the node holds path's gitkit restore record.
func hasRecord(t *testing.T, n testNode, path string) bool {
	t.Helper()
	_, ok, err := (restore.Store{Kind: gitkit.TypeCheckout}).Get(context.Background(), n.conn, n.node.Become, path)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestInterruptedDestroyFinishesCleanup: a destroy killed after the
// checkout folder went (a killed CLI or plugin, a dropped sshd link) leaves
// the parent folders the create made and the restore record naming them.
// The instance is gone from state only when they are gone too: refresh
// keeps it, and the converging destroy (or apply, then destroy) removes
// them. Before, refresh read the instance as gone and dropped it, and the
// folders and the record stayed forever.
func TestInterruptedDestroyFinishesCleanup(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		for i, converge := range []string{"destroy", "apply, then destroy"} {
			t.Run(converge, func(t *testing.T) {
				base := filepath.Join(n.dir, "interrupted", string(rune('a'+i)))
				n.run(t, "mkdir", "-p", base)
				path := filepath.Join(base, "exl3-kit", "878e0ee")
				cfg := config(fx.url, fx.c1, "release/runtime", path)
				in := newInstance(t, p, n.node, "gitkit_checkout.kit")
				in.converge(cfg)
				if !hasRecord(t, n, path) {
					t.Fatal("no restore record after a create that made a parent folder")
				}
				// The destroy is killed here: the tree is gone; its parent
				// and its record are not.
				n.run(t, "rm", "-rf", path)
				in.refresh()
				if in.state.IsNull() {
					t.Fatalf("refresh after the interrupted destroy says the instance is gone, but %v and its restore record remain", n.list(t, base))
				}
				if d := digestOf(in.state); strings.HasPrefix(d, "sha256:") {
					t.Errorf("refreshed tree_digest %q: want it to say the tree is absent", d)
				}
				if converge != "destroy" {
					in.converge(cfg)
					if !n.exists(path) {
						t.Fatal("the converging apply did not stage the tree again")
					}
				}
				in.destroy()
				if got := n.list(t, base); len(got) != 0 {
					t.Errorf("destroy left %v in %s", got, base)
				}
				if hasRecord(t, n, path) {
					t.Error("destroy left the restore record")
				}
				in.refresh()
				if !in.state.IsNull() {
					t.Errorf("after the destroy, refresh still finds %#v", in.state)
				}
			})
		}
	})
}
