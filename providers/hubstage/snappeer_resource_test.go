package hubstage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/hubtest"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// peerResource serves hubstage_snapshot over gRPC reaching the bed's
// nodes through its pool, with the destination's records in recs.
func peerResource(t *testing.T, b *peerBed, recs string) (sdk.Provider, *snapshot) {
	res := &snapshot{conn: b.pool.Get, getenv: func(string) string { return "" }, recDir: recs}
	return sdktest.GRPC(t, &sdk.Router{Name: "hubstage", Resources: map[string]sdk.Resource{TypeSnapshot: res}}), res
}

// TestSnapshotFromNode: hubstage_snapshot copies a snapshot from another
// node, directly (D pulls from S's sshd: 0 bytes through sparkform) and
// relayed (every byte counted), into a tree identical to S's (paths, link
// targets, blob bytes) in the hub's layout. The plan names the path. The
// one-time key is gone after the apply, after a failed apply (on S and
// its folder on D), and a key a killed transfer left is swept by the next
// apply; the key folder of another transfer to D is left alone. Destroy
// gives D's hub back as it was.
func TestSnapshotFromNode(t *testing.T) {
	for _, tc := range []struct {
		name, transfer string
		become         bool // the destination works as root (sudo)
	}{{"direct", "direct", false}, {"relay", "relay", false}, {"direct to a root destination", "direct", true}} {
		transfer := tc.transfer
		t.Run(tc.name, func(t *testing.T) {
			b := startPeerBed(t, map[string]int{"x": 1})
			b.D.Become = tc.become
			repo, _, c2 := testRepo()
			srv := hubtest.NewServer(t, repo)
			srv.SetToken(testToken)
			refDownload(t, srv, b.hub.dir, "main")
			chownTree(t, b.hub.dir)
			dRoot := b.bed.Nodes[1].Root
			dHub, recs := filepath.Join(dRoot, "hub"), filepath.Join(dRoot, "records")
			must(t, os.MkdirAll(dHub, 0o755))
			must(t, os.MkdirAll(recs, 0o755))
			chownTree(t, dRoot)
			before := tree(t, dHub)

			p, _ := peerResource(t, b, recs)
			cfg := snapConfig(t, map[string]cty.Value{"hub_dir": cty.StringVal(dHub), "repo_id": cty.StringVal("acme/tiny-llm"),
				"source_node": nodeValue(b.S), "source_hub_dir": cty.StringVal(b.hub.dir), "transfer": cty.StringVal(transfer)})
			null := cty.NullVal(snapSchema.Block.ImpliedType())
			pl := sdktest.Plan(t, p, TypeSnapshot, b.D, null, nil, cfg)
			sum := pl.Planned.GetAttr(SummaryAttribute).AsString()
			wantPath := `from node.spark["s"] direct over ` + b.bed.Nodes[0].Addr()
			if transfer == "relay" {
				wantPath = `from node.spark["s"] relayed through sparkform`
			}
			if !strings.Contains(sum, wantPath) || !strings.Contains(sum, "commit "+c2.SHA[:7]) {
				t.Errorf("change_summary %q: want the commit and %q", sum, wantPath)
			}
			if got := bigInt(pl.Planned.GetAttr("transfer_bytes")); got != c2.TotalSize() {
				t.Errorf("transfer_bytes = %d, want %d", got, c2.TotalSize())
			}

			ctx := context.Background()
			s, err := snapSpecOf(cfg)
			must(t, err)
			owner := (&peerSource{env: &snapEnv{dst: b.D}}).owner(s)
			// What a failing run leaves is its own to remove (after the
			// checks below have seen it), not the next run's.
			t.Cleanup(func() {
				for _, d := range keyFolders(owner) {
					os.RemoveAll(d)
				}
			})
			// Another transfer to D at the same time (another snapshot, or
			// another test process on this machine): its key folder is not
			// this snapshot's to remove, and not this test's to count.
			other := plantKeyFolder(t, (&peerSource{env: &snapEnv{dst: b.D}}).owner(&snapSpec{HubDir: dHub + "-other", RepoID: s.RepoID, RepoType: s.RepoType}))
			if transfer == "direct" && !tc.become {
				// A transfer killed before its Close (no Close here) ...
				src, err := newPeerSource(&snapEnv{conn: b.pool.Get, dst: b.D}, s)
				must(t, err)
				killed, err := src.Open(ctx, b.dc, s)
				must(t, err)
				if len(b.keyLines(t, killed.(*peerTransfer).id)) != 1 {
					t.Fatal("the killed transfer's key is not installed")
				}

				// ... and a failed apply: a blob S cannot read (the listing
				// sees it, the serve script cannot open it). It fails and
				// takes its key back.
				var gone string
				for _, f := range c2.Files {
					if f.LFS {
						gone = filepath.Join(b.hub.dir, repo.CacheDirName(), "blobs", f.Etag)
						break
					}
				}
				must(t, os.Chmod(gone, 0))
				resp := p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: TypeSnapshot, Address: "hubstage_snapshot.test", Node: b.D,
					Prior: null, Planned: pl.Planned, Config: cfg, Private: pl.PlannedPrivate}, func(sdk.Progress) {})
				if !resp.Diagnostics.HasErrors() {
					t.Fatal("apply succeeded with a blob the source cannot read")
				}
				t.Logf("failed apply: %v", resp.Diagnostics.Err())
				if len(b.keyLines(t, killed.(*peerTransfer).id)) != 0 {
					t.Error("the killed transfer's key is still in authorized_keys after the next apply")
				}
				if recs := b.ownerRecords(t, src.owner(s)); len(recs) != 0 {
					t.Errorf("a one-time key is left after a failed apply: records %v", recs)
				}
				if left := keyFolders(owner); len(left) != 0 {
					t.Errorf("key folders left on D after a failed apply: %v", left)
				}
				b.checkAuthKeysRestored(t)
				must(t, os.Chmod(gone, 0o644))
			}

			ap, events := sdktest.Apply(t, p, TypeSnapshot, b.D, null, pl.Planned, cfg, pl.PlannedPrivate)
			state := ap.NewState
			wantRelayed := int64(0)
			if transfer == "relay" {
				wantRelayed = c2.TotalSize()
			}
			if got := bigInt(state.GetAttr("relayed_bytes")); got != wantRelayed {
				t.Errorf("relayed_bytes = %d, want %d", got, wantRelayed)
			}
			var last sdk.Progress
			for _, e := range events {
				if e.Unit == sdk.UnitBytes {
					last = e
				}
			}
			if last.Total == 0 || last.Current != last.Total {
				t.Errorf("last byte progress %d/%d", last.Current, last.Total)
			}
			hubtest.CheckLayout(t, dHub, repo, "main")
			hubtest.CompareTrees(t, dHub, b.hub.dir, repo.CacheDirName())
			b.checkAuthKeysRestored(t)
			if tc.become {
				// Every file is small: the masters' logins (a ping each) and
				// one batch (tar) over them, not a session per file.
				if n, want := strings.Count(b.bed.Nodes[0].Log(), "forced-command"), mastersFor(defaultParallel)+1; n != want {
					t.Errorf("S's sshd served %d sessions of the one-time key, want %d (a ping per master, tar)", n, want)
				}
			}
			if left := keyFolders(owner); len(left) != 0 {
				t.Errorf("key folders left on D: %v", left)
			}
			if _, err := os.Stat(other); err != nil {
				t.Errorf("the key folder of another transfer to D is gone: %v", err)
			}

			// Refresh and plan: a no-op that reads nothing more from S.
			rd := sdktest.Read(t, p, TypeSnapshot, b.D, state, ap.Private)
			if pl2 := sdktest.Plan(t, p, TypeSnapshot, b.D, rd.NewState, rd.Private, cfg); !pl2.Planned.RawEquals(state) {
				t.Errorf("second plan is not a no-op: %s", pl2.Planned.GetAttr(SummaryAttribute).GoString())
			}
			b.checkAuthKeysRestored(t)

			sdktest.Destroy(t, p, TypeSnapshot, b.D, state, ap.Private)
			sameTree(t, "D's hub after destroy", before, tree(t, dHub))
		})
	}
}

// TestSnapshotFromNodeModes: the blobs a destination that works as root
// (become) gets by the batch (tar) have the node's mode, 0666 less the
// umask (0644 in the bed), as the hub client gives them, not the source's:
// here 0600 (a source user with umask 077). tar run by root kept the
// archive's, so D's login user (a later direct copy from D, a server that
// does not run as root) got Permission denied on root's 0600 blobs.
func TestSnapshotFromNodeModes(t *testing.T) {
	b := startPeerBed(t, map[string]int{"x": 1})
	b.D.Become = true
	repo, _, c2 := testRepo()
	srv := hubtest.NewServer(t, repo)
	srv.SetToken(testToken)
	refDownload(t, srv, b.hub.dir, "main")
	chownTree(t, b.hub.dir)
	sBlobs := filepath.Join(b.hub.dir, repo.CacheDirName(), "blobs")
	ents, err := os.ReadDir(sBlobs)
	must(t, err)
	for _, e := range ents {
		must(t, os.Chmod(filepath.Join(sBlobs, e.Name()), 0o600))
	}
	dRoot := b.bed.Nodes[1].Root
	dHub, recs := filepath.Join(dRoot, "hub"), filepath.Join(dRoot, "records")
	must(t, os.MkdirAll(dHub, 0o755))
	must(t, os.MkdirAll(recs, 0o755))
	chownTree(t, dRoot)
	p, _ := peerResource(t, b, recs)
	cfg := snapConfig(t, map[string]cty.Value{"hub_dir": cty.StringVal(dHub), "repo_id": cty.StringVal("acme/tiny-llm"),
		"source_node": nodeValue(b.S), "source_hub_dir": cty.StringVal(b.hub.dir)})
	null := cty.NullVal(snapSchema.Block.ImpliedType())
	pl := sdktest.Plan(t, p, TypeSnapshot, b.D, null, nil, cfg)
	ap, _ := sdktest.Apply(t, p, TypeSnapshot, b.D, null, pl.Planned, cfg, pl.PlannedPrivate)
	hubtest.CompareTrees(t, dHub, b.hub.dir, repo.CacheDirName())
	dBlobs := filepath.Join(dHub, repo.CacheDirName(), "blobs")
	n := 0
	for _, f := range c2.Files {
		fi, err := os.Stat(filepath.Join(dBlobs, f.Etag))
		if err != nil {
			t.Errorf("%s: %v", f.Path, err)
			continue
		}
		n++
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: blob mode %v on D, want -rw-r--r-- (0666 less D's umask 022)", f.Path, fi.Mode().Perm())
		}
	}
	if n == 0 {
		t.Fatal("no blob on D")
	}
	sdktest.Destroy(t, p, TypeSnapshot, b.D, ap.NewState, ap.Private)
}

// TestSnapshotFromLocal: source_local_dir pushes the operator's own hub
// cache to a node: identical tree, relayed_bytes counts every byte, the
// plan says the bytes go through this machine; destroy gives it back.
func TestSnapshotFromLocal(t *testing.T) {
	b := startPeerBed(t, map[string]int{"x": 1})
	repo, _, c2 := testRepo()
	srv := hubtest.NewServer(t, repo)
	srv.SetToken(testToken)
	local := filepath.Join(t.TempDir(), "hub")
	refDownload(t, srv, local, "main")
	dRoot := b.bed.Nodes[1].Root
	dHub, recs := filepath.Join(dRoot, "hub"), filepath.Join(dRoot, "records")
	must(t, os.MkdirAll(dHub, 0o755))
	must(t, os.MkdirAll(recs, 0o755))
	chownTree(t, dRoot)
	before := tree(t, dHub)

	p, _ := peerResource(t, b, recs)
	cfg := snapConfig(t, map[string]cty.Value{"hub_dir": cty.StringVal(dHub), "repo_id": cty.StringVal("acme/tiny-llm"),
		"source_local_dir": cty.StringVal(local)})
	null := cty.NullVal(snapSchema.Block.ImpliedType())
	pl := sdktest.Plan(t, p, TypeSnapshot, b.D, null, nil, cfg)
	if sum := pl.Planned.GetAttr(SummaryAttribute).AsString(); !strings.Contains(sum, "from the local hub cache "+local+" pushed through sparkform") {
		t.Errorf("change_summary %q does not name the push", sum)
	}
	ap, _ := sdktest.Apply(t, p, TypeSnapshot, b.D, null, pl.Planned, cfg, pl.PlannedPrivate)
	if got := bigInt(ap.NewState.GetAttr("relayed_bytes")); got != c2.TotalSize() {
		t.Errorf("relayed_bytes = %d, want %d", got, c2.TotalSize())
	}
	hubtest.CheckLayout(t, dHub, repo, "main")
	hubtest.CompareTrees(t, dHub, local, repo.CacheDirName())
	sdktest.Destroy(t, p, TypeSnapshot, b.D, ap.NewState, ap.Private)
	sameTree(t, "D's hub after destroy", before, tree(t, dHub))
}

// keyFolders are the one-time key folders on D (the bed's nodes use
// /tmp) of the transfers of owner only: other tests and other test
// processes on this machine copy at the same time, into folders of their
// own owners, which a glob of every sparkform-snappeer-* folder counted
// (TestSnapshotFromNode failed 2 of 4 runs on a busy machine that way).
func keyFolders(owner string) []string {
	left, _ := filepath.Glob(filepath.Join("/tmp", "sparkform-snappeer-"+owner+".*"))
	return left
}

// plantKeyFolder makes a key folder of owner on D, as another transfer in
// flight has it, removed at the end of the test.
func plantKeyFolder(t *testing.T, owner string) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "sparkform-snappeer-"+owner+".")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	must(t, os.WriteFile(filepath.Join(d, "id"), []byte("not a key\n"), 0o600))
	return d
}

// countingConns wraps the pool: how many commands each node ran.
type countingConns struct {
	get func(ctx context.Context, n sdk.Node) (node.Conn, error)
	mu  sync.Mutex
	n   map[string]int
}

func (c *countingConns) conn(ctx context.Context, n sdk.Node) (node.Conn, error) {
	conn, err := c.get(ctx, n)
	if err != nil {
		return nil, err
	}
	return &cmdCountConn{Conn: conn, c: c, key: n.Key()}, nil
}

func (c *countingConns) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

type cmdCountConn struct {
	node.Conn
	c   *countingConns
	key string
}

func (c *cmdCountConn) Run(ctx context.Context, cmd node.Cmd) (node.Result, error) {
	c.c.mu.Lock()
	c.c.n[c.key]++
	c.c.mu.Unlock()
	return c.Conn.Run(ctx, cmd)
}

// TestRelayAndPushBatched: a relay and a push send many blobs per
// command: the apply of a snapshot of many files runs about parallel
// commands on the destination (and on the source node, for the relay),
// not one (or two) per blob; the tree is the source's, every byte counted.
func TestRelayAndPushBatched(t *testing.T) {
	const par = 2
	for _, tc := range []string{"relay", "push"} {
		t.Run(tc, func(t *testing.T) {
			b := startPeerBed(t, map[string]int{"x": 1})
			repo, _, c2 := testRepo()
			srv := hubtest.NewServer(t, repo)
			srv.SetToken(testToken)
			dRoot := b.bed.Nodes[1].Root
			dHub, recs := filepath.Join(dRoot, "hub"), filepath.Join(dRoot, "records")
			must(t, os.MkdirAll(dHub, 0o755))
			must(t, os.MkdirAll(recs, 0o755))
			chownTree(t, dRoot)
			attrs := map[string]cty.Value{"hub_dir": cty.StringVal(dHub), "repo_id": cty.StringVal("acme/tiny-llm"),
				"parallel": cty.NumberIntVal(par)}
			srcHub := filepath.Join(t.TempDir(), "hub")
			if tc == "relay" {
				srcHub = b.hub.dir
				attrs["source_node"] = nodeValue(b.S)
				attrs["source_hub_dir"] = cty.StringVal(srcHub)
				attrs["transfer"] = cty.StringVal("relay")
			} else {
				attrs["source_local_dir"] = cty.StringVal(srcHub)
			}
			refDownload(t, srv, srcHub, "main")
			chownTree(t, srcHub)
			// The biggest blob half there (an earlier apply killed): its
			// first half is not sent again.
			big := &hubtest.File{}
			for _, f := range c2.Files {
				if f.Size > big.Size {
					big = f
				}
			}
			data, err := os.ReadFile(filepath.Join(srcHub, repo.CacheDirName(), "blobs", big.Etag))
			must(t, err)
			half := int64(len(data) / 2)
			must(t, os.MkdirAll(filepath.Join(dHub, repo.CacheDirName(), "blobs"), 0o755))
			must(t, os.WriteFile(filepath.Join(dHub, repo.CacheDirName(), "blobs", big.Etag+".incomplete"), data[:half], 0o644))
			chownTree(t, dRoot)
			cc := &countingConns{get: b.pool.Get, n: map[string]int{}}
			res := &snapshot{conn: cc.conn, getenv: func(string) string { return "" }, recDir: recs}
			p := sdktest.GRPC(t, &sdk.Router{Name: "hubstage", Resources: map[string]sdk.Resource{TypeSnapshot: res}})
			cfg := snapConfig(t, attrs)
			null := cty.NullVal(snapSchema.Block.ImpliedType())
			pl := sdktest.Plan(t, p, TypeSnapshot, b.D, null, nil, cfg)
			cc.take()
			ap, _ := sdktest.Apply(t, p, TypeSnapshot, b.D, null, pl.Planned, cfg, pl.PlannedPrivate)
			n := cc.take()
			files := len(c2.Files)
			// D: observe, prep, one receiver per stream, finish; S: the
			// listing and one stream command per stream.
			if d := n[b.D.Key()]; d > par+3 || files < 3*par {
				t.Errorf("%d commands on the destination for %d blobs (parallel %d), want at most %d", d, files, par, par+3)
			}
			if s := n[b.S.Key()]; tc == "relay" && s > par+1 {
				t.Errorf("%d commands on the source node for %d blobs (parallel %d), want at most %d", s, files, par, par+1)
			}
			if got := bigInt(ap.NewState.GetAttr("relayed_bytes")); got != c2.TotalSize()-half {
				t.Errorf("relayed_bytes = %d, want %d (all but the half blob's first %d bytes)", got, c2.TotalSize()-half, half)
			}
			hubtest.CheckLayout(t, dHub, repo, "main")
			hubtest.CompareTrees(t, dHub, srcHub, repo.CacheDirName())
			t.Logf("%s: %d blobs, commands per node %v", tc, files, n)
		})
	}
}
