package hubstage

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// recovered is what the engine rebuilds from a journal intent after a
// crash between the node change and the reply: the planned value with its
// unknowns as null, no private data.
func recovered(planned cty.Value) cty.Value {
	v, _ := cty.Transform(planned, func(_ cty.Path, v cty.Value) (cty.Value, error) {
		if !v.IsKnown() {
			return cty.NullVal(v.Type()), nil
		}
		return v, nil
	})
	return v
}

// TestLostReplyManifestOwnership: the reply of a create that wrote
// manifest_path (and made its folders) is lost, and with it the private
// data saying the file is this resource's. Whatever follows, the last
// destroy leaves the node's folder as it was before the first apply.
func TestLostReplyManifestOwnership(t *testing.T) {
	nodes := testNodes(t)
	p := provider(t, nodes)
	ctx := context.Background()
	for _, n := range nodes {
		t.Run(n.name, func(t *testing.T) {
			h := newHub(t, t.TempDir())
			modelHub(t, h)
			null := cty.NullVal(schema.Block.ImpliedType())
			cases := []struct {
				name string
				// after returns the state and private data destroy gets.
				after func(t *testing.T, cfg, planned cty.Value, resp sdk.ApplyResponse) (cty.Value, []byte)
			}{
				{"no fault: the folders made for manifest_path go with it", func(t *testing.T, _, _ cty.Value, resp sdk.ApplyResponse) (cty.Value, []byte) {
					return resp.NewState, resp.Private
				}},
				{"recovered, then destroyed", func(t *testing.T, _, planned cty.Value, _ sdk.ApplyResponse) (cty.Value, []byte) {
					r := sdktest.Read(t, p, TypeManifest, n.node, recovered(planned), nil)
					return r.NewState, r.Private
				}},
				{"dropped from state, created again over its own file", func(t *testing.T, cfg, _ cty.Value, _ sdk.ApplyResponse) (cty.Value, []byte) {
					return sdktest.Create(t, p, TypeManifest, n.node, cfg)
				}},
			}
			for i, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					base := filepath.Join(n.dir, "lost", string(rune('a'+i)))
					must(t, os.MkdirAll(base, 0o777))
					must(t, os.Chmod(base, 0o777)) // the sshd node's user writes here
					mp := filepath.Join(base, "made", "deeper", "mounts.txt")
					cfg := config(t, map[string]cty.Value{
						"hub_dir": cty.StringVal(h.dir), "repo_id": cty.StringVal("coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"),
						"target": cty.StringVal("/model"), "manifest_path": cty.StringVal(mp),
					})
					pl := sdktest.Plan(t, p, TypeManifest, n.node, null, nil, cfg)
					resp := p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: TypeManifest, Address: "a", Node: n.node,
						Prior: null, Planned: pl.Planned, Config: cfg, Private: pl.PlannedPrivate}, nil)
					if resp.Diagnostics.HasErrors() {
						t.Fatal(resp.Diagnostics.Err())
					}
					if _, err := os.Stat(mp); err != nil {
						t.Fatalf("first apply wrote no manifest: %v", err)
					}
					// The reply (resp) is lost here, but in the first case.
					st, priv := tc.after(t, cfg, pl.Planned, resp)
					sdktest.Destroy(t, p, TypeManifest, n.node, st, priv)
					if ents, _ := os.ReadDir(base); len(ents) != 0 {
						t.Fatalf("destroy left %v in %s (want it empty, as before the first apply)", ents[0].Name(), base)
					}
				})
			}
		})
	}
}

// TestFailedWriteKeepsRecordedInstance: a create whose manifest write fails
// after its restore record went down on the node (here: the folder for
// manifest_path cannot be made) is kept in state, not forgotten: before,
// the instance was null and the record (and whatever the write had made)
// stayed on the node with nothing left to remove it. Destroy then removes
// the record.
func TestFailedWriteKeepsRecordedInstance(t *testing.T) {
	nodes := testNodes(t)
	p := provider(t, nodes)
	ctx := context.Background()
	for _, n := range nodes {
		if n.name != "sshd" {
			continue // the local nodes run as root: nothing is refused to them
		}
		h := newHub(t, t.TempDir())
		modelHub(t, h)
		null := cty.NullVal(schema.Block.ImpliedType())
		base := filepath.Join(t.TempDir(), "root-owned")
		must(t, os.MkdirAll(base, 0o755)) // not writable by the node's user
		mp := filepath.Join(base, "made", "mounts.txt")
		cfg := config(t, map[string]cty.Value{
			"hub_dir": cty.StringVal(h.dir), "repo_id": cty.StringVal("coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"),
			"target": cty.StringVal("/model"), "manifest_path": cty.StringVal(mp),
		})
		pl := sdktest.Plan(t, p, TypeManifest, n.node, null, nil, cfg)
		resp := p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: TypeManifest, Address: "a", Node: n.node,
			Prior: null, Planned: pl.Planned, Config: cfg, Private: pl.PlannedPrivate}, nil)
		if !resp.Diagnostics.HasErrors() {
			t.Fatalf("write under a folder the user cannot write: no error")
		}
		if _, ok, err := records.Get(ctx, n.conn, false, mp); err != nil || !ok {
			t.Fatalf("the failed write left no restore record (ok=%v, %v): the test needs one", ok, err)
		}
		if resp.NewState.IsNull() {
			t.Fatalf("failed create with its restore record on the node: state is null, so nothing would ever remove the record")
		}
		sdktest.Destroy(t, p, TypeManifest, n.node, resp.NewState, resp.Private)
		if _, ok, err := records.Get(ctx, n.conn, false, mp); err != nil || ok {
			t.Errorf("restore record left after destroy (ok=%v, %v)", ok, err)
		}
	}
}
