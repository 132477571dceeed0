package hubstage

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// modelHub builds the seed-like repo: refs/main at c1, then c2 ready to
// move to (one file changed, one added, one removed).
func modelHub(t *testing.T, h *hub) (repo, c1, c2 string) {
	repo = h.repo("model", "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw")
	c1, c2 = commitOf("c1"), commitOf("c2")
	h.snapshot(repo, c1, map[string]string{
		"config.json": "{v1}", "model-00001-of-00002.safetensors": "s1", "model-00002-of-00002.safetensors": "s2",
		"engrams/e0.bin": "e0", "tokenizer.json": "tok",
	}, true)
	h.snapshot(repo, c2, map[string]string{
		"config.json": "{v2}", "model-00001-of-00002.safetensors": "s1", "model-00002-of-00002.safetensors": "s2",
		"engrams/e0.bin": "e0", "engrams/e1.bin": "e1",
	}, true)
	h.ref(repo, "main", c1)
	return repo, c1, c2
}

func provider(t *testing.T, nodes []testNode) sdk.Provider {
	return sdktest.GRPC(t, &sdk.Router{Name: "hubstage", Resources: map[string]sdk.Resource{TypeManifest: resourceFor(nodes)}})
}

func config(t *testing.T, attrs map[string]cty.Value) cty.Value {
	return sdktest.Object(t, schema.Block, attrs)
}

func TestSchemaShape(t *testing.T) {
	rs := sdktest.Schema(t, sdktest.GRPC(t, New()), TypeManifest)
	files := rs.Block.Attributes["files"]
	if files == nil || !files.Type.Equals(cty.List(cty.Object(map[string]cty.Type{"source": cty.String, "target": cty.String}))) {
		t.Fatalf("files must be list(object({source, target})) for docker_container.bind_files; got %#v", files)
	}
	if a := rs.Block.Attributes[SummaryAttribute]; a == nil || !a.Computed {
		t.Fatalf("%s must be a computed attribute", SummaryAttribute)
	}
	for name, a := range rs.Block.Attributes {
		if a.Description == "" {
			t.Errorf("attribute %s has no description", name)
		}
	}
}

func TestValidate(t *testing.T) {
	p := New()
	base := map[string]cty.Value{"hub_dir": cty.StringVal("/hub"), "repo_id": cty.StringVal("org/m"), "target": cty.StringVal("/model")}
	cases := []struct {
		name string
		set  map[string]cty.Value
		bad  string // attribute named in the error, "" for valid
	}{
		{"valid", nil, ""},
		{"valid commit and dataset", map[string]cty.Value{"revision": cty.StringVal(commitOf("x")), "repo_type": cty.StringVal("dataset")}, ""},
		{"valid pr ref", map[string]cty.Value{"revision": cty.StringVal("refs/pr/12")}, ""},
		{"no org is fine", map[string]cty.Value{"repo_id": cty.StringVal("gpt2")}, ""},
		{"unknowns are fine", map[string]cty.Value{"hub_dir": cty.UnknownVal(cty.String), "include": cty.UnknownVal(cty.List(cty.String))}, ""},
		{"relative hub", map[string]cty.Value{"hub_dir": cty.StringVal("hub")}, "hub_dir"},
		{"repo id with three parts", map[string]cty.Value{"repo_id": cty.StringVal("a/b/c")}, "repo_id"},
		{"repo id with --", map[string]cty.Value{"repo_id": cty.StringVal("a--b/c")}, "repo_id"},
		{"repo type", map[string]cty.Value{"repo_type": cty.StringVal("space")}, "repo_type"},
		{"revision escapes refs", map[string]cty.Value{"revision": cty.StringVal("../../x")}, "revision"},
		{"revision absolute", map[string]cty.Value{"revision": cty.StringVal("/etc/passwd")}, "revision"},
		{"target relative", map[string]cty.Value{"target": cty.StringVal("model")}, "target"},
		{"target unclean", map[string]cty.Value{"target": cty.StringVal("/model/../etc")}, "target"},
		{"target root", map[string]cty.Value{"target": cty.StringVal("/")}, "target"},
		{"manifest folder", map[string]cty.Value{"manifest_path": cty.StringVal("/tmp/")}, "manifest_path"},
		{"bad glob", map[string]cty.Value{"include": cty.ListVal([]cty.Value{cty.StringVal("[abc")})}, "include"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			attrs := map[string]cty.Value{}
			for k, v := range base {
				attrs[k] = v
			}
			for k, v := range tc.set {
				attrs[k] = v
			}
			diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: TypeManifest, Config: config(t, attrs)})
			if tc.bad == "" {
				if diags.HasErrors() {
					t.Fatalf("unexpected: %v", diags.Err())
				}
				return
			}
			if !diags.HasErrors() {
				t.Fatalf("want an error about %s", tc.bad)
			}
			if got := diags[0].Path; !got.Equals(sdk.AttrPath(tc.bad)) {
				t.Errorf("error path %#v, want %s (%v)", got, tc.bad, diags.Err())
			}
		})
	}
}

// The manifest file format, byte for byte, against a golden file.
func TestManifestGolden(t *testing.T) {
	n := testNodes(t)[0]
	h := newHub(t, t.TempDir())
	modelHub(t, h)
	s := &spec{HubDir: h.dir, RepoID: "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw", RepoType: "model", Revision: "main", Target: "/model"}
	res, err := resolveOn(t, n, s)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(string(FormatManifest(res.Entries)), h.real(h.dir), "$HUB")
	golden := filepath.Join("testdata", "manifest.golden")
	if *update {
		must(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	wantB, err := os.ReadFile(golden)
	must(t, err)
	if got != string(wantB) {
		t.Fatalf("manifest differs from %s (go test -update to accept):\n%s", golden, got)
	}
}

// The whole life of a manifest through the real gRPC protocol: create
// (file written), read (no drift), ref moves (drift, short summary, update
// plan with known files), apply, no-op plan, destroy (file removed).
func TestLifecycle(t *testing.T) {
	nodes := testNodes(t)
	p := provider(t, nodes)
	for _, n := range nodes {
		t.Run(n.name, func(t *testing.T) {
			h := newHub(t, t.TempDir())
			repo, c1, c2 := modelHub(t, h)
			mp := filepath.Join(n.dir, "sub", "mounts.txt")
			cfg := config(t, map[string]cty.Value{
				"hub_dir": cty.StringVal(h.dir), "repo_id": cty.StringVal("coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"),
				"target": cty.StringVal("/model"), "manifest_path": cty.StringVal(mp),
			})
			state, priv := sdktest.Create(t, p, TypeManifest, n.node, cfg)
			if got := state.GetAttr("commit").AsString(); got != c1 {
				t.Fatalf("commit %s, want %s", got, c1)
			}
			if got := state.GetAttr("file_count"); !got.RawEquals(cty.NumberIntVal(5)) {
				t.Fatalf("file_count %#v", got)
			}
			if got := state.GetAttr(SummaryAttribute).AsString(); got != "commit "+c1[:7]+": 5 files, 13 B" {
				t.Errorf("create summary %q", got)
			}
			written, err := os.ReadFile(mp)
			must(t, err)
			if string(written) != manifestOf(state) {
				t.Fatalf("manifest file:\n%s\nwant:\n%s", written, manifestOf(state))
			}
			if pl := sdktest.Plan(t, p, TypeManifest, n.node, state, priv, cfg); !pl.Planned.RawEquals(state) {
				t.Fatalf("second plan is not a no-op: %#v", pl.Planned)
			}

			// The ref moves: refresh reports it, plan updates in place.
			h.ref(repo, "main", c2)
			read := sdktest.Read(t, p, TypeManifest, n.node, state, priv)
			wantSummary := "commit " + c1[:7] + " -> " + c2[:7] + ", +1 files, -1 files, 1 changed"
			if got := read.NewState.GetAttr(SummaryAttribute).AsString(); got != wantSummary {
				t.Errorf("drift summary %q, want %q", got, wantSummary)
			}
			if !read.NewState.GetAttr("files").RawEquals(state.GetAttr("files")) {
				t.Errorf("refresh changed the applied files; it must only report the drift")
			}
			pl := sdktest.Plan(t, p, TypeManifest, n.node, read.NewState, read.Private, cfg)
			if pl.Planned.RawEquals(read.NewState) || len(pl.RequiresReplace) != 0 {
				t.Fatalf("want an in-place update, got replace=%v planned=%#v", pl.RequiresReplace, pl.Planned)
			}
			if !pl.Planned.GetAttr("files").IsWhollyKnown() || pl.Planned.GetAttr("commit").AsString() != c2 {
				t.Fatalf("planned files/commit must be known at plan time")
			}
			summary := pl.Planned.GetAttr(SummaryAttribute).AsString()
			if summary != wantSummary || len(summary) > 120 {
				t.Errorf("plan summary %q, want %q (short)", summary, wantSummary)
			}
			ap, _ := sdktest.Apply(t, p, TypeManifest, n.node, read.NewState, pl.Planned, cfg, pl.PlannedPrivate)
			if !ap.NewState.RawEquals(pl.Planned) {
				t.Fatalf("apply result differs from plan:\n%#v\n%#v", ap.NewState, pl.Planned)
			}
			written, err = os.ReadFile(mp)
			must(t, err)
			if string(written) != manifestOf(ap.NewState) || !strings.Contains(string(written), "/model/engrams/e1.bin") {
				t.Fatalf("manifest not rewritten:\n%s", written)
			}
			read = sdktest.Read(t, p, TypeManifest, n.node, ap.NewState, ap.Private)
			if !read.NewState.RawEquals(ap.NewState) {
				t.Fatalf("read after update shows drift: %#v", read.NewState)
			}
			if pl := sdktest.Plan(t, p, TypeManifest, n.node, read.NewState, read.Private, cfg); !pl.Planned.RawEquals(read.NewState) {
				t.Fatalf("plan after update is not a no-op")
			}

			// Someone deletes the manifest: refresh sees it, plan rewrites it.
			must(t, os.Remove(mp))
			read = sdktest.Read(t, p, TypeManifest, n.node, ap.NewState, ap.Private)
			if !read.NewState.GetAttr("manifest_sha256").IsNull() {
				t.Fatalf("missing manifest not observed")
			}
			pl = sdktest.Plan(t, p, TypeManifest, n.node, read.NewState, read.Private, cfg)
			if s := pl.Planned.GetAttr(SummaryAttribute).AsString(); !strings.Contains(s, "manifest_path rewritten") {
				t.Fatalf("plan summary %q does not say the manifest is rewritten", s)
			}
			ap, _ = sdktest.Apply(t, p, TypeManifest, n.node, read.NewState, pl.Planned, cfg, pl.PlannedPrivate)
			if _, err := os.Stat(mp); err != nil {
				t.Fatalf("manifest not rewritten: %v", err)
			}

			sdktest.Destroy(t, p, TypeManifest, n.node, ap.NewState, ap.Private)
			if _, err := os.Stat(mp); !os.IsNotExist(err) {
				t.Fatalf("destroy left %s (%v)", mp, err)
			}
		})
	}
}

func manifestOf(state cty.Value) string {
	var b strings.Builder
	for it := state.GetAttr("files").ElementIterator(); it.Next(); {
		_, e := it.Element()
		b.WriteString(e.GetAttr("source").AsString() + "\t" + e.GetAttr("target").AsString() + "\n")
	}
	return b.String()
}

// manifest_path ownership: a foreign file is refused, an identical one is
// adopted but not removed, and a file changed after apply is left alone.
func TestManifestOwnership(t *testing.T) {
	nodes := testNodes(t)
	p := provider(t, nodes)
	for _, n := range nodes {
		t.Run(n.name, func(t *testing.T) {
			h := newHub(t, t.TempDir())
			modelHub(t, h)
			mp := filepath.Join(n.dir, "mounts.txt")
			cfg := config(t, map[string]cty.Value{
				"hub_dir": cty.StringVal(h.dir), "repo_id": cty.StringVal("coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"),
				"target": cty.StringVal("/model"), "manifest_path": cty.StringVal(mp),
			})
			null := cty.NullVal(schema.Block.ImpliedType())

			// Foreign content: refused, and the file is untouched.
			must(t, os.WriteFile(mp, []byte("someone else's\n"), 0o644))
			pl := sdktest.Plan(t, p, TypeManifest, n.node, null, nil, cfg)
			resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: TypeManifest, Address: "a", Node: n.node, Prior: null, Planned: pl.Planned, Config: cfg}, nil)
			if !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics.Err().Error(), "remove it or choose another manifest_path") {
				t.Fatalf("want a refusal, got %v", resp.Diagnostics.Err())
			}
			if !resp.NewState.IsNull() {
				t.Fatalf("failed create must leave no state, got %#v", resp.NewState)
			}
			if b, _ := os.ReadFile(mp); string(b) != "someone else's\n" {
				t.Fatalf("foreign manifest was changed: %q", b)
			}

			// Identical content: adopted, and destroy leaves it.
			must(t, os.WriteFile(mp, FormatManifest(entriesOf(pl.Planned)), 0o644))
			ap, _ := sdktest.Apply(t, p, TypeManifest, n.node, null, pl.Planned, cfg, nil)
			sdktest.Destroy(t, p, TypeManifest, n.node, ap.NewState, ap.Private)
			if _, err := os.Stat(mp); err != nil {
				t.Fatalf("destroy removed a manifest this resource did not write: %v", err)
			}

			// Written by us, then edited: destroy warns and leaves it.
			must(t, os.Remove(mp))
			ap, _ = sdktest.Apply(t, p, TypeManifest, n.node, null, pl.Planned, cfg, nil)
			must(t, os.WriteFile(mp, []byte("edited\n"), 0o644))
			resp = p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: TypeManifest, Address: "a", Node: n.node, Prior: ap.NewState, Planned: null, Config: null, Private: ap.Private}, nil)
			if resp.Diagnostics.HasErrors() || len(resp.Diagnostics) != 1 || !resp.NewState.IsNull() {
				t.Fatalf("want a null state and one warning, got %#v %v", resp.NewState, resp.Diagnostics)
			}
			if b, _ := os.ReadFile(mp); string(b) != "edited\n" {
				t.Fatalf("edited manifest was removed or changed")
			}
		})
	}
}

func entriesOf(v cty.Value) []Entry {
	var es []Entry
	for it := v.GetAttr("files").ElementIterator(); it.Next(); {
		_, e := it.Element()
		es = append(es, Entry{Source: e.GetAttr("source").AsString(), Target: e.GetAttr("target").AsString()})
	}
	return es
}

// Refresh of many instances on a node is one remote command.
func TestReadBatchIsOneRoundTrip(t *testing.T) {
	nodes := testNodes(t)
	p := provider(t, nodes)
	for _, n := range nodes {
		t.Run(n.name, func(t *testing.T) {
			h := newHub(t, t.TempDir())
			modelHub(t, h)
			draft := h.repo("model", "coolbho3k/DeepSeek-V4.1-Flash-DSpark-EXL3-3bpw")
			h.snapshot(draft, commitOf("d"), map[string]string{"config.json": "{d}"}, true)
			h.ref(draft, "main", commitOf("d"))
			var items []sdk.ReadItem
			for i, id := range []string{"coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw", "coolbho3k/DeepSeek-V4.1-Flash-DSpark-EXL3-3bpw", "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"} {
				cfg := config(t, map[string]cty.Value{"hub_dir": cty.StringVal(h.dir), "repo_id": cty.StringVal(id), "target": cty.StringVal([]string{"/model", "/draft-exl3", "/m2"}[i])})
				st, pr := sdktest.Create(t, p, TypeManifest, n.node, cfg)
				items = append(items, sdk.ReadItem{TypeName: TypeManifest, Address: id, Prior: st, Private: pr})
			}
			resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n.node, Resources: items})
			if resp.Diagnostics.HasErrors() || resp.RoundTrips != 1 || len(resp.Results) != 3 {
				t.Fatalf("round trips %d, results %d, %v", resp.RoundTrips, len(resp.Results), resp.Diagnostics.Err())
			}
			for i, r := range resp.Results {
				if !r.NewState.RawEquals(items[i].Prior) {
					t.Errorf("instance %d drifted on a quiet hub", i)
				}
			}
		})
	}
}

// A no-op plan after a refresh makes no remote call of its own: Plan uses
// what Read resolved for the same spec on the same node, once; apply's
// re-plan of the instance resolves on the node again. (Each Plan resolved
// again: one round trip per instance on top of the refresh's one.)
func TestPlanAfterReadAddsNoRoundTrip(t *testing.T) {
	nodes := testNodes(t)
	p := provider(t, nodes)
	for _, n := range nodes {
		t.Run(n.name, func(t *testing.T) {
			h := newHub(t, t.TempDir())
			modelHub(t, h)
			var items []sdk.ReadItem
			var cfgs []cty.Value
			for i, target := range []string{"/model", "/m2"} {
				cfg := config(t, map[string]cty.Value{"hub_dir": cty.StringVal(h.dir), "repo_id": cty.StringVal("coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"), "target": cty.StringVal(target)})
				st, pr := sdktest.Create(t, p, TypeManifest, n.node, cfg)
				items = append(items, sdk.ReadItem{TypeName: TypeManifest, Address: fmt.Sprint(i), Prior: st, Private: pr})
				cfgs = append(cfgs, cfg)
			}
			resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n.node, Resources: items})
			if resp.Diagnostics.HasErrors() || resp.RoundTrips != 1 {
				t.Fatalf("read: round trips %d, %v", resp.RoundTrips, resp.Diagnostics.Err())
			}
			before := n.conn.RoundTrips()
			for i, r := range resp.Results {
				pr := sdktest.Plan(t, p, TypeManifest, n.node, r.NewState, r.Private, cfgs[i])
				if pr.Diagnostics.HasErrors() || !sdk.ValuesEqual(pr.Planned, r.NewState) {
					t.Fatalf("instance %d: not a no-op plan: %v", i, pr.Diagnostics.Err())
				}
			}
			if d := n.conn.RoundTrips() - before; d != 0 {
				t.Fatalf("the plans after a refresh made %d round trips, want 0", d)
			}
			pr := sdktest.Plan(t, p, TypeManifest, n.node, resp.Results[0].NewState, resp.Results[0].Private, cfgs[0])
			if pr.Diagnostics.HasErrors() || n.conn.RoundTrips()-before != 1 {
				t.Fatalf("a second plan of an instance must resolve on the node again (round trips %d), %v", n.conn.RoundTrips()-before, pr.Diagnostics.Err())
			}
		})
	}
}

// Unknown config (a hub_dir from another resource) plans unknown
// computed values without touching the node; a broken hub at plan time is
// an error naming the file; a hub that changes after plan fails apply.
func TestPlanEdges(t *testing.T) {
	nodes := testNodes(t)[:1]
	p := provider(t, nodes)
	n := nodes[0]
	null := cty.NullVal(schema.Block.ImpliedType())
	cfg := config(t, map[string]cty.Value{"hub_dir": cty.UnknownVal(cty.String), "repo_id": cty.StringVal("o/m"), "target": cty.StringVal("/model")})
	pl := sdktest.Plan(t, p, TypeManifest, n.node, null, nil, cfg)
	if pl.Planned.GetAttr("files").IsKnown() || pl.Planned.GetAttr("commit").IsKnown() {
		t.Fatalf("computed values must be unknown with an unknown config")
	}

	h := newHub(t, t.TempDir())
	repo, _, c2 := modelHub(t, h)
	cfg = config(t, map[string]cty.Value{"hub_dir": cty.StringVal(h.dir), "repo_id": cty.StringVal("coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"), "target": cty.StringVal("/model")})
	pl = sdktest.Plan(t, p, TypeManifest, n.node, null, nil, cfg)
	h.ref(repo, "main", c2)
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: TypeManifest, Address: "a", Node: n.node, Prior: null, Planned: pl.Planned, Config: cfg}, nil)
	if !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics.Err().Error(), "run plan again") {
		t.Fatalf("want a changed-since-plan error, got %v", resp.Diagnostics.Err())
	}

	must(t, os.Remove(filepath.Join(repo, "blobs", sum("e1"))))
	r := resourceFor(nodes)
	presp := r.Plan(context.Background(), sdk.PlanRequest{TypeName: TypeManifest, Node: n.node, Prior: null, Config: cfg, Proposed: sdk.ProposedNew(schema.Block, null, cfg)})
	if !presp.Diagnostics.HasErrors() || !strings.Contains(presp.Diagnostics.Err().Error(), "engrams/e1.bin") {
		t.Fatalf("want a dangling error naming engrams/e1.bin, got %v", presp.Diagnostics.Err())
	}
}

// sshHub is modelHub's hub on this machine and a one-node test bed whose
// sshd reads it.
type sshHub struct {
	bed  *testbed.Bed
	pool *node.Pool
	repo string
	cfg  cty.Value
}

func newSSHHub(t *testing.T) *sshHub {
	bed := testbed.StartT(t, 1) // fails under CI, skips elsewhere, without a test bed
	pool := node.NewPool()
	t.Cleanup(func() { pool.Close() })
	h := newHub(t, t.TempDir())
	repo, _, _ := modelHub(t, h)
	cfg := config(t, map[string]cty.Value{"hub_dir": cty.StringVal(h.dir), "repo_id": cty.StringVal("coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"), "target": cty.StringVal("/model")})
	return &sshHub{bed: bed, pool: pool, repo: repo, cfg: cfg}
}

// lock makes folder rel of the repo root's alone (0700) for the test.
func (s *sshHub) lock(t *testing.T, rel string) {
	must(t, os.Chmod(filepath.Join(s.repo, rel), 0o700))
	t.Cleanup(func() { os.Chmod(filepath.Join(s.repo, rel), 0o755) })
}

// read creates the manifest's state as root (a local node of the same
// name) and refreshes it over SSH as n; it returns the prior and the
// response.
func (s *sshHub) read(t *testing.T, n sdk.Node) (cty.Value, sdk.ReadResponse) {
	c, err := s.pool.Get(context.Background(), n)
	must(t, err)
	p := provider(t, []testNode{{name: "sshd", node: n, conn: c, dir: s.bed.Nodes[0].Root}})
	local := sdk.Node{Name: n.Name, Transport: "local"}
	st, pr := sdktest.Create(t, provider(t, []testNode{{name: "root", node: local, conn: node.NewLocal(n.Name)}}), TypeManifest, local, s.cfg)
	return st, p.ReadResources(context.Background(), sdk.ReadRequest{Node: n, Resources: []sdk.ReadItem{{TypeName: TypeManifest, Address: "m", Prior: st, Private: pr}}})
}

// TestBecomeReadsAsUserFirst: with become, refresh walks the hub as the
// login user (a hub is normally theirs to read): it works for a user sudo
// refuses, in one round trip, so no sudo ran. Where the user cannot read
// part of the hub, or enter the snapshot folder, it walks again through
// sudo and finds the same files, without a complaint: two round trips.
func TestBecomeReadsAsUserFirst(t *testing.T) {
	hub := newSSHHub(t)
	for _, tc := range []struct {
		name string
		user string
		// locked is a folder of the repo made root's: "" for none.
		locked string
		trips  int
	}{
		{"readable hub, user without sudo", hub.bed.NoSudoUser, "", 1},
		{"unreadable folder, sudo user", hub.bed.User, "snapshots", 2},
		{"snapshot folder it cannot enter, sudo user", hub.bed.User, "snapshots/" + commitOf("c1"), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := hub.bed.Nodes[0].SDK()
			n.User, n.Become = tc.user, true
			if tc.locked != "" {
				hub.lock(t, tc.locked)
			}
			st, resp := hub.read(t, n)
			if resp.Diagnostics.HasErrors() || len(resp.Results) != 1 {
				t.Fatalf("read: %v", resp.Diagnostics.Err())
			}
			if r := resp.Results[0]; len(r.Diagnostics) > 0 || !r.NewState.RawEquals(st) {
				t.Fatalf("read %v: drift or complaints on a quiet hub", r.Diagnostics)
			}
			if resp.RoundTrips != tc.trips {
				t.Fatalf("round trips %d, want %d", resp.RoundTrips, tc.trips)
			}
		})
	}
}

// TestUnenterableSnapshotSaysSo: without become, a snapshot folder the
// user cannot enter is refused as that, not as a missing snapshot (the
// walk starts inside the folder since it runs realpath on short paths).
func TestUnenterableSnapshotSaysSo(t *testing.T) {
	hub := newSSHHub(t)
	c1 := commitOf("c1")
	hub.lock(t, "snapshots/"+c1)
	_, resp := hub.read(t, hub.bed.Nodes[0].SDK())
	if resp.Diagnostics.HasErrors() || len(resp.Results) != 1 {
		t.Fatalf("read: %v", resp.Diagnostics.Err())
	}
	d := resp.Results[0].Diagnostics
	if len(d) != 1 {
		t.Fatalf("diagnostics %v, want one warning", d)
	}
	msg := d[0].Summary + ": " + d[0].Detail
	for _, w := range []string{"snapshots/" + c1, "cannot enter the folder"} {
		if !strings.Contains(msg, w) {
			t.Errorf("warning %q does not say %q", msg, w)
		}
	}
	if strings.Contains(msg, "does not exist") || strings.Contains(msg, ErrNoSnapshot.Error()) {
		t.Errorf("warning %q calls the snapshot missing", msg)
	}
}
