package hubstage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	"github.com/sparkform/sparkform/internal/realpart"
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
		if n.name == "busybox" { // no curl among busybox's applets
			continue
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
			if !strings.Contains(sum, "commit "+c2.SHA[:7]) || !strings.Contains(sum, "from hub "+srv.URL) || !strings.Contains(sum, "free") {
				t.Errorf("change_summary %q: want the commit, the source and the free space", sum)
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

