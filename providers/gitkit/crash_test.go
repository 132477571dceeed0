package gitkit_test

import (
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

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
			{"killed between mkdir and move, dropped from state, created again", func(t *testing.T, in *instance, path string, cfg, planned cty.Value, planPriv []byte) {
				n.run(t, "rm", "-rf", path) // the parents stay, as after a kill -9 of stage.sh
				in.state, in.priv = recovered(planned), planPriv
				in.refresh()
				if !in.state.IsNull() {
					t.Fatalf("path removed, yet read finds %#v", in.state)
				}
				in.converge(cfg)
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
