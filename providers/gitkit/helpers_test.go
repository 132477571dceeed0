package gitkit_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// fixture is a real bare git repository made by the test.
type fixture struct {
	bare string // path of the bare repo
	url  string // file:// URL of the same repo
	c1   string // first commit: release/runtime with serving/serve.py (exec), a symlink
	c2   string // second commit: serve.py changed, a file added
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask-proof
		t.Fatal(err)
	}
}

// newFixture builds the repo under dir (which the nodes must be able to read).
func newFixture(t testing.TB, dir string) fixture {
	t.Helper()
	_, err := exec.LookPath("git")
	realpart.Need(t, "git", err)
	// Nodes log in as other users: the repo must be readable by them.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work := filepath.Join(dir, "work")
	git(t, dir, "init", "-q", "-b", "main", work)
	writeFile(t, filepath.Join(work, "README.md"), "kit\n", 0o644)
	writeFile(t, filepath.Join(work, "release/runtime/serving/serve.py"), "#!/usr/bin/env python3\nprint('v1')\n", 0o755)
	writeFile(t, filepath.Join(work, "release/runtime/serving/conservative.yaml"), "max_num_seqs: 2\n", 0o644)
	writeFile(t, filepath.Join(work, "release/runtime/aot/gemm.bin"), "\x00\x01\x02", 0o644)
	if err := os.Symlink("serving/serve.py", filepath.Join(work, "release/runtime/serve")); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "-A")
	git(t, work, "commit", "-q", "-m", "v1")
	c1 := git(t, work, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(work, "release/runtime/serving/serve.py"), "#!/usr/bin/env python3\nprint('v2')\n", 0o755)
	writeFile(t, filepath.Join(work, "release/runtime/NEW"), "new\n", 0o644)
	git(t, work, "add", "-A")
	git(t, work, "commit", "-q", "-m", "v2")
	c2 := git(t, work, "rev-parse", "HEAD")
	bare := filepath.Join(dir, "kit.git")
	git(t, dir, "clone", "-q", "--bare", work, bare)
	return fixture{bare: bare, url: "file://" + bare, c1: c1, c2: c2}
}

// testNode is a node the tests run on, with a folder on it they may use.
// Files on the node are changed and inspected through the node's own
// connection (as its user), as someone logged in there would.
type testNode struct {
	name string
	node sdk.Node
	dir  string // a fresh folder writable by the node's user
	conn node.Conn
}

// testNodes lists the nodes every lifecycle test runs on: the local node
// and two real sshd nodes (internal/testbed) logged in as a non-root user.
func testNodes(t *testing.T) []testNode {
	t.Helper()
	pool := node.NewPool()
	t.Cleanup(func() { pool.Close() })
	nodes := []testNode{{name: "local", node: sdk.Node{Name: "node.local", Transport: "local"}, dir: t.TempDir()}}
	bed := testbed.StartT(t, 1)
	for _, bn := range bed.Nodes {
		nodes = append(nodes, testNode{name: "sshd-" + bn.Name, node: bn.SDK(), dir: bn.Root})
	}
	var usable []testNode
	for _, n := range nodes {
		c, err := pool.Get(context.Background(), n.node)
		if err != nil {
			t.Fatalf("node %s: %v", n.name, err)
		}
		n.conn = c
		usable = append(usable, n)
	}
	return usable
}

func (n testNode) run(t testing.TB, argv ...string) {
	t.Helper()
	if _, err := n.conn.Run(context.Background(), node.Cmd{Argv: argv}); err != nil {
		t.Fatalf("on %s: %v", n.name, err)
	}
}

func (n testNode) write(t testing.TB, path, content string) {
	t.Helper()
	n.run(t, "mkdir", "-p", filepath.Dir(path))
	if err := n.conn.WriteFile(context.Background(), path, []byte(content), 0o644); err != nil {
		t.Fatalf("on %s: %v", n.name, err)
	}
}

func (n testNode) read(t testing.TB, path string) string {
	t.Helper()
	b, err := n.conn.ReadFile(context.Background(), path)
	if err != nil {
		t.Fatalf("on %s: %v", n.name, err)
	}
	return string(b)
}

func (n testNode) exists(path string) bool {
	_, err := n.conn.Lstat(context.Background(), path)
	return err == nil
}

// list is the sorted names in dir on the node (hidden ones included).
func (n testNode) list(t testing.TB, dir string) []string {
	t.Helper()
	fis, err := n.conn.ReadDir(context.Background(), dir)
	if err != nil {
		t.Fatalf("on %s: %v", n.name, err)
	}
	var names []string
	for _, fi := range fis {
		names = append(names, fi.Name())
	}
	sort.Strings(names)
	return names
}

// providers lists the ways the tests reach the provider.
func providers(t *testing.T) map[string]sdk.Provider {
	t.Helper()
	return map[string]sdk.Provider{"direct": gitkit.New(), "grpc": sdktest.GRPC(t, gitkit.New())}
}

var objType = func() cty.Type {
	s, _ := gitkit.New().GetSchema(context.Background())
	return s.ResourceTypes[gitkit.TypeCheckout].Block.ImpliedType()
}()

func block(t testing.TB, p sdk.Provider) *sdk.Block {
	s, diags := p.GetSchema(context.Background())
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	return s.ResourceTypes[gitkit.TypeCheckout].Block
}

// config is a gitkit_checkout config; subdir "" means omitted.
func config(repo, commit, subdir, path string) cty.Value {
	sd := cty.NullVal(cty.String)
	if subdir != "" {
		sd = cty.StringVal(subdir)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"repo": cty.StringVal(repo), "commit": cty.StringVal(commit), "subdir": sd,
		"path": cty.StringVal(path), "tree_digest": cty.NullVal(cty.String),
	})
}

// instance drives one resource instance the way the engine does.
type instance struct {
	t     *testing.T
	p     sdk.Provider
	node  sdk.Node
	addr  string
	state cty.Value
	priv  []byte
}

func newInstance(t *testing.T, p sdk.Provider, n sdk.Node, addr string) *instance {
	return &instance{t: t, p: p, node: n, addr: addr, state: cty.NullVal(objType)}
}

func (in *instance) plan(cfg cty.Value) sdk.PlanResponse {
	in.t.Helper()
	proposed := cty.NullVal(objType)
	if !cfg.IsNull() {
		proposed = sdk.ProposedNew(block(in.t, in.p), in.state, cfg)
	}
	return in.p.PlanResourceChange(context.Background(), sdk.PlanRequest{
		TypeName: gitkit.TypeCheckout, Address: in.addr, Node: in.node,
		Prior: in.state, Config: cfg, Proposed: proposed, PriorPrivate: in.priv,
	})
}

// apply applies a plan and keeps the result as state, as the engine does.
func (in *instance) apply(cfg cty.Value, pr sdk.PlanResponse) (sdk.ApplyResponse, []string) {
	in.t.Helper()
	var events []string
	resp := in.p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{
		TypeName: gitkit.TypeCheckout, Address: in.addr, Node: in.node,
		Prior: in.state, Planned: pr.Planned, Config: cfg, Private: pr.PlannedPrivate,
	}, func(p sdk.Progress) { events = append(events, p.Message) })
	in.state, in.priv = resp.NewState, resp.Private
	if in.state == cty.NilVal {
		in.t.Fatalf("apply returned no state (diags: %v)", resp.Diagnostics.Err())
	}
	return resp, events
}

// converge plans and applies cfg, failing the test on any error.
func (in *instance) converge(cfg cty.Value) []string {
	in.t.Helper()
	pr := in.plan(cfg)
	if pr.Diagnostics.HasErrors() {
		in.t.Fatalf("plan: %v", pr.Diagnostics.Err())
	}
	resp, events := in.apply(cfg, pr)
	if resp.Diagnostics.HasErrors() {
		in.t.Fatalf("apply: %v", resp.Diagnostics.Err())
	}
	return events
}

// refresh reads the instance alone and keeps the result.
func (in *instance) refresh() sdk.ReadResponse {
	in.t.Helper()
	resp := in.p.ReadResources(context.Background(), sdk.ReadRequest{Node: in.node, Resources: []sdk.ReadItem{{
		TypeName: gitkit.TypeCheckout, Address: in.addr, Prior: in.state, Private: in.priv,
	}}})
	if resp.Diagnostics.HasErrors() {
		in.t.Fatalf("read: %v", resp.Diagnostics.Err())
	}
	r := resp.Results[0]
	if r.Diagnostics.HasErrors() {
		in.t.Fatalf("read: %v", r.Diagnostics.Err())
	}
	in.state, in.priv = r.NewState, r.Private
	return resp
}

func nullObj() cty.Value { return cty.NullVal(objType) }

func digestOf(v cty.Value) string {
	d := v.GetAttr("tree_digest")
	if !d.IsKnown() {
		return "(unknown)"
	}
	if d.IsNull() {
		return "(null)"
	}
	return d.AsString()
}
