package hubstage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// hub is a Hugging Face hub cache built by a test with real files and
// relative symlinks, laid out as huggingface_hub writes it.
type hub struct {
	t   testing.TB
	dir string
}

// newHub makes an empty hub under dir, readable by the test bed's users.
func newHub(t testing.TB, dir string) *hub {
	t.Helper()
	h := &hub{t: t, dir: filepath.Join(dir, "hub")}
	must(t, os.MkdirAll(h.dir, 0o755))
	for d := h.dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755) // nodes log in as other users
	}
	return h
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sum(s string) string {
	b := sha256.Sum256([]byte(s))
	return hex.EncodeToString(b[:])
}

// repo returns the path of a repo folder ("model" or "dataset").
func (h *hub) repo(kind, id string) string {
	return filepath.Join(h.dir, kind+"s--"+strings.ReplaceAll(id, "/", "--"))
}

// blob stores content as a repo blob and returns its path. With shared,
// the repo blob is a relative link into <hub>/blobs/<xx>/<hash>, the chain
// newer caches use.
func (h *hub) blob(repoDir, content string, shared bool) string {
	h.t.Helper()
	sha := sum(content)
	p := filepath.Join(repoDir, "blobs", sha)
	must(h.t, os.MkdirAll(filepath.Dir(p), 0o755))
	if _, err := os.Lstat(p); err == nil {
		return p
	}
	if !shared {
		must(h.t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	sp := filepath.Join(h.dir, "blobs", sha[:2], sha)
	must(h.t, os.MkdirAll(filepath.Dir(sp), 0o755))
	must(h.t, os.WriteFile(sp, []byte(content), 0o644))
	rel, err := filepath.Rel(filepath.Dir(p), sp)
	must(h.t, err)
	must(h.t, os.Symlink(rel, p))
	return p
}

// snapshot links every file of files (relative path -> content) into
// snapshots/<commit> as relative symlinks to its blob, as the hub does.
func (h *hub) snapshot(repoDir, commit string, files map[string]string, shared bool) string {
	h.t.Helper()
	snap := filepath.Join(repoDir, "snapshots", commit)
	must(h.t, os.MkdirAll(snap, 0o755))
	for rel, content := range files {
		b := h.blob(repoDir, content, shared)
		h.link(filepath.Join(snap, rel), b)
	}
	return snap
}

// link makes at a relative symlink to target.
func (h *hub) link(at, target string) {
	h.t.Helper()
	must(h.t, os.MkdirAll(filepath.Dir(at), 0o755))
	rel, err := filepath.Rel(filepath.Dir(at), target)
	must(h.t, err)
	must(h.t, os.Symlink(rel, at))
}

// ref writes refs/<name> = commit (with or without the trailing newline
// huggingface_hub omits).
func (h *hub) ref(repoDir, name, commit string) {
	h.t.Helper()
	p := filepath.Join(repoDir, "refs", name)
	must(h.t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(h.t, os.WriteFile(p+".tmp", []byte(commit), 0o644))
	must(h.t, os.Rename(p+".tmp", p))
}

// real is the real path of p (the temp dir may sit behind a symlink).
func (h *hub) real(p string) string {
	h.t.Helper()
	r, err := filepath.EvalSymlinks(p)
	must(h.t, err)
	return r
}

// commitOf makes a fake 40-hex commit from a word.
func commitOf(word string) string { return sum(word)[:40] }

// testNode is a node the tests run on.
type testNode struct {
	name string
	node sdk.Node
	conn node.Conn
	// dir is a folder the node's user may write (for manifest_path).
	dir string
}

// busyboxConn runs every command with busybox's applets only, so the
// scripts are proven on the tool set of a busybox node (the qemu node).
type busyboxConn struct {
	node.Conn
	bin string
}

func (c busyboxConn) Run(ctx context.Context, cmd node.Cmd) (node.Result, error) {
	argv := append([]string(nil), cmd.Argv...)
	if argv[0] == "sh" {
		argv[0] = filepath.Join(c.bin, "sh")
	}
	env := map[string]string{"PATH": c.bin}
	for k, v := range cmd.Env {
		env[k] = v
	}
	cmd.Argv, cmd.Env = argv, env
	return c.Conn.Run(ctx, cmd)
}

var (
	busyboxOnce sync.Once
	busyboxDir  string
	busyboxErr  error
)

// busyboxBin installs busybox applet links into a shared temp folder.
func busyboxBin(t testing.TB) string {
	busyboxOnce.Do(func() {
		bb, err := exec.LookPath("busybox")
		if err != nil {
			busyboxErr = err
			return
		}
		dir, err := os.MkdirTemp("", "hubstage-busybox")
		if err != nil {
			busyboxErr = err
			return
		}
		out, err := exec.Command(bb, "--install", "-s", dir).CombinedOutput()
		if err != nil {
			busyboxErr = errors.New(string(out))
			return
		}
		busyboxDir = dir
	})
	realpart.Need(t, "busybox (apt-get install busybox-static)", busyboxErr)
	return busyboxDir
}

// testNodes lists the nodes every node test runs on: the local node, the
// local node restricted to busybox tools, and an sshd node of the test
// bed when the SSH transport can reach it.
func testNodes(t testing.TB) []testNode {
	t.Helper()
	pool := node.NewPool()
	t.Cleanup(func() { pool.Close() })
	ctx := context.Background()
	local := sdk.Node{Name: "node.local", Transport: "local"}
	lc, err := pool.Get(ctx, local)
	must(t, err)
	nodes := []testNode{
		{name: "local", node: local, conn: lc, dir: t.TempDir()},
		{name: "busybox", node: sdk.Node{Name: "node.busybox", Transport: "local"}, conn: busyboxConn{Conn: node.NewLocal("node.busybox"), bin: busyboxBin(t)}, dir: t.TempDir()},
	}
	if sn, ok := sshNode(t, pool); ok {
		nodes = append(nodes, sn)
	}
	return nodes
}

// sshNode starts a one-node test bed and connects to it. Without a test
// bed it is skipped (a failure under CI).
func sshNode(t testing.TB, pool *node.Pool) (testNode, bool) {
	t.Helper()
	if !realpart.Optional(t, "the sshd node", testbed.Available()) {
		return testNode{}, false
	}
	bed, err := testbed.Start(t.TempDir(), 1)
	must(t, err)
	t.Cleanup(func() {
		if err := bed.Stop(); err != nil {
			t.Errorf("testbed stop: %v", err)
		}
	})
	n := bed.Nodes[0]
	c, err := pool.Get(context.Background(), n.SDK())
	if !realpart.Optional(t, "the sshd node", err) {
		return testNode{}, false
	}
	return testNode{name: "sshd", node: n.SDK(), conn: c, dir: n.Root}, true
}

// resourceFor returns the resource wired to the test nodes' connections.
func resourceFor(nodes []testNode) *manifest {
	byName := map[string]node.Conn{}
	for _, n := range nodes {
		byName[n.node.Name] = n.conn
	}
	return &manifest{conn: func(_ context.Context, n sdk.Node) (node.Conn, error) {
		c, ok := byName[n.Name]
		if !ok {
			return nil, errors.New("test: unknown node " + n.Name)
		}
		return c, nil
	}}
}
