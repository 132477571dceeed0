package hubstage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/hubtest"
	"github.com/sparkform/sparkform/internal/hubtest/hfref"
	"github.com/sparkform/sparkform/internal/nodehelper/helpertest"
	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

const testToken = "hf_sparkformTestToken0123456789"

// snapNode is a node for snapshot tests with its hub and record folders.
type snapNode struct {
	testNode
	hub, recs string
}

// snapNodes are the local node and an sshd node of the test bed (curl is
// needed on the node: the hub source runs it there).
func snapNodes(t *testing.T) []snapNode {
	t.Helper()
	_, err := exec.LookPath("curl")
	realpart.Need(t, "curl (apt-get install curl)", err)
	var out []snapNode
	for _, n := range testNodes(t) {
		if n.name == "busybox" {
			// busybox's applets and curl (not one of them), as on the
			// qemu node.
			bin := t.TempDir()
			ents, err := os.ReadDir(busyboxBin(t))
			must(t, err)
			for _, e := range ents {
				must(t, os.Symlink(filepath.Join(busyboxBin(t), e.Name()), filepath.Join(bin, e.Name())))
			}
			curl, _ := exec.LookPath("curl")
			must(t, os.Symlink(curl, filepath.Join(bin, "curl")))
			n.conn = busyboxConn{Conn: node.NewLocal(n.node.Name), bin: bin}
		}
		if snapHelper != "" {
			// Only a node reached over SSH has a helper path.
			if n.name != "sshd" {
				continue
			}
			if snapHelper == "on" {
				helpertest.Install(t, n.node)
			} else {
				t.Setenv(node.HelperEnv, "-")
			}
		}
		sn := snapNode{testNode: n, hub: filepath.Join(n.dir, "hub"), recs: filepath.Join(n.dir, "records")}
		must(t, os.MkdirAll(sn.recs, 0o777))
		must(t, os.Chmod(sn.recs, 0o777))
		out = append(out, sn)
	}
	return out
}

// snapProvider serves hubstage_snapshot over gRPC for n with env as the
// operator's environment.
func snapProvider(t *testing.T, n snapNode, env map[string]string) sdk.Provider {
	res := &snapshot{
		conn: func(_ context.Context, sn sdk.Node) (node.Conn, error) {
			if sn.Name != n.node.Name {
				return nil, errors.New("test: unknown node " + sn.Name)
			}
			return n.conn, nil
		},
		getenv: func(k string) string { return env[k] },
		recDir: n.recs,
	}
	return sdktest.GRPC(t, &sdk.Router{Name: "hubstage", Resources: map[string]sdk.Resource{TypeSnapshot: res}})
}

func snapConfig(t *testing.T, attrs map[string]cty.Value) cty.Value {
	return sdktest.Object(t, snapSchema.Block, attrs)
}

// testRepo is a repository with LFS and regular files in folders, and an
// older commit (refs/pr/1) sharing most blobs with main.
func testRepo() (*hubtest.Repo, *hubtest.Commit, *hubtest.Commit) {
	old := []hubtest.FileSpec{
		{Path: "config.json", Size: 700},
		{Path: "model-00001-of-00002.safetensors", Size: 3 << 20, LFS: true},
		{Path: "model-00002-of-00002.safetensors", Size: 2<<20 + 17, LFS: true},
		{Path: "tokenizer/tokenizer.json", Size: 40 << 10},
		{Path: "sub/deep/x.bin", Size: 1 << 20, LFS: true, Key: "x-old"},
	}
	r := hubtest.GenRepo("acme/tiny-llm", 29, old...)
	c1 := r.Main()
	cur := append([]hubtest.FileSpec(nil), old[:4]...)
	cur = append(cur, hubtest.FileSpec{Path: "sub/deep/x.bin", Size: 1 << 20, LFS: true, Key: "x-new"},
		hubtest.FileSpec{Path: "README.md", Size: 0}, hubtest.FileSpec{Path: "with space.txt", Size: 10})
	for i := 0; i < 20; i++ {
		cur = append(cur, hubtest.FileSpec{Path: fmt.Sprintf("small/f%02d.txt", i), Size: int64(100 + i)})
	}
	c2 := r.AddCommit("main", cur...)
	r.SetRef("refs/pr/1", c1.SHA)
	return r, c1, c2
}

// treeEntry is one path of a folder tree as found.
type treeEntry struct {
	mode fs.FileMode
	link string
	sum  string
}

// tree records every path under root: type, link target, content sha256.
func tree(t *testing.T, root string) map[string]treeEntry {
	t.Helper()
	out := map[string]treeEntry{}
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return out
	}
	must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		e := treeEntry{mode: d.Type()}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			e.link, _ = os.Readlink(p)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			e.sum = hex.EncodeToString(s[:])
		}
		out[rel] = e
		return nil
	}))
	return out
}

func sameTree(t *testing.T, what string, want, got map[string]treeEntry) {
	t.Helper()
	var diffs []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			diffs = append(diffs, "missing "+p)
		} else if g != w {
			diffs = append(diffs, fmt.Sprintf("changed %s: %+v -> %+v", p, w, g))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "extra "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%s: the tree differs:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// openUp lets the node's user write every folder under root (files the
// reference client wrote as root).
func openUp(t *testing.T, root string) {
	t.Helper()
	must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o777)
		}
		return err
	}))
}

// refDownload downloads rev with the independent reference client.
func refDownload(t *testing.T, s *hubtest.Server, cache, rev string) {
	t.Helper()
	c, err := hfref.NewAt(s.URL, cache, testToken)
	must(t, err)
	if _, err := c.EnsureSnapshot(context.Background(), hfref.ModelRef{Author: "acme", Repo: "tiny-llm"}, rev, nil); err != nil {
		t.Fatal(err)
	}
}

// tokenWatch scans every process's command line and environment on this
// machine (the nodes run here) for the token until stop is called.
func tokenWatch(t *testing.T, tok string) (stop func() (scans int, leaks []string)) {
	var done atomic.Bool
	var mu sync.Mutex
	var leaks []string
	n := 0
	wg := sync.WaitGroup{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			ents, _ := os.ReadDir("/proc")
			for _, e := range ents {
				for _, f := range []string{"cmdline", "environ"} {
					b, err := os.ReadFile(filepath.Join("/proc", e.Name(), f))
					if err == nil && bytes.Contains(b, []byte(tok)) {
						mu.Lock()
						leaks = append(leaks, e.Name()+"/"+f+": "+strings.ReplaceAll(string(b), "\x00", " "))
						mu.Unlock()
					}
				}
			}
			n++
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() (int, []string) {
		done.Store(true)
		wg.Wait()
		return n, leaks
	}
}

// TestSnapshotFromHub: create from the hub over the token and the CDN,
// byte-identical to the independent client's download, refs last; a
// no-op plan; a pre-existing snapshot of another commit sharing blobs
// survives destroy, which leaves the hub exactly as before; the token is
// never in a command line, an environment, the state or the plan.
func TestSnapshotFromHub(t *testing.T) {
	for _, n := range snapNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			repo, c1, c2 := testRepo()
			srv := hubtest.NewServer(t, repo)
			srv.SetToken(testToken)
			// The other commit, from the reference client, first.
			refDownload(t, srv, n.hub, "refs/pr/1")
			openUp(t, n.hub)
			before := tree(t, n.hub)
			ref := t.TempDir()
			refDownload(t, srv, ref, "refs/pr/1")
			refDownload(t, srv, ref, "main")
			srv.ResetCounters()
			srv.Throttle(4 << 20) // long enough for the process scan to see the transfer

			p := snapProvider(t, n, map[string]string{"MY_HF": testToken})
			cfg := snapConfig(t, map[string]cty.Value{"hub_dir": cty.StringVal(n.hub), "repo_id": cty.StringVal("acme/tiny-llm"),
				"endpoint": cty.StringVal(srv.URL), "token_env": cty.StringVal("MY_HF")})
			null := cty.NullVal(snapSchema.Block.ImpliedType())
			stop := tokenWatch(t, testToken)
			pl := sdktest.Plan(t, p, TypeSnapshot, n.node, null, nil, cfg)
			sum := pl.Planned.GetAttr(SummaryAttribute).AsString()
			if pl.Planned.GetAttr("commit").IsKnown() {
				t.Errorf("a plan that writes must leave commit unknown (dependents plan after the transfer)")
			}
			shared := int64(0)
			for _, f := range c2.Files {
				if o := c1.File(f.Path); o != nil && o.Etag == f.Etag {
					shared += f.Size
				}
			}
			if got := bigInt(pl.Planned.GetAttr("present_bytes")); got != shared {
				t.Errorf("present_bytes = %d, want the %d bytes of blobs shared with the other commit", got, shared)
			}
			if got := bigInt(pl.Planned.GetAttr("transfer_bytes")); got != c2.TotalSize()-shared {
				t.Errorf("transfer_bytes = %d, want %d", got, c2.TotalSize()-shared)
			}
			if !strings.Contains(sum, "commit "+c2.SHA[:7]) || !strings.Contains(sum, "from hub "+srv.URL) {
				t.Errorf("change_summary %q: want the commit and the source", sum)
			}
			if bigInt(pl.Planned.GetAttr("free_bytes")) <= 0 {
				t.Errorf("free_bytes %s", pl.Planned.GetAttr("free_bytes").GoString())
			}
			if srv.Requests(hubtest.EndpointAPI) != 1 || srv.Requests(hubtest.EndpointResolve) != 0 {
				t.Errorf("plan made %d API and %d resolve requests; want 1 and 0", srv.Requests(hubtest.EndpointAPI), srv.Requests(hubtest.EndpointResolve))
			}
			ap, events := sdktest.Apply(t, p, TypeSnapshot, n.node, null, pl.Planned, cfg, pl.PlannedPrivate)
			scans, leaks := stop()
			if len(leaks) > 0 || scans < 3 {
				t.Fatalf("the token showed in %d process lines (%d scans): %v", len(leaks), scans, leaks)
			}
			state := ap.NewState
			for what, b := range map[string][]byte{"state": []byte(state.GoString()), "private": ap.Private, "plan": []byte(pl.Planned.GoString()),
				"planned private": pl.PlannedPrivate} {
				if bytes.Contains(b, []byte(testToken)) {
					t.Errorf("the token is in the %s", what)
				}
			}
			if got := state.GetAttr("commit").AsString(); got != c2.SHA {
				t.Fatalf("commit %s, want %s", got, c2.SHA)
			}
			var last sdk.Progress
			for _, e := range events {
				if e.Unit == sdk.UnitBytes {
					last = e
				}
			}
			if last.Total != c2.TotalSize()-shared || last.Current != last.Total {
				t.Errorf("last byte progress %d/%d, want %d/%d", last.Current, last.Total, c2.TotalSize()-shared, c2.TotalSize()-shared)
			}
			for _, f := range c2.Files {
				if o := c1.File(f.Path); o != nil && o.Etag == f.Etag && srv.Bytes(f.Path) > 0 {
					t.Errorf("%s: %d bytes fetched of a blob already present", f.Path, srv.Bytes(f.Path))
				}
			}
			hubtest.CheckLayout(t, n.hub, repo, "main")
			hubtest.CheckLayout(t, n.hub, repo, "refs/pr/1")
			hubtest.CompareTrees(t, n.hub, ref, repo.CacheDirName())
			// Nor in any file on the node: the records, the hub; and the
			// receiver's temp folder is gone.
			for _, dir := range []string{n.recs, n.hub} {
				_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if err != nil || !d.Type().IsRegular() {
						return nil
					}
					if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(testToken)) {
						t.Errorf("the token is in %s", p)
					}
					return nil
				})
			}

			// Refresh and plan: nothing to do, no byte from the hub.
			srv.ResetCounters()
			rd := sdktest.Read(t, p, TypeSnapshot, n.node, state, ap.Private)
			if !rd.NewState.RawEquals(state) {
				t.Fatalf("read after apply differs:\n%#v\n%#v", state, rd.NewState)
			}
			if pl2 := sdktest.Plan(t, p, TypeSnapshot, n.node, rd.NewState, rd.Private, cfg); !pl2.Planned.RawEquals(state) {
				t.Fatalf("second plan is not a no-op: %s", pl2.Planned.GetAttr(SummaryAttribute).GoString())
			}
			if srv.TotalBytes() != 0 {
				t.Errorf("refresh and plan fetched %d bytes", srv.TotalBytes())
			}

			sdktest.Destroy(t, p, TypeSnapshot, n.node, state, ap.Private)
			sameTree(t, "hub after destroy", before, tree(t, n.hub))
			if recs := tree(t, n.recs); len(recs) > 1 {
				t.Errorf("records left after destroy: %v", recs)
			}
		})
	}
}

func bigInt(v cty.Value) int64 {
	if !v.IsKnown() || v.IsNull() {
		return -1
	}
	n, _ := v.AsBigFloat().Int64()
	return n
}

// snapEnv is one node, one server and a provider for the shorter tests.
type snapCase struct {
	n    snapNode
	repo *hubtest.Repo
	c1   *hubtest.Commit
	c2   *hubtest.Commit
	srv  *hubtest.Server
	p    sdk.Provider
}

func newSnapCase(t *testing.T, n snapNode) *snapCase {
	repo, c1, c2 := testRepo()
	srv := hubtest.NewServer(t, repo)
	srv.SetToken(testToken)
	return &snapCase{n: n, repo: repo, c1: c1, c2: c2, srv: srv, p: snapProvider(t, n, map[string]string{"HF_TOKEN": testToken, "HF_ENDPOINT": srv.URL})}
}

func (c *snapCase) config(t *testing.T, attrs map[string]cty.Value) cty.Value {
	all := map[string]cty.Value{"hub_dir": cty.StringVal(c.n.hub), "repo_id": cty.StringVal("acme/tiny-llm")}
	for k, v := range attrs {
		all[k] = v
	}
	return snapConfig(t, all)
}

// apply plans and applies cfg over prior (NilVal: create).
func (c *snapCase) apply(t *testing.T, prior cty.Value, priv []byte, cfg cty.Value) (cty.Value, []byte) {
	t.Helper()
	if prior == cty.NilVal {
		prior = cty.NullVal(snapSchema.Block.ImpliedType())
	}
	pl := sdktest.Plan(t, c.p, TypeSnapshot, c.n.node, prior, priv, cfg)
	ap, _ := sdktest.Apply(t, c.p, TypeSnapshot, c.n.node, prior, pl.Planned, cfg, pl.PlannedPrivate)
	return ap.NewState, ap.Private
}

// TestSnapshotResumesCutTransfer: a connection cut mid-file is resumed
// from the .incomplete's size: the server serves each byte once.
func TestSnapshotResumesCutTransfer(t *testing.T) {
	lowerSmallBlob(t)
	for _, n := range snapNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			c := newSnapCase(t, n)
			big := c.c2.File("model-00001-of-00002.safetensors")
			small := c.c2.File("tokenizer/tokenizer.json")
			c.srv.CutAfter(big.Path, 1<<20+123, 2)
			c.srv.CutAfter(small.Path, 10000, 1)
			state, _ := c.apply(t, cty.NilVal, nil, c.config(t, nil))
			hubtest.CheckLayout(t, n.hub, c.repo, "main")
			for _, f := range []*hubtest.File{big, small} {
				if got := c.srv.Bytes(f.Path); got != f.Size {
					t.Errorf("%s: the server sent %d bytes for a %d-byte file (resume must not fetch bytes again)", f.Path, got, f.Size)
				}
			}
			ranges := 0
			for _, q := range c.srv.Log() {
				if q.Path == big.Path && strings.HasPrefix(q.Range, "bytes=") && !strings.HasPrefix(q.Range, "bytes=0-") {
					ranges++
				}
			}
			if ranges < 2 {
				t.Errorf("%d resumed range requests for %s, want 2 (two cuts)", ranges, big.Path)
			}
			if state.GetAttr("commit").AsString() != c.c2.SHA {
				t.Errorf("commit %s", state.GetAttr("commit").AsString())
			}
		})
	}
}

// TestSnapshotDriftRepaired: a truncated blob, a missing blob and a wrong
// link are drift that refresh shows and apply repairs, fetching only the
// broken blobs; verify="full" catches a same-size blob with other bytes.
func TestSnapshotDriftRepaired(t *testing.T) {
	for _, n := range snapNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			c := newSnapCase(t, n)
			cfg := c.config(t, map[string]cty.Value{"verify": cty.StringVal("full")})
			state, priv := c.apply(t, cty.NilVal, nil, cfg)
			rd := filepath.Join(n.hub, c.repo.CacheDirName())
			snap := filepath.Join(rd, "snapshots", c.c2.SHA)
			big := c.c2.File("model-00002-of-00002.safetensors")
			gone := c.c2.File("small/f03.txt")
			same := c.c2.File("config.json")
			must(t, os.Truncate(filepath.Join(rd, "blobs", big.Etag), 1000))
			must(t, os.Remove(filepath.Join(rd, "blobs", gone.Etag)))
			b := c.c2.File(same.Path).Bytes()
			b[0] ^= 0xff
			must(t, os.WriteFile(filepath.Join(rd, "blobs", same.Etag), b, 0o644))
			must(t, os.Remove(filepath.Join(snap, "README.md")))
			must(t, os.Symlink("../../blobs/nothing", filepath.Join(snap, "README.md")))

			rdr := sdktest.Read(t, c.p, TypeSnapshot, n.node, state, priv)
			sum := rdr.NewState.GetAttr(SummaryAttribute).AsString()
			for _, want := range []string{"drift", "1 blobs missing", "1 blobs of the wrong size", "1 blobs with wrong content", "1 wrong links"} {
				if !strings.Contains(sum, want) {
					t.Errorf("refresh summary %q lacks %q", sum, want)
				}
			}
			c.srv.ResetCounters()
			pl := sdktest.Plan(t, c.p, TypeSnapshot, n.node, rdr.NewState, rdr.Private, cfg)
			if pl.Planned.RawEquals(rdr.NewState) {
				t.Fatal("plan after drift is a no-op")
			}
			ap, _ := sdktest.Apply(t, c.p, TypeSnapshot, n.node, rdr.NewState, pl.Planned, cfg, pl.PlannedPrivate)
			hubtest.CheckLayout(t, n.hub, c.repo, "main")
			want := big.Size + gone.Size + same.Size
			if got := c.srv.TotalBytes(); got != want {
				t.Errorf("repair fetched %d bytes, want %d (only the broken blobs)", got, want)
			}
			rd2 := sdktest.Read(t, c.p, TypeSnapshot, n.node, ap.NewState, ap.Private)
			if pl := sdktest.Plan(t, c.p, TypeSnapshot, n.node, rd2.NewState, rd2.Private, cfg); !pl.Planned.RawEquals(rd2.NewState) {
				t.Errorf("plan after the repair is not a no-op: %s", pl.Planned.GetAttr(SummaryAttribute).GoString())
			}
			sdktest.Destroy(t, c.p, TypeSnapshot, n.node, ap.NewState, ap.Private)
		})
	}
}

// TestSnapshotSharedBlobsDestroyedOneAtATime: two snapshots of one repo
// share blobs; destroying either first keeps every blob the other links
// to (handed over to its record), and the second destroy leaves the hub
// exactly as it was before both.
func TestSnapshotSharedBlobsDestroyedOneAtATime(t *testing.T) {
	n := snapNodes(t)[0]
	for _, order := range []string{"old first", "new first"} {
		t.Run(order, func(t *testing.T) {
			n := n
			n.hub = filepath.Join(t.TempDir(), "hub")
			c := newSnapCase(t, n)
			before := tree(t, n.hub)
			cfgOld := c.config(t, map[string]cty.Value{"revision": cty.StringVal("refs/pr/1")})
			cfgNew := c.config(t, nil)
			sOld, pOld := c.apply(t, cty.NilVal, nil, cfgOld)
			sNew, pNew := c.apply(t, cty.NilVal, nil, cfgNew)
			hubtest.CheckLayout(t, n.hub, c.repo, "refs/pr/1")
			hubtest.CheckLayout(t, n.hub, c.repo, "main")
			first, second := struct {
				s cty.Value
				p []byte
				r string
			}{sOld, pOld, "main"}, struct {
				s cty.Value
				p []byte
				r string
			}{sNew, pNew, "refs/pr/1"}
			if order == "new first" {
				first.s, first.p, first.r, second.s, second.p, second.r = sNew, pNew, "refs/pr/1", sOld, pOld, "main"
			}
			sdktest.Destroy(t, c.p, TypeSnapshot, n.node, first.s, first.p)
			// The survivor is whole.
			hubtest.CheckLayout(t, n.hub, c.repo, first.r)
			sdktest.Destroy(t, c.p, TypeSnapshot, n.node, second.s, second.p)
			sameTree(t, "hub after both destroys", before, tree(t, n.hub))
		})
	}
}

// TestSnapshotFailedCreateIsDestroyedExactly: a file the hub cannot serve
// fails the apply with a clear error after other blobs landed; the state
// kept names the commit, and destroy removes everything it made.
func TestSnapshotFailedCreateIsDestroyedExactly(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	before := tree(t, n.hub)
	c.srv.Fail404("small/f07.txt")
	cfg := c.config(t, map[string]cty.Value{"parallel": cty.NumberIntVal(2)})
	null := cty.NullVal(snapSchema.Block.ImpliedType())
	pl := sdktest.Plan(t, c.p, TypeSnapshot, n.node, null, nil, cfg)
	resp := c.p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: TypeSnapshot, Address: "x", Node: n.node,
		Prior: null, Planned: pl.Planned, Config: cfg, Private: pl.PlannedPrivate}, func(sdk.Progress) {})
	err := resp.Diagnostics.Err()
	if err == nil || !strings.Contains(err.Error(), "1 blobs failed") || !strings.Contains(err.Error(), "404") {
		t.Fatalf("apply error %v: want the failed blob and the 404", err)
	}
	if resp.NewState.IsNull() || resp.NewState.GetAttr("commit").AsString() != c.c2.SHA {
		t.Fatalf("a failed create must keep a state naming the commit, got %#v", resp.NewState)
	}
	if _, err := os.Lstat(filepath.Join(n.hub, c.repo.CacheDirName(), "refs", "main")); err == nil {
		t.Error("refs/main written although a blob failed (refs are written last)")
	}
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, resp.NewState, resp.Private)
	sameTree(t, "after destroy of a failed create", before, tree(t, n.hub))
}

// TestSnapshotMovedRef: main moves on the hub; plan shows the new commit,
// apply fetches only the new blobs and gives back the old snapshot.
func TestSnapshotMovedRef(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	c.repo.SetRef("main", c.c1.SHA)
	cfg := c.config(t, nil)
	state, priv := c.apply(t, cty.NilVal, nil, cfg)
	if state.GetAttr("commit").AsString() != c.c1.SHA {
		t.Fatal("first apply: wrong commit")
	}
	c.repo.SetRef("main", c.c2.SHA)
	c.srv.ResetCounters()
	rd := sdktest.Read(t, c.p, TypeSnapshot, n.node, state, priv)
	pl := sdktest.Plan(t, c.p, TypeSnapshot, n.node, rd.NewState, rd.Private, cfg)
	if s := pl.Planned.GetAttr(SummaryAttribute).AsString(); !strings.Contains(s, "commit "+c.c2.SHA[:7]) {
		t.Errorf("plan summary %q does not name the new commit", s)
	}
	ap, _ := sdktest.Apply(t, c.p, TypeSnapshot, n.node, rd.NewState, pl.Planned, cfg, pl.PlannedPrivate)
	hubtest.CheckLayout(t, n.hub, c.repo, "main")
	if _, err := os.Lstat(filepath.Join(n.hub, c.repo.CacheDirName(), "snapshots", c.c1.SHA)); err == nil {
		t.Error("the old snapshot is still there")
	}
	var want int64
	for _, f := range c.c2.Files {
		if o := c.c1.File(f.Path); o == nil || o.Etag != f.Etag {
			want += f.Size
		}
	}
	if got := c.srv.TotalBytes(); got != want {
		t.Errorf("fetched %d bytes, want %d (the new blobs only)", got, want)
	}
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, ap.NewState, ap.Private)
	if ents, _ := os.ReadDir(n.hub); len(ents) != 0 {
		t.Errorf("hub not empty after destroy: %v", tree(t, n.hub))
	}
}

// TestSnapshotResumesCancelledApply: an apply cancelled mid-transfer
// leaves only .incomplete files (no blob name on a partial blob); the
// next apply fetches exactly the bytes not yet on the node.
func TestSnapshotResumesCancelledApply(t *testing.T) {
	lowerSmallBlob(t)
	for _, n := range snapNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			c := newSnapCase(t, n)
			c.srv.Throttle(1 << 20)
			cfg := c.config(t, nil)
			null := cty.NullVal(snapSchema.Block.ImpliedType())
			pl := sdktest.Plan(t, c.p, TypeSnapshot, n.node, null, nil, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan sdk.ApplyResponse)
			go func() {
				done <- c.p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: TypeSnapshot, Address: "x", Node: n.node,
					Prior: null, Planned: pl.Planned, Config: cfg, Private: pl.PlannedPrivate}, func(sdk.Progress) {})
			}()
			for c.srv.TotalBytes() < 1<<20 {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			resp := <-done
			if !resp.Diagnostics.HasErrors() {
				t.Fatal("a cancelled apply reported success")
			}
			time.Sleep(300 * time.Millisecond) // anything left would write on now
			blobs := filepath.Join(n.hub, c.repo.CacheDirName(), "blobs")
			inbox := filepath.Join(blobs, ".sparkform-incoming."+c.c2.SHA)
			var partial, smallPartial int64
			if ents, err := os.ReadDir(inbox); err == nil {
				for _, e := range ents {
					fi, err := os.Stat(filepath.Join(inbox, e.Name()))
					must(t, err)
					smallPartial += fi.Size()
				}
			}
			ents, _ := os.ReadDir(blobs)
			for _, e := range ents {
				if e.IsDir() {
					continue
				}
				fi, err := os.Stat(filepath.Join(blobs, e.Name()))
				must(t, err)
				if strings.HasSuffix(e.Name(), ".incomplete") {
					partial += fi.Size()
					continue
				}
				if f := fileByEtag(c.c2, e.Name()); f == nil || f.Size != fi.Size() {
					t.Errorf("blob %s after a cancel: not a whole blob", e.Name())
				}
			}
			if partial == 0 {
				t.Fatal("no partial .incomplete blob after the cancel; the test did not interrupt a large transfer")
			}
			partial += smallPartial
			sizeNow := func() int64 {
				var n int64
				ents, _ := os.ReadDir(blobs)
				for _, e := range ents {
					fi, _ := os.Stat(filepath.Join(blobs, e.Name()))
					n += fi.Size()
				}
				return n
			}
			settled := sizeNow()
			time.Sleep(300 * time.Millisecond)
			if sizeNow() != settled {
				t.Fatal("blobs still grow after the cancelled apply returned: a worker outlived it")
			}
			c.srv.ResetCounters()
			c.srv.Throttle(0)
			state, _ := c.apply(t, resp.NewState, resp.Private, cfg)
			hubtest.CheckLayout(t, n.hub, c.repo, "main")
			var have int64
			for _, e := range ents {
				if !strings.HasSuffix(e.Name(), ".incomplete") && !e.IsDir() {
					fi, _ := os.Stat(filepath.Join(blobs, e.Name()))
					if fi != nil {
						have += fi.Size()
					}
				}
			}
			if got, want := c.srv.TotalBytes(), c.c2.TotalSize()-have-partial; got != want {
				t.Errorf("the second apply fetched %d bytes, want %d (the partial %d bytes are not fetched again)", got, want, partial)
			}
			sdktest.Destroy(t, c.p, TypeSnapshot, n.node, state, nil)
		})
	}
}

func fileByEtag(c *hubtest.Commit, etag string) *hubtest.File {
	for _, f := range c.Files {
		if f.Etag == etag {
			return f
		}
	}
	return nil
}

// TestSnapshotPinnedAndBatched: a pinned commit already applied plans with
// no hub request; two instances refresh in one node command; a missing
// token is a clear error.
func TestSnapshotPinnedAndBatched(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	pinned := c.config(t, map[string]cty.Value{"revision": cty.StringVal(c.c1.SHA)})
	main := c.config(t, map[string]cty.Value{"include": cty.ListVal([]cty.Value{cty.StringVal("*.json")})})
	s1, p1 := c.apply(t, cty.NilVal, nil, pinned)
	s2, p2 := c.apply(t, cty.NilVal, nil, main)
	if _, err := os.Lstat(filepath.Join(n.hub, c.repo.CacheDirName(), "refs", c.c1.SHA)); err == nil {
		t.Error("a pinned commit wrote a ref")
	}
	if got := s2.GetAttr("file_count"); !got.RawEquals(cty.NumberIntVal(2)) {
		t.Errorf("include *.json: %s files", got.GoString())
	}
	c.srv.ResetCounters()
	if pl := sdktest.Plan(t, c.p, TypeSnapshot, n.node, s1, p1, pinned); !pl.Planned.RawEquals(s1) {
		t.Errorf("pinned replan not a no-op")
	}
	if got := c.srv.Requests(hubtest.EndpointAPI); got != 0 {
		t.Errorf("a present pinned commit planned with %d hub requests, want 0", got)
	}
	rc := &runCounter{Conn: n.conn}
	res := &snapshot{conn: func(context.Context, sdk.Node) (node.Conn, error) { return rc, nil }, getenv: func(string) string { return "" }, recDir: n.recs}
	out, trips, diags := res.Read(context.Background(), n.node, []sdk.ReadItem{{Prior: s1, Private: p1}, {Prior: s2, Private: p2}})
	if diags.HasErrors() || trips != 1 || rc.runs.Load() != 1 {
		t.Fatalf("refresh of two instances: %v, %d round trips, %d commands; want 1", diags.Err(), trips, rc.runs.Load())
	}
	if !out[0].NewState.RawEquals(s1) || !out[1].NewState.RawEquals(s2) {
		t.Error("refresh changed a whole snapshot")
	}
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, s1, p1)
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, s2, p2)

	// No token: the hub's 401 is explained.
	noTok := snapProvider(t, n, map[string]string{"HF_ENDPOINT": c.srv.URL})
	resp := noTok.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: TypeSnapshot, Node: n.node,
		Prior: cty.NullVal(snapSchema.Block.ImpliedType()), Config: main, Proposed: sdk.ProposedNew(snapSchema.Block, cty.NullVal(snapSchema.Block.ImpliedType()), main)})
	if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("plan without a token: %v; want the 401 and the variable to set", err)
	}
}

// runCounter counts the commands run.
type runCounter struct {
	node.Conn
	runs atomic.Int64
}

func (c *runCounter) Run(ctx context.Context, cmd node.Cmd) (node.Result, error) {
	c.runs.Add(1)
	return c.Conn.Run(ctx, cmd)
}

// TestSnapshotTwoAtOnceShareBlobs: two snapshots sharing blobs applied at
// the same time on one node both end whole (one fetches a shared blob,
// the other waits for it), and both destroys give the hub back.
func TestSnapshotTwoAtOnceShareBlobs(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	c.srv.Throttle(4 << 20)
	cfgs := []cty.Value{c.config(t, map[string]cty.Value{"revision": cty.StringVal("refs/pr/1")}), c.config(t, nil)}
	states := make([]cty.Value, 2)
	privs := make([][]byte, 2)
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			states[i], privs[i] = c.apply(t, cty.NilVal, nil, cfgs[i])
		}()
	}
	wg.Wait()
	hubtest.CheckLayout(t, n.hub, c.repo, "main")
	hubtest.CheckLayout(t, n.hub, c.repo, "refs/pr/1")
	for i := range cfgs {
		sdktest.Destroy(t, c.p, TypeSnapshot, n.node, states[i], privs[i])
	}
	if ents, _ := os.ReadDir(n.hub); len(ents) != 0 {
		t.Errorf("hub not empty after both destroys: %v", tree(t, n.hub))
	}
}

// streamSource is a test source whose bytes pass through the plugin (as
// relay and push do): it serves a hubtest commit through Stream.
type streamSource struct {
	c       *hubtest.Commit
	cutOnce map[string]int64 // path -> fail after this many bytes, once
	offsets map[string][]int64
	mu      sync.Mutex
	relayed atomic.Int64
}

func (s *streamSource) Describe() string { return "the test stream, relayed through sparkform" }

func (s *streamSource) List(context.Context, node.Conn, *snapSpec) (*snapListing, error) {
	l := &snapListing{Commit: s.c.SHA}
	for _, f := range s.c.Files {
		l.Files = append(l.Files, snapFile{Path: f.Path, Etag: f.Etag, Size: f.Size})
	}
	return l, nil
}

func (s *streamSource) Open(context.Context, node.Conn, *snapSpec) (snapTransfer, error) {
	return s, nil
}
func (s *streamSource) NodeFetch() ([]string, []byte, bool) { return nil, nil, false }
func (s *streamSource) Relayed() int64                      { return s.relayed.Load() }
func (s *streamSource) Close(context.Context) error         { return nil }

type cutReader struct {
	r    io.Reader
	left int64
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("test: connection cut")
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func (s *streamSource) Stream(_ context.Context, f snapFile, off int64) (io.ReadCloser, error) {
	hf := s.c.File(f.Path)
	r := hf.Open()
	if _, err := r.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.offsets[f.Path] = append(s.offsets[f.Path], off)
	var rd io.Reader = r
	if n, ok := s.cutOnce[f.Path]; ok {
		delete(s.cutOnce, f.Path)
		rd = &cutReader{r: r, left: n}
	}
	s.mu.Unlock()
	return io.NopCloser(countingReader{r: rd, n: &s.relayed}), nil
}

// TestSnapshotStreamedThroughPlugin: a source without a node-side fetch
// streams each blob through the plugin into the receiver's put mode:
// verified, counted in relayed_bytes, and resumed from the .incomplete's
// size after a cut stream.
func TestSnapshotStreamedThroughPlugin(t *testing.T) {
	for _, n := range snapNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			c := newSnapCase(t, n)
			big := c.c2.File("model-00001-of-00002.safetensors")
			src := &streamSource{c: c.c2, cutOnce: map[string]int64{big.Path: 1<<20 + 5}, offsets: map[string][]int64{}}
			saved := newLocalSource
			newLocalSource = func(*snapEnv, *snapSpec) (snapSource, error) { return src, nil }
			t.Cleanup(func() { newLocalSource = saved })
			cfg := c.config(t, map[string]cty.Value{"source_local_dir": cty.StringVal("/test")})
			null := cty.NullVal(snapSchema.Block.ImpliedType())
			pl := sdktest.Plan(t, c.p, TypeSnapshot, n.node, null, nil, cfg)
			if s := pl.Planned.GetAttr(SummaryAttribute).AsString(); !strings.Contains(s, "relayed through sparkform") {
				t.Errorf("plan summary %q does not name the relay", s)
			}
			resp := c.p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: TypeSnapshot, Address: "x", Node: n.node,
				Prior: null, Planned: pl.Planned, Config: cfg, Private: pl.PlannedPrivate}, func(sdk.Progress) {})
			if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), big.Path) {
				t.Fatalf("a cut stream: %v; want an error naming %s", err, big.Path)
			}
			inc := filepath.Join(n.hub, c.repo.CacheDirName(), "blobs", big.Etag+".incomplete")
			fi, err := os.Stat(inc)
			must(t, err)
			if fi.Size() != 1<<20+5 {
				t.Fatalf("partial blob %d bytes, want %d", fi.Size(), 1<<20+5)
			}
			first := src.relayed.Load()
			state, _ := c.apply(t, resp.NewState, resp.Private, cfg)
			hubtest.CheckLayout(t, n.hub, c.repo, "main")
			if offs := src.offsets[big.Path]; len(offs) != 2 || offs[1] != 1<<20+5 {
				t.Errorf("stream offsets for %s: %v, want [0 %d]", big.Path, offs, 1<<20+5)
			}
			if got := bigInt(state.GetAttr("relayed_bytes")); got != src.relayed.Load()-first || got == 0 {
				t.Errorf("relayed_bytes %d, want the %d bytes of the second apply", got, src.relayed.Load()-first)
			}
			if c.srv.TotalBytes() != 0 {
				t.Errorf("the hub served %d bytes to a streamed source", c.srv.TotalBytes())
			}
			sdktest.Destroy(t, c.p, TypeSnapshot, n.node, state, nil)
		})
	}
}

// TestSnapshotApplyNotHeldToFreeSpace: free space moves between plan and
// apply (other writers); the apply's new plan is not held to free_bytes,
// but is to the commit (change_summary) the plan named.
func TestSnapshotApplyNotHeldToFreeSpace(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	cfg := c.config(t, nil)
	null := cty.NullVal(snapSchema.Block.ImpliedType())
	pl := sdktest.Plan(t, c.p, TypeSnapshot, n.node, null, nil, cfg)
	call := func(reviewed cty.Value) sdk.PlanApplyResponse {
		return sdk.PlanAndApply(context.Background(), c.p, sdk.PlanApplyRequest{TypeName: TypeSnapshot, Address: "x", Node: n.node,
			Prior: null, Config: cfg, Reviewed: reviewed}, nil, nil)
	}
	moved := ctyvalWith(pl.Planned, "free_bytes", cty.NumberIntVal(bigInt(pl.Planned.GetAttr("free_bytes"))+12345))
	c.repo.SetRef("main", c.c1.SHA) // the hub moved since the plan
	if r := call(moved); r.Applied || !r.PlanChanged || sdk.DescribePath(r.Changed) != SummaryAttribute {
		t.Fatalf("a moved ref: applied %v, changed at %q; want refused at %s", r.Applied, sdk.DescribePath(r.Changed), SummaryAttribute)
	}
	c.repo.SetRef("main", c.c2.SHA)
	r := call(moved)
	if !r.Applied || r.Diagnostics.HasErrors() {
		t.Fatalf("free space moved: applied %v, changed at %q, %v", r.Applied, sdk.DescribePath(r.Changed), r.Diagnostics.Err())
	}
	hubtest.CheckLayout(t, n.hub, c.repo, "main")
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, r.NewState, r.Private)
}

func ctyvalWith(v cty.Value, attr string, nv cty.Value) cty.Value {
	m := v.AsValueMap()
	m[attr] = nv
	return cty.ObjectVal(m)
}

// TestSnapshotFoundWholeIsNotOurs: a snapshot another client downloaded
// (or another instance wrote) is adopted with no transfer and no record,
// and destroy leaves every file of it.
func TestSnapshotFoundWholeIsNotOurs(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	refDownload(t, c.srv, n.hub, "main")
	before := tree(t, n.hub)
	c.srv.ResetCounters()
	cfg := c.config(t, nil)
	state, priv := c.apply(t, cty.NilVal, nil, cfg)
	if c.srv.Requests(hubtest.EndpointResolve)+c.srv.Requests(hubtest.EndpointCDN) != 0 {
		t.Errorf("a whole snapshot was fetched again")
	}
	if state.GetAttr("commit").AsString() != c.c2.SHA || bigInt(state.GetAttr("transfer_bytes")) != 0 {
		t.Errorf("state %s", state.GoString())
	}
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, state, priv)
	sameTree(t, "a snapshot this resource did not write, after destroy", before, tree(t, n.hub))
}

// lowerSmallBlob sends blobs above 512 KiB through the streaming path and
// the others through the batch, for this test.
func lowerSmallBlob(t *testing.T) {
	saved := smallBlob
	smallBlob = 512 << 10
	t.Cleanup(func() { smallBlob = saved })
}

// dirSource serves a commit's blobs from a folder of this machine (the
// nodes run here) the way the peer source does from another node: one
// blob per run of NodeFetch, and many in one tar (snapTarBatcher).
type dirSource struct {
	c      *hubtest.Commit
	dir    string
	batchN atomic.Int64
}

func newDirSource(t *testing.T, c *hubtest.Commit, dir string) *dirSource {
	d := &dirSource{c: c, dir: dir}
	must(t, os.MkdirAll(d.dir, 0o755))
	for _, f := range c.Files {
		must(t, os.WriteFile(filepath.Join(d.dir, f.Etag), f.Bytes(), 0o644))
	}
	return d
}

func (d *dirSource) Describe() string { return "the test folder " + d.dir }
func (d *dirSource) List(context.Context, node.Conn, *snapSpec) (*snapListing, error) {
	return (&streamSource{c: d.c}).List(context.Background(), nil, nil)
}
func (d *dirSource) Open(context.Context, node.Conn, *snapSpec) (snapTransfer, error) { return d, nil }
func (d *dirSource) NodeFetch() ([]string, []byte, bool) {
	return []string{"sh", "-c", `exec tail -c +$(($2 + 1)) "$0/$1"`, d.dir}, nil, true
}
func (d *dirSource) NodeFetchBatch() ([]string, bool) {
	d.batchN.Add(1)
	return []string{"sh", "-c", `cd "$0" && xargs tar -c -h -f - --`, d.dir}, true
}
func (d *dirSource) Stream(context.Context, snapFile, int64) (io.ReadCloser, error) {
	return nil, errors.New("not streamed")
}
func (d *dirSource) Relayed() int64              { return 0 }
func (d *dirSource) Close(context.Context) error { return nil }

// TestSnapshotTarBatch: a source that sends small blobs as one tar (the
// peer source's batch form) and large ones one by one makes the same
// layout, with one batch run.
func TestSnapshotTarBatch(t *testing.T) {
	lowerSmallBlob(t)
	for _, n := range snapNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			c := newSnapCase(t, n)
			src := newDirSource(t, c.c2, filepath.Join(n.dir, "src")) // the node's user reads it
			saved := newLocalSource
			newLocalSource = func(*snapEnv, *snapSpec) (snapSource, error) { return src, nil }
			t.Cleanup(func() { newLocalSource = saved })
			state, priv := c.apply(t, cty.NilVal, nil, c.config(t, map[string]cty.Value{"source_local_dir": cty.StringVal("/test")}))
			hubtest.CheckLayout(t, n.hub, c.repo, "main")
			if got := src.batchN.Load(); got != 1 {
				t.Errorf("%d batch runs, want 1", got)
			}
			if c.srv.TotalBytes() != 0 {
				t.Errorf("the hub served %d bytes", c.srv.TotalBytes())
			}
			sdktest.Destroy(t, c.p, TypeSnapshot, n.node, state, priv)
			if ents, _ := os.ReadDir(n.hub); len(ents) != 0 {
				t.Errorf("hub not empty after destroy: %v", tree(t, n.hub))
			}
		})
	}
}

// TestSnapshotRefusedBeforeAnyChange: a transfer larger than the free
// space minus keep_free is refused at plan with the numbers, and a hub
// that moved since the plan is refused at apply; nothing is written
// either way.
func TestSnapshotRefusedBeforeAnyChange(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	null := cty.NullVal(snapSchema.Block.ImpliedType())
	huge := c.config(t, map[string]cty.Value{"keep_free": cty.StringVal("1000000TiB")})
	resp := c.p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: TypeSnapshot, Node: n.node, Prior: null,
		Config: huge, Proposed: sdk.ProposedNew(snapSchema.Block, null, huge)})
	err := resp.Diagnostics.Err()
	if err == nil || !strings.Contains(err.Error(), "to transfer") || !strings.Contains(err.Error(), "free on "+n.hub) || !strings.Contains(err.Error(), "keep_free") {
		t.Fatalf("plan with keep_free beyond the disk: %v; want the refusal with the numbers", err)
	}
	cfg := c.config(t, nil)
	c.repo.SetRef("main", c.c1.SHA)
	pl := sdktest.Plan(t, c.p, TypeSnapshot, n.node, null, nil, cfg)
	c.repo.SetRef("main", c.c2.SHA)
	// The apply in a later process (sparkform apply PLANFILE): an apply
	// right after its plan in one process (PlanAndApply, whose plan has
	// just listed the hub again) uses what that plan found.
	later := snapProvider(t, n, map[string]string{"HF_TOKEN": testToken, "HF_ENDPOINT": c.srv.URL})
	ap := later.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: TypeSnapshot, Address: "x", Node: n.node,
		Prior: null, Planned: pl.Planned, Config: cfg, Private: pl.PlannedPrivate}, func(sdk.Progress) {})
	if err := ap.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "run plan again") {
		t.Fatalf("apply after the ref moved: %v; want a refusal", err)
	}
	if _, err := os.Lstat(n.hub); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the hub folder was made by a refused plan or apply")
	}
	if ents, _ := os.ReadDir(n.recs); len(ents) != 0 {
		t.Errorf("records written by a refused apply: %v", ents)
	}
}

// TestSnapshotSharedInOneApply: two snapshots sharing blobs planned
// together; the first's apply brings the shared blobs, and the second's
// apply is not refused for it ("Plan changed"): what moved is only what
// was present, not what the plan decided.
func TestSnapshotSharedInOneApply(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	null := cty.NullVal(snapSchema.Block.ImpliedType())
	cfgA, cfgB := c.config(t, map[string]cty.Value{"revision": cty.StringVal("refs/pr/1")}), c.config(t, nil)
	plA := sdktest.Plan(t, c.p, TypeSnapshot, n.node, null, nil, cfgA)
	plB := sdktest.Plan(t, c.p, TypeSnapshot, n.node, null, nil, cfgB)
	var res []sdk.PlanApplyResponse
	for _, x := range []struct{ cfg, reviewed cty.Value }{{cfgA, plA.Planned}, {cfgB, plB.Planned}} {
		r := sdk.PlanAndApply(context.Background(), c.p, sdk.PlanApplyRequest{TypeName: TypeSnapshot, Address: "x", Node: n.node,
			Prior: null, Config: x.cfg, Reviewed: x.reviewed}, nil, nil)
		if !r.Applied || r.Diagnostics.HasErrors() {
			t.Fatalf("applied %v, plan changed at %q, %v", r.Applied, sdk.DescribePath(r.Changed), r.Diagnostics.Err())
		}
		res = append(res, r)
	}
	hubtest.CheckLayout(t, n.hub, c.repo, "main")
	hubtest.CheckLayout(t, n.hub, c.repo, "refs/pr/1")
	for _, r := range res {
		sdktest.Destroy(t, c.p, TypeSnapshot, n.node, r.NewState, r.Private)
	}
	if ents, _ := os.ReadDir(n.hub); len(ents) != 0 {
		t.Errorf("hub not empty after both destroys: %v", tree(t, n.hub))
	}
}

// TestSnapshotTwoReposOneHub: snapshots of two repositories in one
// hub_dir that the first one made: destroyed first, it hands hub_dir to
// the other, whose destroy then removes it.
func TestSnapshotTwoReposOneHub(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	other := hubtest.GenRepo("acme/drafter", 3, hubtest.FileSpec{Path: "config.json", Size: 50}, hubtest.FileSpec{Path: "w.safetensors", Size: 1 << 20, LFS: true})
	c.srv.AddRepo(other)
	sA, pA := c.apply(t, cty.NilVal, nil, c.config(t, nil))
	sB, pB := c.apply(t, cty.NilVal, nil, c.config(t, map[string]cty.Value{"repo_id": cty.StringVal("acme/drafter")}))
	hubtest.CheckLayout(t, n.hub, other, "main")
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, sA, pA)
	hubtest.CheckLayout(t, n.hub, other, "main")
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, sB, pB)
	if _, err := os.Lstat(n.hub); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("hub_dir left after both destroys: %v", tree(t, n.hub))
	}
}

// TestSnapshotReceiverDiesWithItsConnection: the link to the node is cut
// mid-transfer (sshd's connection processes killed: no signal reaches the
// command); the receiver, its workers and curls stop within seconds, and
// the next apply fetches exactly the bytes that are not on the node.
func TestSnapshotReceiverDiesWithItsConnection(t *testing.T) {
	lowerSmallBlob(t)
	bed := testbed.StartT(t, 1)
	pool := node.NewPool()
	t.Cleanup(func() { pool.Close() })
	bn := bed.Nodes[0]
	conn, err := pool.Get(context.Background(), bn.SDK())
	must(t, err)
	n := snapNode{testNode: testNode{name: "sshd", node: bn.SDK(), conn: conn, dir: bn.Root}, hub: filepath.Join(bn.Root, "hub"), recs: filepath.Join(bn.Root, "records")}
	must(t, os.MkdirAll(n.recs, 0o777))
	must(t, os.Chmod(n.recs, 0o777))
	c := newSnapCase(t, n)
	c.srv.Throttle(64 << 10)
	cfg := c.config(t, nil)
	null := cty.NullVal(snapSchema.Block.ImpliedType())
	pl := sdktest.Plan(t, c.p, TypeSnapshot, n.node, null, nil, cfg)
	done := make(chan sdk.ApplyResponse)
	go func() {
		done <- c.p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: TypeSnapshot, Address: "x", Node: n.node,
			Prior: null, Planned: pl.Planned, Config: cfg, Private: pl.PlannedPrivate}, func(sdk.Progress) {})
	}()
	for c.srv.TotalBytes() < 512<<10 {
		time.Sleep(20 * time.Millisecond)
	}
	bn.DropConnections()
	resp := <-done
	if !resp.Diagnostics.HasErrors() {
		t.Fatal("an apply whose link was cut reported success")
	}
	blobs := filepath.Join(n.hub, c.repo.CacheDirName(), "blobs")
	size := func() int64 {
		var s int64
		_ = filepath.WalkDir(blobs, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					s += fi.Size()
				}
			}
			return nil
		})
		return s
	}
	// Within a few seconds nothing writes any more (at the throttled
	// rate, the rest would take far longer).
	time.Sleep(3 * time.Second)
	last := size()
	time.Sleep(3 * time.Second)
	if now := size(); now != last || last >= c.c2.TotalSize() {
		t.Fatalf("blobs grow from %d to %d bytes (of %d) seconds after the link was cut: the receiver outlived its connection", last, now, c.c2.TotalSize())
	}
	served := c.srv.TotalBytes()
	c.srv.ResetCounters()
	c.srv.Throttle(0)
	conn2, err := node.NewPool().Get(context.Background(), bn.SDK())
	must(t, err)
	n.conn = conn2
	c.p = snapProvider(t, n, map[string]string{"HF_TOKEN": testToken, "HF_ENDPOINT": c.srv.URL})
	state, priv := c.apply(t, resp.NewState, resp.Private, cfg)
	hubtest.CheckLayout(t, n.hub, c.repo, "main")
	if got := c.srv.TotalBytes(); got != c.c2.TotalSize()-last {
		t.Errorf("the second apply fetched %d bytes; %d were on the node of %d (the first run was served %d)", got, last, c.c2.TotalSize(), served)
	}
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, state, priv)
}

// TestSnapshotResumesInterruptedBatch: an apply cancelled while the small
// blobs' batch is in flight (LFS files under the small-blob limit behind
// the CDN redirect, and regular files) leaves their bytes in the inbox;
// the next apply fetches none of those bytes again, blob by blob (the
// hub's counters), and the snapshot is whole.
func TestSnapshotResumesInterruptedBatch(t *testing.T) {
	for _, n := range snapNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			var specs []hubtest.FileSpec
			for i := 0; i < 6; i++ {
				specs = append(specs, hubtest.FileSpec{Path: fmt.Sprintf("model-%05d-of-00006.safetensors", i+1), Size: 1<<20 + int64(i)*4099, LFS: true})
			}
			for i := 0; i < 6; i++ {
				specs = append(specs, hubtest.FileSpec{Path: fmt.Sprintf("tok/part-%02d.json", i), Size: 200<<10 + int64(97*i)})
			}
			repo := hubtest.GenRepo("acme/batch", 37, specs...)
			srv := hubtest.NewServer(t, repo)
			p := snapProvider(t, n, map[string]string{"HF_ENDPOINT": srv.URL})
			c := repo.Main()
			cfg := snapConfig(t, map[string]cty.Value{"hub_dir": cty.StringVal(n.hub), "repo_id": cty.StringVal(repo.ID), "parallel": cty.NumberIntVal(4)})
			null := cty.NullVal(snapSchema.Block.ImpliedType())
			blobs := filepath.Join(n.hub, repo.CacheDirName(), "blobs")
			inbox := filepath.Join(blobs, ".sparkform-incoming."+c.SHA)
			// inFlight: etag -> bytes on the node for blobs not yet whole.
			inFlight := func() map[string]int64 {
				out := map[string]int64{}
				for _, d := range []string{blobs, inbox} {
					ents, _ := os.ReadDir(d)
					for _, e := range ents {
						if !e.Type().IsRegular() {
							continue
						}
						name, isInc := strings.CutSuffix(e.Name(), ".incomplete")
						if d == blobs && !isInc {
							continue
						}
						if fi, err := e.Info(); err == nil {
							out[name] = max(out[name], fi.Size())
						}
					}
				}
				return out
			}
			partial := func(m map[string]int64) (n int) {
				for e, sz := range m {
					if f := fileByEtag(c, e); f != nil && sz > 0 && sz < f.Size {
						n++
					}
				}
				return n
			}
			srv.Throttle(512 << 10)
			pl := sdktest.Plan(t, p, TypeSnapshot, n.node, null, nil, cfg)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan sdk.ApplyResponse)
			go func() {
				done <- p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: TypeSnapshot, Address: "x", Node: n.node,
					Prior: null, Planned: pl.Planned, Config: cfg, Private: pl.PlannedPrivate}, func(sdk.Progress) {})
			}()
			for deadline := time.Now().Add(time.Minute); partial(inFlight()) < 3 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			resp := <-done
			if !resp.Diagnostics.HasErrors() {
				t.Fatal("a cancelled apply reported success")
			}
			time.Sleep(300 * time.Millisecond)
			had := inFlight()
			if partial(had) == 0 {
				t.Fatalf("no partial blob in the inbox after the cancel: %v", had)
			}
			srv.ResetCounters()
			srv.Throttle(0)
			pl2 := sdktest.Plan(t, p, TypeSnapshot, n.node, resp.NewState, resp.Private, cfg)
			ap, _ := sdktest.Apply(t, p, TypeSnapshot, n.node, resp.NewState, pl2.Planned, cfg, pl2.PlannedPrivate)
			hubtest.CheckLayout(t, n.hub, repo, "main")
			var resumed, again int64
			for e, h := range had {
				f := fileByEtag(c, e)
				if f == nil {
					t.Errorf("%s in flight is no blob of the commit", e)
					continue
				}
				var served int64
				for _, q := range srv.Log() {
					if q.Path == f.Path && (q.Status == 200 || q.Status == 206) {
						served += q.Bytes
					}
				}
				resumed += h
				if over := served - (f.Size - h); over > 0 {
					again += min(over, h)
					t.Errorf("%s: %d of its %d bytes were on the node, yet the apply fetched %d (%d again)", f.Path, h, f.Size, served, over)
				}
			}
			t.Logf("%d blobs in flight at the cancel, %d bytes, %d fetched again", len(had), resumed, again)
			sdktest.Destroy(t, p, TypeSnapshot, n.node, ap.NewState, ap.Private)
		})
	}
}

// pathConn runs every command with dir first in PATH (a tool replaced by
// a fault point).
type pathConn struct {
	node.Conn
	dir string
}

func (c pathConn) Run(ctx context.Context, cmd node.Cmd) (node.Result, error) {
	env := map[string]string{"PATH": c.dir + ":" + os.Getenv("PATH")}
	for k, v := range cmd.Env {
		env[k] = v
	}
	cmd.Env = env
	return c.Conn.Run(ctx, cmd)
}

// TestSnapshotDestroyKilledKeepsRefLast: a destroy killed (kill -9 of its
// whole process group) once it has removed the snapshot's links never
// leaves refs/main naming a snapshot that is not whole: the ref is given
// back first (a create writes it last), and the next destroy finishes.
func TestSnapshotDestroyKilledKeepsRefLast(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	cfg := c.config(t, nil)
	before := tree(t, n.hub)
	state, priv := c.apply(t, cty.NilVal, nil, cfg)
	hubtest.CheckLayout(t, n.hub, c.repo, "main")
	// The fault point: xargs does its work, then the destroy is killed.
	shim := t.TempDir()
	xargs, err := exec.LookPath("xargs")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(shim, "xargs"), []byte("#!/bin/sh\n"+xargs+" \"$@\"\nkill -9 0\n"), 0o755))
	killed := snapProvider(t, snapNode{testNode: testNode{name: n.name, node: n.node, conn: pathConn{Conn: n.conn, dir: shim}, dir: n.dir}, hub: n.hub, recs: n.recs},
		map[string]string{"HF_TOKEN": testToken, "HF_ENDPOINT": c.srv.URL})
	null := cty.NullVal(snapSchema.Block.ImpliedType())
	resp := killed.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: TypeSnapshot, Address: "x", Node: n.node,
		Prior: state, Planned: null, Config: null, Private: priv}, func(sdk.Progress) {})
	if !resp.Diagnostics.HasErrors() {
		t.Fatal("the killed destroy reported success")
	}
	links, _ := filepath.Glob(filepath.Join(n.hub, c.repo.CacheDirName(), "snapshots", c.c2.SHA, "*"))
	if len(links) == len(c.c2.Files) {
		t.Fatal("the fault point did not hit after the links were removed")
	}
	if _, err := os.Stat(filepath.Join(n.hub, c.repo.CacheDirName(), "refs", "main")); err == nil {
		if p, _ := hubtest.LayoutProblems(n.hub, c.repo, "main"); len(p) > 0 {
			t.Errorf("refs/main names a snapshot that is not whole after a killed destroy:\n%s", strings.Join(p, "\n"))
		}
	}
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, resp.NewState, resp.Private)
	sameTree(t, "after the second destroy", before, tree(t, n.hub))
}

// TestSnapshotApplyUsesItsPlansLook: an apply right after its plan (the
// engine's PlanAndApply) lists nothing and looks at the node no more:
// one hub API request and three node commands in all (the plan's curl
// and observation, the receiver), where each was done twice.
func TestSnapshotApplyUsesItsPlansLook(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	rc := &runCounter{Conn: n.conn}
	res := &snapshot{conn: func(context.Context, sdk.Node) (node.Conn, error) { return rc, nil },
		getenv: func(k string) string { return map[string]string{"HF_TOKEN": testToken, "HF_ENDPOINT": c.srv.URL}[k] }, recDir: n.recs}
	p := sdktest.GRPC(t, &sdk.Router{Name: "hubstage", Resources: map[string]sdk.Resource{TypeSnapshot: res}})
	cfg := c.config(t, nil)
	null := cty.NullVal(snapSchema.Block.ImpliedType())
	pl := sdktest.Plan(t, p, TypeSnapshot, n.node, null, nil, cfg)
	ap, _ := sdktest.Apply(t, p, TypeSnapshot, n.node, null, pl.Planned, cfg, pl.PlannedPrivate)
	hubtest.CheckLayout(t, n.hub, c.repo, "main")
	if got := c.srv.Requests(hubtest.EndpointAPI); got != 1 {
		t.Errorf("plan and apply asked the hub API %d times, want 1", got)
	}
	if got := rc.runs.Load(); got != 3 {
		t.Errorf("plan and apply ran %d node commands, want 3", got)
	}
	// A later apply (no plan just before) lists and looks again.
	rc.runs.Store(0)
	pl = sdktest.Plan(t, p, TypeSnapshot, n.node, ap.NewState, ap.Private, cfg)
	if !pl.Planned.RawEquals(ap.NewState) {
		t.Error("replan of a present snapshot is not a no-op")
	}
	sdktest.Destroy(t, p, TypeSnapshot, n.node, ap.NewState, ap.Private)
}

// TestSnapshotCutLinkTarWritesNoRef: the receiver's stdin cut short inside
// the links' tar (sparkform killed: its connection, and with it stdin,
// gone) at an entry's end, where tar ends with status 0: the receiver
// fails and writes no ref to a snapshot whose links are not all there.
func TestSnapshotCutLinkTarWritesNoRef(t *testing.T) {
	for _, n := range snapNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			c := newSnapCase(t, n)
			r := &snapshot{conn: func(context.Context, sdk.Node) (node.Conn, error) { return n.conn, nil }, recDir: n.recs}
			s, err := snapSpecOf(c.config(t, nil))
			must(t, err)
			ctx := context.Background()
			src, err := newHubSource(&snapEnv{getenv: func(k string) string {
				return map[string]string{"HF_TOKEN": testToken, "HF_ENDPOINT": c.srv.URL}[k]
			}}, s)
			must(t, err)
			l, err := src.List(ctx, n.conn, s)
			must(t, err)
			obs, err := observe(ctx, n.conn, false, n.recs, []obsReq{{s: s, commit: l.Commit}})
			must(t, err)
			w, err := computeWork(s, l, obs[0])
			must(t, err)
			tr, err := src.Open(ctx, n.conn, s)
			must(t, err)
			argv, secret, _ := tr.NodeFetch()
			bargv, bkind := batchOf(tr)
			links := linksTar(w)
			cut := links[:len(links)/512/2*512] // half the entries, at an entry's end
			_, err = r.receive(ctx, n.conn, false, s, l.Commit, "fetch", "x", bargv, bkind, secret, jobLines(w, bkind != ""), cut, argv, nil, nil)
			if err == nil {
				t.Error("a receiver whose links' tar was cut short reported success")
			}
			if _, err := os.Stat(filepath.Join(n.hub, c.repo.CacheDirName(), "refs", "main")); err == nil {
				t.Error("refs/main written over a snapshot whose links are not all there")
			}
			_, err = r.destroyCommit(ctx, n.conn, false, s, l.Commit)
			must(t, err)
		})
	}
}
