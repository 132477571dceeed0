package gitkit_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/sdk"
)

const goodCommit = "878e0eecd893fadc69ad2d58b2df0fabb0fae2ee"

func TestValidate(t *testing.T) {
	unknown := cty.UnknownVal(cty.String)
	with := func(attr string, v cty.Value) cty.Value {
		m := config("https://example.com/kit.git", goodCommit, "release/runtime", "/home/u/kit").AsValueMap()
		m[attr] = v
		return cty.ObjectVal(m)
	}
	s := cty.StringVal
	tests := []struct {
		name    string
		cfg     cty.Value
		wantErr string // substring of the error; "" means valid
	}{
		{"valid", with("commit", s(goodCommit)), ""},
		{"valid whole tree", with("subdir", cty.NullVal(cty.String)), ""},
		{"unknown values pass", cty.ObjectVal(map[string]cty.Value{"repo": unknown, "commit": unknown, "subdir": unknown, "path": unknown, "tree_digest": unknown}), ""},
		{"short commit", with("commit", s("878e0ee")), `full 40-character lowercase hex commit id (e.g. 878e0eecd893fadc69ad2d58b2df0fabb0fae2ee), got "878e0ee"`},
		{"branch", with("commit", s("main")), `got "main"; short ids, branches and tags are refused`},
		{"upper case", with("commit", s(strings.ToUpper(goodCommit))), "lowercase hex"},
		{"41 hex", with("commit", s(goodCommit+"0")), "full 40-character"},
		{"missing commit", with("commit", cty.NullVal(cty.String)), `needs "commit"`},
		{"relative path", with("path", s("kit")), `path "kit" must be absolute`},
		{"unclean path", with("path", s("/home/u/../kit/")), `not a clean path; write "/home/kit"`},
		{"root path", with("path", s("/")), "must not be /"},
		{"subdir escapes", with("subdir", s("../etc")), "leaves the repository"},
		{"absolute subdir", with("subdir", s("/release")), "must be relative"},
		{"subdir into .git", with("subdir", s(".git/hooks")), "points into .git"},
		{"empty subdir", with("subdir", s("")), "omit it to stage the whole tree"},
		{"empty repo", with("repo", s(" ")), "repo is empty"},
		{"option repo", with("repo", s("--upload-pack=touch /tmp/x")), "would be read as a git option"},
	}
	p := gitkit.New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: gitkit.TypeCheckout, Config: tc.cfg})
			if tc.wantErr == "" {
				if diags.HasErrors() {
					t.Fatalf("unexpected error: %v", diags.Err())
				}
				return
			}
			if !diags.HasErrors() {
				t.Fatalf("no error, want one containing %q", tc.wantErr)
			}
			if err := diags.Err().Error(); !strings.Contains(err, tc.wantErr) {
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
			if len(diags[0].Path) == 0 {
				t.Errorf("diagnostic has no attribute path")
			}
		})
	}
}

// forEach runs fn for every provider transport x node.
func forEach(t *testing.T, fn func(t *testing.T, p sdk.Provider, n testNode)) {
	nodes := testNodes(t)
	for pname, p := range providers(t) {
		for _, n := range nodes {
			n.dir = filepath.Join(n.dir, pname) // the transports share the node's folder
			t.Run(pname+"/"+n.name, func(t *testing.T) { fn(t, p, n) })
		}
	}
}

func TestLifecycle(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	cases := []struct {
		name, repo, subdir string
		wantFiles          []string // relative to path
		wantStage          string
	}{
		{"path subdir", fx.bare, "release/runtime", []string{"serving/serve.py", "serving/conservative.yaml", "aot/gemm.bin", "serve"}, "staging release/runtime"},
		{"url subdir", fx.url, "release/runtime", []string{"serving/serve.py"}, "staging release/runtime"},
		{"url whole tree", fx.url, "", []string{"README.md", "release/runtime/serving/serve.py"}, "staging the whole tree"},
	}
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				parent := filepath.Join(n.dir, "life", string(rune('a'+i)))
				path := filepath.Join(parent, "878e0ee")
				in := newInstance(t, p, n.node, "gitkit_checkout.kit")
				cfg := config(tc.repo, fx.c1, tc.subdir, path)

				// Create.
				pr := in.plan(cfg)
				if pr.Diagnostics.HasErrors() {
					t.Fatal(pr.Diagnostics.Err())
				}
				if d := digestOf(pr.Planned); d != "(unknown)" {
					t.Errorf("planned tree_digest on create = %s, want unknown", d)
				}
				resp, events := in.apply(cfg, pr)
				if resp.Diagnostics.HasErrors() {
					t.Fatal(resp.Diagnostics.Err())
				}
				// git's own fetch progress comes between cloning and checking
				// out, counted in objects: the phases, not every percent.
				wantEvents := []string{"cloning " + tc.repo, "checking out " + fx.c1, tc.wantStage}
				var phases []string
				var fetching []string
				for _, e := range events {
					if strings.HasPrefix(e, "fetching: ") {
						fetching = append(fetching, e)
						continue
					}
					phases = append(phases, e)
				}
				if !reflect.DeepEqual(phases, wantEvents) {
					t.Errorf("progress = %q, want %q with git's fetch progress between", events, wantEvents)
				}
				if len(fetching) == 0 || len(fetching) > 12 || !slices.Contains(fetching, "fetching: counting objects") {
					t.Errorf("git fetch progress = %q, want a few 'fetching: ...' phase events", fetching)
				}
				applied := digestOf(in.state)
				if !strings.HasPrefix(applied, "sha256:") || len(applied) != len("sha256:")+64 {
					t.Fatalf("tree_digest = %q", applied)
				}
				for _, f := range tc.wantFiles {
					if !n.exists(filepath.Join(path, f)) {
						t.Errorf("staged tree lacks %s", f)
					}
				}
				if n.exists(filepath.Join(path, ".git")) {
					t.Errorf("staged tree has .git")
				}
				if got := n.list(t, parent); !reflect.DeepEqual(got, []string{"878e0ee"}) {
					t.Errorf("parent holds %q, want only the checkout", got)
				}

				// Read and an idempotent plan.
				if rr := in.refresh(); rr.RoundTrips != 1 {
					t.Errorf("read took %d round trips, want 1", rr.RoundTrips)
				}
				if d := digestOf(in.state); d != applied {
					t.Errorf("read digest %s, applied %s", d, applied)
				}
				if pr := in.plan(cfg); !sdk.ValuesEqual(pr.Planned, in.state) || len(pr.RequiresReplace) > 0 {
					t.Errorf("plan after apply is not a no-op: planned %#v", pr.Planned)
				}

				// Drift: a file edited on the node.
				edited := filepath.Join(path, tc.wantFiles[len(tc.wantFiles)-1])
				if tc.subdir != "" {
					edited = filepath.Join(path, "serving/serve.py")
				}
				n.write(t, edited, "hacked\n")
				in.refresh()
				if d := digestOf(in.state); d == applied {
					t.Fatalf("edited file not seen: digest unchanged")
				}
				pr = in.plan(cfg)
				if len(pr.RequiresReplace) > 0 || digestOf(pr.Planned) != applied {
					t.Fatalf("drift plan: replace %v, planned digest %s, want update to %s", pr.RequiresReplace, digestOf(pr.Planned), applied)
				}
				in.converge(cfg)
				if n.read(t, edited) == "hacked\n" {
					t.Errorf("converge left the edit in place")
				}
				in.refresh()
				if d := digestOf(in.state); d != applied {
					t.Errorf("after converge digest %s, want %s", d, applied)
				}
				if pr := in.plan(cfg); !sdk.ValuesEqual(pr.Planned, in.state) {
					t.Errorf("plan after converge is not a no-op")
				}
				if got := n.list(t, parent); !reflect.DeepEqual(got, []string{"878e0ee"}) {
					t.Errorf("after converge parent holds %q", got)
				}

				// A commit change replaces.
				pr = in.plan(config(tc.repo, fx.c2, tc.subdir, path))
				if !reflect.DeepEqual(pr.RequiresReplace, []cty.Path{cty.GetAttrPath("commit")}) {
					t.Errorf("commit change: RequiresReplace = %#v", pr.RequiresReplace)
				}

				// The create half of that replace (the engine sends the old
				// object as Replaces): the tree at path is ours, no refusal.
				newCfg := config(tc.repo, fx.c2, tc.subdir, path)
				cr := p.PlanResourceChange(context.Background(), sdk.PlanRequest{
					TypeName: gitkit.TypeCheckout, Address: in.addr, Node: n.node, Prior: nullObj(), Config: newCfg,
					Proposed: sdk.ProposedNew(block(t, p), nullObj(), newCfg), Replaces: in.state,
				})
				if cr.Diagnostics.HasErrors() {
					t.Errorf("create half of a replace refused: %v", cr.Diagnostics.Err())
				}
				cr = p.PlanResourceChange(context.Background(), sdk.PlanRequest{
					TypeName: gitkit.TypeCheckout, Address: in.addr, Node: n.node, Prior: nullObj(), Config: newCfg,
					Proposed: sdk.ProposedNew(block(t, p), nullObj(), newCfg), Replaces: nullObj(),
				})
				if !cr.Diagnostics.HasErrors() {
					t.Errorf("create over our tree without Replaces was not refused")
				}

				// Destroy.
				resp, _ = in.apply(cty.NullVal(objType), sdk.PlanResponse{Planned: cty.NullVal(objType), PlannedPrivate: in.priv})
				if resp.Diagnostics.HasErrors() || !in.state.IsNull() {
					t.Fatalf("destroy: state %#v, %v", in.state, resp.Diagnostics.Err())
				}
				// The create made parent (mkdir -p): destroy removes it again.
				if n.exists(parent) {
					t.Errorf("after destroy the parent folder the create made is still there (holding %q)", n.list(t, parent))
				}
			})
		}
	})
}

func TestDriftKinds(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	drifts := []struct {
		name string
		argv []string // run on the node; KIT is replaced by the path
	}{
		{"exec bit dropped", []string{"chmod", "a-x", "KIT/serving/serve.py"}},
		{"file added", []string{"touch", "KIT/extra"}},
		{"file removed", []string{"rm", "KIT/aot/gemm.bin"}},
		{"content changed, same size", []string{"sh", "-c", "printf 'max_num_seqs: 6\\n' >KIT/serving/conservative.yaml"}},
		{"empty dir added", []string{"mkdir", "KIT/cache"}},
		{"symlink retargeted", []string{"ln", "-sfn", "serving/conservative.yaml", "KIT/serve"}},
		{"replaced by a file", []string{"sh", "-c", "rm -rf KIT && echo x >KIT"}},
		{"replaced by a symlink", []string{"sh", "-c", "rm -rf KIT && ln -s / KIT"}},
	}
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		for i, d := range drifts {
			t.Run(d.name, func(t *testing.T) {
				path := filepath.Join(n.dir, "drift", string(rune('a'+i)), "kit")
				in := newInstance(t, p, n.node, "gitkit_checkout.kit")
				cfg := config(fx.bare, fx.c1, "release/runtime", path)
				in.converge(cfg)
				applied := digestOf(in.state)
				argv := make([]string, len(d.argv))
				for i, a := range d.argv {
					argv[i] = strings.ReplaceAll(a, "KIT", path)
				}
				n.run(t, argv...)
				in.refresh()
				if in.state.IsNull() || digestOf(in.state) == applied {
					t.Fatalf("drift not seen: state %#v", in.state)
				}
				pr := in.plan(cfg)
				if digestOf(pr.Planned) != applied || len(pr.RequiresReplace) > 0 {
					t.Fatalf("plan = %s (replace %v), want update to %s", digestOf(pr.Planned), pr.RequiresReplace, applied)
				}
				in.converge(cfg)
				in.refresh()
				if digestOf(in.state) != applied {
					t.Errorf("not converged: %s != %s", digestOf(in.state), applied)
				}
			})
		}
	})
}

func TestReadGoneIsNull(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		// The parent exists: the create makes no folder, so no restore
		// record names anything (with one, see
		// TestInterruptedDestroyFinishesCleanup).
		path := filepath.Join(n.dir, "gone", "kit")
		n.run(t, "mkdir", "-p", filepath.Dir(path))
		in := newInstance(t, p, n.node, "gitkit_checkout.kit")
		cfg := config(fx.url, fx.c1, "", path)
		in.converge(cfg)
		n.run(t, "rm", "-rf", path)
		in.refresh()
		if !in.state.IsNull() {
			t.Fatalf("read of a removed path = %#v, want null", in.state)
		}
		// The engine then plans a create, and apply brings it back.
		in.converge(cfg)
		if !n.exists(filepath.Join(path, "README.md")) {
			t.Fatal("not re-created")
		}
	})
}

func TestRefuseForeignPath(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		for _, kind := range []string{"directory", "file"} {
			t.Run(kind, func(t *testing.T) {
				parent := filepath.Join(n.dir, "foreign", kind)
				path := filepath.Join(parent, "kit")
				if kind == "directory" {
					n.write(t, filepath.Join(path, "precious"), "mine\n")
				} else {
					n.write(t, path, "mine\n")
				}
				in := newInstance(t, p, n.node, "gitkit_checkout.kit")
				cfg := config(fx.bare, fx.c1, "release/runtime", path)
				pr := in.plan(cfg)
				if !pr.Diagnostics.HasErrors() {
					t.Fatal("plan accepted a path that sparkform did not create")
				}
				msg := pr.Diagnostics.Err().Error()
				for _, want := range []string{path + " already exists", "a " + kind, "sparkform did not create it", "refusing to create over it"} {
					if !strings.Contains(msg, want) {
						t.Errorf("plan error %q lacks %q", msg, want)
					}
				}
				// Apply checks again (the engine may apply a plan made earlier).
				resp, _ := in.apply(cfg, sdk.PlanResponse{Planned: pr.Planned})
				if !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics.Err().Error(), "sparkform did not create it") {
					t.Fatalf("apply over a foreign path: %v", resp.Diagnostics.Err())
				}
				if !in.state.IsNull() {
					t.Errorf("state after refused create = %#v, want null", in.state)
				}
				precious := path
				if kind == "directory" {
					precious = filepath.Join(path, "precious")
				}
				if got := n.read(t, precious); got != "mine\n" {
					t.Errorf("foreign files touched: %q", got)
				}
				if got := n.list(t, parent); !reflect.DeepEqual(got, []string{"kit"}) {
					t.Errorf("parent holds %q", got)
				}
			})
		}
	})
}

func TestApplyFailuresLeaveNothing(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	missing := "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name, repo, commit, subdir string
		want                       []string
		sentinel                   error
		notWant                    string
	}{
		{"refused https with a token", "https://kit:s3cret@127.0.0.1:1/kit.git", fx.c1, "", []string{"cannot fetch repo https://kit:xxxxx@127.0.0.1:1/kit.git"}, gitkit.ErrRepoUnreachable, "s3cret"},
		{"unreachable repo", "/nonexistent/kit.git", fx.c1, "", []string{"cannot fetch repo /nonexistent/kit.git", "does not appear to be a git repository"}, gitkit.ErrRepoUnreachable, ""},
		{"unreachable url", "file:///nonexistent/kit.git", fx.c1, "", []string{"cannot fetch repo file:///nonexistent/kit.git"}, gitkit.ErrRepoUnreachable, ""},
		{"unknown commit", fx.bare, missing, "", []string{"commit " + missing + " is not in repo " + fx.bare}, gitkit.ErrCommitNotFound, ""},
		{"missing subdir", fx.url, fx.c1, "release/nope", []string{`subdir "release/nope" is not a directory at commit ` + fx.c1 + " of repo " + fx.url}, gitkit.ErrSubdirMissing, ""},
		{"subdir is a file", fx.url, fx.c1, "README.md", []string{`subdir "README.md" is not a directory`}, gitkit.ErrSubdirMissing, ""},
	}
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				parent := filepath.Join(n.dir, "fail", string(rune('a'+i)))
				n.run(t, "mkdir", "-p", parent)
				in := newInstance(t, p, n.node, "gitkit_checkout.kit")
				cfg := config(tc.repo, tc.commit, tc.subdir, filepath.Join(parent, "kit"))
				pr := in.plan(cfg)
				if pr.Diagnostics.HasErrors() {
					t.Fatal(pr.Diagnostics.Err())
				}
				resp, _ := in.apply(cfg, pr)
				if !resp.Diagnostics.HasErrors() {
					t.Fatal("apply succeeded")
				}
				msg := resp.Diagnostics.Err().Error()
				for _, w := range append(tc.want, tc.sentinel.Error()) {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q lacks %q", msg, w)
					}
				}
				if tc.notWant != "" && strings.Contains(msg, tc.notWant) {
					t.Errorf("error %q shows %q", msg, tc.notWant)
				}
				if !in.state.IsNull() {
					t.Errorf("state after failed create = %#v, want null", in.state)
				}
				if got := n.list(t, parent); len(got) != 0 {
					t.Errorf("failed apply left %q in the parent folder", got)
				}
			})
		}
	})
}

func TestReadBatch(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		var items []sdk.ReadItem
		var want []string
		for i, sub := range []string{"release/runtime", "", "release/runtime/serving"} {
			in := newInstance(t, p, n.node, "gitkit_checkout.k")
			in.converge(config(fx.bare, fx.c1, sub, filepath.Join(n.dir, "batch", string(rune('a'+i)))))
			items = append(items, sdk.ReadItem{TypeName: gitkit.TypeCheckout, Address: "k", Prior: in.state, Private: in.priv})
			want = append(want, digestOf(in.state))
		}
		// One that is gone, in the middle.
		gone := items[1]
		gone.Prior = withPath(gone.Prior, filepath.Join(n.dir, "batch", "gone"))
		items = append(items[:2], append([]sdk.ReadItem{gone}, items[2:]...)...)
		want = append(want[:2], append([]string{"(gone)"}, want[2:]...)...)

		present := []sdk.ReadItem{items[0], items[1], items[3]}
		if resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n.node, Resources: present}); resp.Diagnostics.HasErrors() || resp.RoundTrips != 1 {
			t.Errorf("round trips = %d, want 1 for %d checkouts (%v)", resp.RoundTrips, len(present), resp.Diagnostics.Err())
		}
		resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n.node, Resources: items})
		if resp.Diagnostics.HasErrors() {
			t.Fatal(resp.Diagnostics.Err())
		}
		// A path that is gone costs one more, for all of them: whether
		// its restore record is still on the node.
		if resp.RoundTrips != 2 {
			t.Errorf("round trips = %d, want 2 for %d checkouts, one gone", resp.RoundTrips, len(items))
		}
		var got []string
		for _, r := range resp.Results {
			if r.NewState.IsNull() {
				got = append(got, "(gone)")
			} else {
				got = append(got, digestOf(r.NewState))
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("digests %q, want %q", got, want)
		}
		if want[0] == want[1] || want[0] == want[3] {
			t.Errorf("different trees have equal digests: %q", want)
		}
	})
}

func withPath(v cty.Value, path string) cty.Value {
	m := v.AsValueMap()
	m["path"] = cty.StringVal(path)
	return cty.ObjectVal(m)
}

func TestImport(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	forEach(t, func(t *testing.T, p sdk.Provider, n testNode) {
		path := filepath.Join(n.dir, "import", "kit")
		cfg := config(fx.url, fx.c1, "release/runtime", path)
		// A tree staged earlier (state lost): adopt it.
		orig := newInstance(t, p, n.node, "gitkit_checkout.kit")
		orig.converge(cfg)

		ir := p.ImportResource(context.Background(), sdk.ImportRequest{TypeName: gitkit.TypeCheckout, Node: n.node,
			ID: path + "," + fx.url + "," + fx.c1 + ",release/runtime"})
		if ir.Diagnostics.HasErrors() {
			t.Fatal(ir.Diagnostics.Err())
		}
		in := newInstance(t, p, n.node, "gitkit_checkout.kit")
		in.state, in.priv = ir.State, ir.Private
		if digestOf(in.state) != digestOf(orig.state) {
			t.Errorf("imported digest %s, want %s", digestOf(in.state), digestOf(orig.state))
		}
		if pr := in.plan(cfg); !sdk.ValuesEqual(pr.Planned, in.state) || pr.Diagnostics.HasErrors() {
			t.Errorf("plan after import is not a no-op: %#v %v", pr.Planned, pr.Diagnostics.Err())
		}
		// Importing as the other commit: the tree differs, plan shows drift.
		ir = p.ImportResource(context.Background(), sdk.ImportRequest{TypeName: gitkit.TypeCheckout, Node: n.node,
			ID: path + "," + fx.url + "," + fx.c2 + ",release/runtime"})
		if ir.Diagnostics.HasErrors() {
			t.Fatal(ir.Diagnostics.Err())
		}
		in.state, in.priv = ir.State, ir.Private
		cfg2 := config(fx.url, fx.c2, "release/runtime", path)
		pr := in.plan(cfg2)
		if digestOf(pr.Planned) == digestOf(in.state) {
			t.Errorf("tree of c1 imported as c2 plans no change")
		}
		in.converge(cfg2)
		if n.read(t, filepath.Join(path, "NEW")) != "new\n" {
			t.Errorf("converge after import did not stage c2")
		}
		if got := n.list(t, filepath.Dir(path)); !reflect.DeepEqual(got, []string{"kit"}) {
			t.Errorf("parent holds %q", got)
		}
		for _, bad := range []string{path, path + ",x", "rel," + fx.url + "," + fx.c1, path + "," + fx.url + ",abc"} {
			if ir := p.ImportResource(context.Background(), sdk.ImportRequest{TypeName: gitkit.TypeCheckout, Node: n.node, ID: bad}); !ir.Diagnostics.HasErrors() {
				t.Errorf("import id %q accepted", bad)
			}
		}
	})
}

func TestPlanUnknownPath(t *testing.T) {
	// A path computed from another resource is unknown at plan time: no
	// node check, no error; apply checks.
	p := gitkit.New()
	in := newInstance(t, p, sdk.Node{Name: "node.unreachable", Transport: "ssh", Host: "192.0.2.1", Port: 22}, "k")
	cfg := config("https://example.com/x.git", goodCommit, "", "/x")
	m := cfg.AsValueMap()
	m["path"] = cty.UnknownVal(cty.String)
	pr := in.plan(cty.ObjectVal(m))
	if pr.Diagnostics.HasErrors() {
		t.Fatalf("plan with unknown path: %v", pr.Diagnostics.Err())
	}
	if pr.Planned.GetAttr("path").IsKnown() {
		t.Errorf("planned path should stay unknown")
	}
}

// TestRepoOwnedByAnotherUser: a local repo owned by someone else (a shared
// mirror) trips git's "dubious ownership" check; the repo named in config
// is trusted for the fetch, and only it.
func TestRepoOwnedByAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		realpart.Missing(t, "root, to hand the repo to another user (CI runs as root)")
	}
	fx := newFixture(t, t.TempDir())
	if err := filepath.Walk(fx.bare, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
	nodes := testNodes(t)
	p := gitkit.New()
	for _, repo := range []string{fx.bare, fx.url} {
		n := nodes[0]
		in := newInstance(t, p, n.node, "gitkit_checkout.kit")
		path := filepath.Join(n.dir, "foreign-owner", filepath.Base(repo)+strconv.Itoa(len(repo)))
		in.converge(config(repo, fx.c1, "release/runtime", path))
		if !n.exists(filepath.Join(path, "serving/serve.py")) {
			t.Errorf("%s: not staged", repo)
		}
	}
}
