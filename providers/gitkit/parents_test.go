package gitkit_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/sdk"
)

// destroy applies the destroy of in and returns its diagnostics; the
// checkout must be gone from state.
func (in *instance) destroy() sdk.Diagnostics {
	in.t.Helper()
	resp, _ := in.apply(cty.NullVal(objType), sdk.PlanResponse{Planned: nullObj(), PlannedPrivate: in.priv})
	if resp.Diagnostics.HasErrors() || !in.state.IsNull() {
		in.t.Fatalf("destroy: state %#v, %v", in.state, resp.Diagnostics.Err())
	}
	return resp.Diagnostics
}

func warnings(ds sdk.Diagnostics) []string {
	var out []string
	for _, d := range ds {
		if d.Severity == sdk.Warning {
			out = append(out, d.Summary+": "+d.Detail)
		}
	}
	return out
}

// TestDestroyRemovesMadeParents: the folders a create made for path
// (mkdir -p) are removed by destroy, across an update and a replace of
// the same path; folders that existed before stay.
func TestDestroyRemovesMadeParents(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		base := filepath.Join(n.dir, "parents")
		n.run(t, "mkdir", "-p", filepath.Join(base, "pre", "old"))
		cases := []struct {
			name     string
			path     string   // relative to base
			wantBase []string // what base holds after destroy
			wantPre  []string // what base/pre holds after destroy
		}{
			{"all made", "made/x y/kit", []string{"pre"}, []string{"old"}},
			{"parent existed", "pre/kit", []string{"pre"}, []string{"old"}},
			{"some made", "pre/new/deeper/kit", []string{"pre"}, []string{"old"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				path := filepath.Join(base, tc.path)
				in := newInstance(t, p, n.node, "gitkit_checkout.kit")
				cfg := config(fx.url, fx.c1, "release/runtime", path)
				in.converge(cfg)

				// An update (drift re-staged) keeps the record.
				n.write(t, filepath.Join(path, "serving/serve.py"), "hacked\n")
				in.refresh()
				in.converge(cfg)
				// A replace at the same path: the old one goes first (its
				// folders with it), the create makes them again.
				in.destroy()
				cfg2 := config(fx.url, fx.c2, "release/runtime", path)
				in.converge(cfg2)
				if !n.exists(filepath.Join(path, "NEW")) {
					t.Fatal("replace did not stage c2")
				}
				n.write(t, filepath.Join(path, "serving/serve.py"), "hacked again\n")
				in.refresh()
				in.converge(cfg2)

				if w := warnings(in.destroy()); len(w) > 0 {
					t.Errorf("destroy warned: %q", w)
				}
				if got := n.list(t, base); !reflect.DeepEqual(got, tc.wantBase) {
					t.Errorf("after destroy %s holds %q, want %q", base, got, tc.wantBase)
				}
				if got := n.list(t, filepath.Join(base, "pre")); !reflect.DeepEqual(got, tc.wantPre) {
					t.Errorf("after destroy %s/pre holds %q, want %q", base, got, tc.wantPre)
				}
			})
		}
	})
}

// TestDestroyKeepsUsedMadeParent: a folder the create made that someone
// then put a file in stays, with the file, and a warning names it.
func TestDestroyKeepsUsedMadeParent(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		base := filepath.Join(n.dir, "used")
		n.run(t, "mkdir", "-p", base)
		for _, tc := range []struct{ name, foreignIn string }{
			{"deepest", "a/b"},
			{"upper", "a"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				root := filepath.Join(base, tc.name)
				path := filepath.Join(root, "a", "b", "kit")
				in := newInstance(t, p, n.node, "gitkit_checkout.kit")
				in.converge(config(fx.url, fx.c1, "release/runtime", path))
				foreign := filepath.Join(root, tc.foreignIn, "notes.txt")
				n.write(t, foreign, "mine\n")

				w := warnings(in.destroy())
				kept := filepath.Join(root, tc.foreignIn)
				if len(w) != 1 || !strings.Contains(w[0], "kept "+kept+",") || !strings.Contains(w[0], "files sparkform did not put there") {
					t.Fatalf("destroy warnings %q, want one naming %s", w, kept)
				}
				if n.exists(path) {
					t.Errorf("checkout not removed")
				}
				if got := n.read(t, foreign); got != "mine\n" {
					t.Errorf("foreign file = %q", got)
				}
				// Made folders below the kept one are removed; it and those
				// above it stay.
				if tc.foreignIn == "a" && n.exists(filepath.Join(root, "a", "b")) {
					t.Errorf("empty made folder %s/a/b kept", root)
				}
				if !n.exists(root) {
					t.Errorf("%s removed", root)
				}
			})
		}
	})
}

// TestOldPrivateAndImportMadeNothing: private data without the list
// (written before it existed, or by an import) means "made nothing":
// destroy removes the checkout and leaves every folder above it.
func TestOldPrivateAndImportMadeNothing(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		base := filepath.Join(n.dir, "oldpriv")
		n.run(t, "mkdir", "-p", base)
		cfg := func(path string) cty.Value { return config(fx.url, fx.c1, "release/runtime", path) }

		// Old private data: only the digest.
		path := filepath.Join(base, "old", "x", "kit")
		in := newInstance(t, p, n.node, "gitkit_checkout.kit")
		in.converge(cfg(path))
		var pv map[string]any
		if err := json.Unmarshal(in.priv, &pv); err != nil {
			t.Fatalf("private data %q: %v", in.priv, err)
		}
		if _, ok := pv["made"]; !ok {
			t.Errorf("private data %q does not record the folders made", in.priv)
		}
		in.priv = []byte(`{"tree_digest":"` + digestOf(in.state) + `"}`)
		// Nor did that version keep a restore record on the node.
		forgetRecord(t, n, path)
		in.refresh()
		if pr := in.plan(cfg(path)); !sdk.ValuesEqual(pr.Planned, in.state) || pr.Diagnostics.HasErrors() {
			t.Errorf("plan with old private data is not a no-op: %#v %v", pr.Planned, pr.Diagnostics.Err())
		}
		if w := warnings(in.destroy()); len(w) > 0 {
			t.Errorf("destroy warned: %q", w)
		}
		if n.exists(path) || !n.exists(filepath.Dir(path)) {
			t.Errorf("old private data: checkout exists %v, parent exists %v; want gone, kept", n.exists(path), n.exists(filepath.Dir(path)))
		}

		// Import: the tree is adopted in folders sparkform did not make.
		path = filepath.Join(base, "imp", "y", "kit")
		orig := newInstance(t, p, n.node, "gitkit_checkout.kit")
		orig.converge(cfg(path))
		forgetRecord(t, n, path) // as if the folders had been made by hand
		ir := p.ImportResource(context.Background(), sdk.ImportRequest{TypeName: gitkit.TypeCheckout, Node: n.node,
			ID: path + "," + fx.url + "," + fx.c1 + ",release/runtime"})
		if ir.Diagnostics.HasErrors() {
			t.Fatal(ir.Diagnostics.Err())
		}
		imp := newInstance(t, p, n.node, "gitkit_checkout.kit")
		imp.state, imp.priv = ir.State, ir.Private
		imp.destroy()
		if n.exists(path) || !n.exists(filepath.Dir(path)) {
			t.Errorf("import: checkout exists %v, parent exists %v; want gone, kept", n.exists(path), n.exists(filepath.Dir(path)))
		}
	})
}

// forgetRecord removes path's restore record on the node: what a node
// staged by a version before the records looks like.
func forgetRecord(t *testing.T, n testNode, path string) {
	t.Helper()
	if err := (restore.Store{Kind: gitkit.TypeCheckout}).Remove(context.Background(), n.conn, n.node.Become, path); err != nil {
		t.Fatal(err)
	}
}

// TestFailedCreateRemovesMadeParents: a create that fails leaves neither
// the checkout nor the folders it made for it.
func TestFailedCreateRemovesMadeParents(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		base := filepath.Join(n.dir, "failmade")
		n.run(t, "mkdir", "-p", base)
		in := newInstance(t, p, n.node, "gitkit_checkout.kit")
		cfg := config(fx.url, fx.c1, "release/nope", filepath.Join(base, "a", "b", "kit"))
		resp, _ := in.apply(cfg, in.plan(cfg))
		if !resp.Diagnostics.HasErrors() || !in.state.IsNull() {
			t.Fatalf("apply with a missing subdir: state %#v, %v", in.state, resp.Diagnostics.Err())
		}
		if got := n.list(t, base); len(got) != 0 {
			t.Errorf("failed create left %q", got)
		}
	})
}
