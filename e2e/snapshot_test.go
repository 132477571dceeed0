package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/hubtest"
	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
)

// The repository the snapshot tests serve from the test hub.
const snapRepoID = "e2e-org/tiny-model"

// requireSnapParts checks what the snapshot tests drive: root (the test
// bed starts sshd; the tmpfs test mounts) and curl, the receiver's fetcher
// on the node.
func requireSnapParts(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		realpart.Missing(t, "root (the test bed creates users and starts sshd)")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		realpart.Missing(t, "curl on PATH (the node fetches with it): %v", err)
	}
}

// snapBed is examples/hub-snapshot on sshd nodes, against a test hub (the
// CLI's HF_ENDPOINT): what the snapshot tests run sparkform in.
type snapBed struct {
	t   *testing.T
	bed *testbed.Bed
	hub *hubtest.Server
	sf  *cli
}

// newSnapBed starts n nodes and a hub serving repo, and copies the example
// into a working folder. hubDirs gives a node's hub_dir (default
// ROOT/hub); vars are more SPARKFORM_VAR_ settings.
func newSnapBed(t *testing.T, n int, repo *hubtest.Repo, hubDirs map[int]string, vars ...string) *snapBed {
	t.Helper()
	requireSnapParts(t)
	sb := &snapBed{t: t, bed: testbed.StartT(t, n), hub: hubtest.NewServer(t, repo)}
	var entries []string
	for i, nd := range sb.bed.Nodes {
		hd := filepath.Join(nd.Root, "hub")
		if d, ok := hubDirs[i]; ok {
			hd = d
		}
		entries = append(entries, fmt.Sprintf(`n%d = { host = %q, port = %d, hub_dir = %q }`, i+1, nd.Host, nd.Port, hd))
	}
	work := t.TempDir()
	copyTree(t, "../examples/hub-snapshot", work)
	env := append(os.Environ(),
		"NO_COLOR=1",
		"HOME="+t.TempDir(),
		"HF_ENDPOINT="+sb.hub.URL,
		"SPARKFORM_VAR_nodes={"+strings.Join(entries, ", ")+"}",
		"SPARKFORM_VAR_user="+sb.bed.User,
		"SPARKFORM_VAR_identity_file="+sb.bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+sb.bed.KnownHosts,
		"SPARKFORM_VAR_repo_id="+repo.ID,
	)
	for _, v := range vars {
		env = append(env, "SPARKFORM_VAR_"+v)
	}
	sb.sf = &cli{t: t, dir: work, env: env}
	return sb
}

// records is the restore records on this machine (every node's) that
// mention s.
func records(s string) []string {
	var out []string
	recs, _ := filepath.Glob(filepath.Join(restoreRoot, "*", "*"))
	for _, r := range recs {
		if b, err := os.ReadFile(r); err == nil && strings.Contains(string(b), s) {
			out = append(out, r)
		}
	}
	return out
}

// manifestFiles is output files: node key -> container path -> real file.
func (sb *snapBed) manifestFiles() map[string]map[string]string {
	sb.t.Helper()
	out := sb.sf.must(0, "output", "-json", "files")
	var raw map[string][]struct{ Source, Target string }
	if err := json.Unmarshal([]byte(out.stdout), &raw); err != nil {
		sb.t.Fatalf("output -json files: %v\n%s", err, out.stdout)
	}
	m := map[string]map[string]string{}
	for k, fs := range raw {
		m[k] = map[string]string{}
		for _, f := range fs {
			m[k][f.Target] = f.Source
		}
	}
	return m
}

// checkManifest requires every node's manifest to bind exactly the files
// of commit c, each from the blob of its etag in that node's hub_dir.
func (sb *snapBed) checkManifest(when string, c *hubtest.Commit, repo *hubtest.Repo, hubDir func(i int) string) {
	sb.t.Helper()
	got := sb.manifestFiles()
	for i := range sb.bed.Nodes {
		key := fmt.Sprintf("n%d", i+1)
		files := got[key]
		if len(files) != len(c.Files) {
			sb.t.Errorf("%s: %s: the manifest binds %d files, commit %.7s has %d", when, key, len(files), c.SHA, len(c.Files))
		}
		for _, f := range c.Files {
			want := filepath.Join(hubDir(i), repo.CacheDirName(), "blobs", f.Etag)
			if src := files["/model/"+f.Path]; src != want {
				sb.t.Errorf("%s: %s: /model/%s is bound from %q, want the snapshot's blob %q", when, key, f.Path, src, want)
			}
		}
	}
}

// TestSnapshotManifest runs examples/hub-snapshot on two sshd nodes: each
// node fetches the snapshot from the test hub, and hubstage_manifest takes
// its commit from the snapshot (a dependency, no shared folder): the plan
// shows the snapshot's numbers and the manifest "known after apply"; the
// apply binds every file from the node's own blob; a no-op plan follows;
// a moved ref updates both, fetching only the changed file; destroy puts
// both nodes back exactly as they were.
func TestSnapshotManifest(t *testing.T) {
	repo := hubtest.GenRepo(snapRepoID, 29,
		hubtest.FileSpec{Path: "config.json", Size: 300},
		hubtest.FileSpec{Path: "tokenizer.json", Size: 40_000},
		hubtest.FileSpec{Path: "model-00001-of-00002.safetensors", Size: 3 << 20, LFS: true},
		hubtest.FileSpec{Path: "model-00002-of-00002.safetensors", Size: 2 << 20, LFS: true},
		hubtest.FileSpec{Path: "sub/dir/extra.bin", Size: 1 << 20, LFS: true},
	)
	sb := newSnapBed(t, 2, repo, nil)
	hubDir := func(i int) string { return filepath.Join(sb.bed.Nodes[i].Root, "hub") }
	before := map[int]map[string]string{}
	for i, n := range sb.bed.Nodes {
		before[i] = listing(t, n.Root)
	}
	c1 := repo.Main()

	plan := sb.sf.must(0, "plan")
	wantIn(t, "plan", plan.stdout,
		`hubstage_snapshot.model["n1"] will be created`,
		`hubstage_manifest.model["n2"] will be created`,
		"commit "+c1.SHA[:7],
		"Plan: 4 to add, 0 to change, 0 to destroy.")
	if sb.hub.Requests(hubtest.EndpointCDN) != 0 {
		t.Errorf("plan fetched from the CDN: %v", sb.hub.Log())
	}

	sb.sf.must(0, "apply", "-auto-approve")
	for i := range sb.bed.Nodes {
		hubtest.CheckLayout(t, hubDir(i), repo, "main")
	}
	sb.checkManifest("after apply", c1, repo, hubDir)
	if got, want := sb.hub.TotalBytes(), 2*c1.TotalSize(); got != want {
		t.Errorf("the hub served %d bytes for two nodes, want %d (each file once per node)", got, want)
	}
	sb.sf.must(0, "plan", "-detailed-exitcode")

	// The ref moves: one shard changes. Both resources update; only the
	// changed shard is fetched again.
	specs := []hubtest.FileSpec{
		{Path: "config.json", Size: 300},
		{Path: "tokenizer.json", Size: 40_000},
		{Path: "model-00001-of-00002.safetensors", Size: 3 << 20, LFS: true, Key: "v2"},
		{Path: "model-00002-of-00002.safetensors", Size: 2 << 20, LFS: true},
		{Path: "sub/dir/extra.bin", Size: 1 << 20, LFS: true},
	}
	c2 := repo.AddCommit("main", specs...)
	sb.hub.ResetCounters()
	plan = sb.sf.must(0, "plan")
	wantIn(t, "plan after the ref moved", plan.stdout,
		`hubstage_snapshot.model["n1"] will be updated in-place`,
		`hubstage_manifest.model["n2"] will be updated in-place`,
		"commit "+c2.SHA[:7])
	sb.sf.must(0, "apply", "-auto-approve")
	for i := range sb.bed.Nodes {
		hubtest.CheckLayout(t, hubDir(i), repo, "main")
	}
	sb.checkManifest("after the ref moved", c2, repo, hubDir)
	changed := c2.File("model-00001-of-00002.safetensors")
	if got := sb.hub.Bytes(changed.Path); got != 2*changed.Size {
		t.Errorf("the changed shard: %d bytes served, want %d (once per node)", got, 2*changed.Size)
	}
	for _, f := range c2.Files {
		if f.Path != changed.Path && sb.hub.Bytes(f.Path) != 0 {
			t.Errorf("%s did not change but %d bytes of it were fetched again", f.Path, sb.hub.Bytes(f.Path))
		}
	}
	sb.sf.must(0, "plan", "-detailed-exitcode")

	sb.sf.must(0, "destroy", "-auto-approve")
	for i, n := range sb.bed.Nodes {
		if d := diffListings(before[i], listing(t, n.Root)); len(d) > 0 {
			t.Errorf("node %d is not as before after destroy:\n%s", i+1, strings.Join(d, "\n"))
		}
	}
	if left := records(sb.bed.Nodes[0].Root); len(left) > 0 {
		t.Errorf("restore records left after destroy: %v", left)
	}
}

// TestSnapshotDiskTooSmall: a hub_dir on a tmpfs too small for the
// snapshot (or that would leave less than keep_free) is refused at plan,
// with the numbers, and apply refuses it the same way: nothing is written
// on the node (the folder stays empty, no restore record) and nothing is
// fetched beyond the listing. A keep_free it can leave applies.
func TestSnapshotDiskTooSmall(t *testing.T) {
	if _, err := exec.LookPath("mount"); err != nil {
		realpart.Missing(t, "mount (util-linux): %v", err)
	}
	repo := hubtest.GenRepo(snapRepoID, 7,
		hubtest.FileSpec{Path: "config.json", Size: 200},
		hubtest.FileSpec{Path: "model.safetensors", Size: 6 << 20, LFS: true},
	)
	for _, tc := range []struct {
		name     string
		tmpfs    string // size= of the tmpfs
		keepFree string
		fits     bool
	}{
		{"smaller than the snapshot", "2m", "0", false},
		{"fits but not keep_free", "8m", "4MiB", false},
		{"fits with keep_free", "16m", "4MiB", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := sharedDir(t, "sparkform-e2e-tmpfs-")
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+tc.tmpfs+",mode=0755", "tmpfs", mnt).CombinedOutput(); err != nil {
				realpart.Missing(t, "a tmpfs mount (root in a machine that allows it): %v: %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
			hubDir := filepath.Join(mnt, "hub")
			sb := newSnapBed(t, 1, repo, map[int]string{0: hubDir}, "keep_free="+tc.keepFree)

			if tc.fits {
				sb.sf.must(0, "apply", "-auto-approve")
				hubtest.CheckLayout(t, hubDir, repo, "main")
				sb.sf.must(0, "destroy", "-auto-approve")
				if left := listing(t, mnt); len(left) != 1 {
					t.Errorf("destroy left files on the tmpfs: %v", left)
				}
				return
			}
			for _, args := range [][]string{{"plan"}, {"apply", "-auto-approve"}} {
				r := sb.sf.run(args...)
				what := strings.Join(args, " ")
				if r.code == 0 {
					t.Fatalf("%s on a tmpfs of %s with keep_free %s succeeded:\n%s", what, tc.tmpfs, tc.keepFree, r)
				}
				wantIn(t, what, r.stderr, "does not fit", "to transfer", "free on", "keep_free")
				// Nothing written: the mount point holds nothing (listing
				// has only "." in it), no record names the hub folder.
				if left := listing(t, mnt); len(left) != 1 {
					t.Errorf("%s wrote on the tmpfs: %v", what, left)
				}
				if recs := records(hubDir); len(recs) > 0 {
					t.Errorf("%s left restore records: %v", what, recs)
				}
				if n := sb.hub.Requests(hubtest.EndpointCDN); n != 0 {
					t.Errorf("%s fetched from the CDN %d times", what, n)
				}
			}
		})
	}
}

// sharedConfig is two snapshots of one repository on one node, at the
// ref main (a) and at a pinned commit (b), sharing most blobs, in one
// configuration with no ordering between them: what a user with two
// revisions writes.
const sharedConfig = `
variable "node" {
  type = object({ host = string, port = number })
}
variable "user" {}
variable "identity_file" {}
variable "known_hosts" {}
variable "hub_dir" {}
variable "repo_id" {}
variable "commit_b" {}

node "n" {
  host          = var.node.host
  port          = var.node.port
  user          = var.user
  identity_file = var.identity_file
  known_hosts   = var.known_hosts
  become        = true
}

resource "hubstage_snapshot" "a" {
  node    = node.n
  hub_dir = var.hub_dir
  repo_id = var.repo_id
}

resource "hubstage_snapshot" "b" {
  node     = node.n
  hub_dir  = var.hub_dir
  repo_id  = var.repo_id
  revision = var.commit_b
}
`

// TestSnapshotsSharingBlobs: two snapshots of one repository that share
// blobs apply in one apply through the CLI (each blob fetched at most once
// per snapshot) and one after the other (each blob fetched once), and
// are destroyed one at a time, in both orders: the first destroy leaves the
// other whole (shared blobs kept, its own blobs removed), the second leaves
// the node exactly as before.
func TestSnapshotsSharingBlobs(t *testing.T) {
	requireSnapParts(t)
	specs := []hubtest.FileSpec{
		{Path: "config.json", Size: 400},
		{Path: "model-1.safetensors", Size: 1 << 20, LFS: true},
		{Path: "model-2.safetensors", Size: 1<<20 + 17, LFS: true},
		{Path: "tok/vocab.json", Size: 9000},
	}
	repo := hubtest.GenRepo("e2e-org/shared", 33, specs...)
	a := repo.Main()
	bSpecs := append(append([]hubtest.FileSpec{}, specs...), hubtest.FileSpec{Path: "extra.safetensors", Size: 700 << 10, LFS: true})
	bSpecs[1].Key = "b"
	b := repo.AddCommit("", bSpecs...)
	var unique int64
	seen := map[string]bool{}
	for _, c := range []*hubtest.Commit{a, b} {
		for _, f := range c.Files {
			if !seen[f.Etag] {
				seen[f.Etag] = true
				unique += f.Size
			}
		}
	}
	bed := testbed.StartT(t, 1)
	nd := bed.Nodes[0]
	hub := hubtest.NewServer(t, repo)
	hubDir := filepath.Join(nd.Root, "hub")
	work := t.TempDir()
	writeFiles(t, work, map[string]string{"main.sf.hcl": sharedConfig})
	sf := &cli{t: t, dir: work, env: append(os.Environ(),
		"NO_COLOR=1",
		"HOME="+t.TempDir(),
		"HF_ENDPOINT="+hub.URL,
		fmt.Sprintf("SPARKFORM_VAR_node={ host = %q, port = %d }", nd.Host, nd.Port),
		"SPARKFORM_VAR_user="+bed.User,
		"SPARKFORM_VAR_identity_file="+bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+bed.KnownHosts,
		"SPARKFORM_VAR_hub_dir="+hubDir,
		"SPARKFORM_VAR_repo_id="+repo.ID,
		"SPARKFORM_VAR_commit_b="+b.SHA,
	)}
	before := listing(t, nd.Root)
	blob := func(etag string) bool {
		_, err := os.Lstat(filepath.Join(hubDir, repo.CacheDirName(), "blobs", etag))
		return err == nil
	}
	var total int64
	for _, c := range []*hubtest.Commit{a, b} {
		for _, f := range c.Files {
			total += f.Size
		}
	}
	for i, order := range [][2]string{{"b", "a"}, {"a", "b"}} {
		hub.ResetCounters()
		if i == 0 {
			// Both in one apply, at once: a blob both need may be fetched
			// by each (each verifies it; the node keeps one copy), never
			// more. (De-duplicating two transfers that run at the same
			// moment is not done.)
			sf.must(0, "apply", "-auto-approve")
			if got := hub.TotalBytes(); got < unique || got > total {
				t.Errorf("the hub served %d bytes for both snapshots at once, want %d..%d", got, unique, total)
			}
		} else {
			// One after the other: the second fetches only what the first
			// did not bring (shared blobs are present).
			sf.must(0, "apply", "-auto-approve", "-target", "hubstage_snapshot.a")
			sf.must(0, "apply", "-auto-approve")
			if got := hub.TotalBytes(); got != unique {
				t.Errorf("the hub served %d bytes for the two snapshots one after the other, want %d: each blob once", got, unique)
			}
		}
		hubtest.CheckLayout(t, hubDir, repo, "main")
		hubtest.CheckLayout(t, hubDir, repo, b.SHA)
		sf.must(0, "plan", "-detailed-exitcode")

		first, second := order[0], order[1]
		sf.must(0, "destroy", "-auto-approve", "-target", "hubstage_snapshot."+first)
		keep, gone := a, b
		keepRev := "main"
		if first == "a" {
			keep, gone, keepRev = b, a, b.SHA
		}
		hubtest.CheckLayout(t, hubDir, repo, keepRev)
		for _, f := range gone.Files {
			if keep.File(f.Path) == nil || keep.File(f.Path).Etag != f.Etag {
				if blob(f.Etag) {
					t.Errorf("destroy %s first: its own blob %s (%s) is left", first, f.Etag, f.Path)
				}
			}
		}
		if _, err := os.Lstat(filepath.Join(hubDir, repo.CacheDirName(), "snapshots", gone.SHA)); err == nil {
			t.Errorf("destroy %s first: its snapshot folder is left", first)
		}
		sf.must(0, "destroy", "-auto-approve", "-target", "hubstage_snapshot."+second)
		if d := diffListings(before, listing(t, nd.Root)); len(d) > 0 {
			t.Errorf("destroyed %s then %s: the node is not as before:\n%s", first, second, strings.Join(d, "\n"))
		}
		if recs := records(hubDir); len(recs) > 0 {
			t.Errorf("destroyed %s then %s: restore records left: %v", first, second, recs)
		}
	}
}

// TestSnapshotsTwoReposOneHub: snapshots of two repositories (a model and
// its drafter) in one hub folder that does not exist yet, created at once
// (no order between them), then destroyed together: the node is exactly
// as before, hub folder included.
func TestSnapshotsTwoReposOneHub(t *testing.T) {
	requireSnapParts(t)
	model := hubtest.GenRepo("e2e-org/two-model", 51, hubtest.FileSpec{Path: "config.json", Size: 100}, hubtest.FileSpec{Path: "w.safetensors", Size: 300 << 10, LFS: true})
	draft := hubtest.GenRepo("e2e-org/two-draft", 52, hubtest.FileSpec{Path: "config.json", Size: 90}, hubtest.FileSpec{Path: "d.safetensors", Size: 200 << 10, LFS: true})
	bed := testbed.StartT(t, 1)
	nd := bed.Nodes[0]
	hub := hubtest.NewServer(t, model, draft)
	hubDir := filepath.Join(nd.Root, "hub")
	cfg := strings.Replace(strings.Replace(sharedConfig, `variable "commit_b" {}`, `variable "draft_id" {}`, 1),
		"  repo_id  = var.repo_id\n  revision = var.commit_b\n", "  repo_id  = var.draft_id\n", 1)
	work := t.TempDir()
	writeFiles(t, work, map[string]string{"main.sf.hcl": cfg})
	sf := &cli{t: t, dir: work, env: append(os.Environ(),
		"NO_COLOR=1",
		"HOME="+t.TempDir(),
		"HF_ENDPOINT="+hub.URL,
		fmt.Sprintf("SPARKFORM_VAR_node={ host = %q, port = %d }", nd.Host, nd.Port),
		"SPARKFORM_VAR_user="+bed.User,
		"SPARKFORM_VAR_identity_file="+bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+bed.KnownHosts,
		"SPARKFORM_VAR_hub_dir="+hubDir,
		"SPARKFORM_VAR_repo_id="+model.ID,
		"SPARKFORM_VAR_draft_id="+draft.ID,
	)}
	before := listing(t, nd.Root)
	for round := 1; round <= 3; round++ {
		sf.must(0, "apply", "-auto-approve")
		hubtest.CheckLayout(t, hubDir, model, "main")
		hubtest.CheckLayout(t, hubDir, draft, "main")
		sf.must(0, "destroy", "-auto-approve")
		if d := diffListings(before, listing(t, nd.Root)); len(d) > 0 {
			t.Errorf("round %d: the node is not as before after destroy:\n%s", round, strings.Join(d, "\n"))
		}
	}
}
