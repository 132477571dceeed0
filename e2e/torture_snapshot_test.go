//go:build torture

package e2e

import (
	"crypto/sha1" //nolint:gosec // git blob ids are sha1 by definition
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/hubtest"
	"github.com/sparkform/sparkform/internal/nodehelper/helpertest"
	"github.com/sparkform/sparkform/internal/testbed"
)

// snapTortureConfig is two snapshots of one repository on one node that
// share most blobs: "a" at the ref main (refs/main written last), "b" at a
// pinned commit with one shard changed and one added. b follows a, so a
// shared blob is fetched once and b finds it present.
const snapTortureConfig = `
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
  node     = node.n
  hub_dir  = var.hub_dir
  repo_id  = var.repo_id
  parallel = 4
}

resource "hubstage_snapshot" "b" {
  node       = node.n
  hub_dir    = var.hub_dir
  repo_id    = var.repo_id
  revision   = var.commit_b
  parallel   = 4
  depends_on = [hubstage_snapshot.a]
}
`

// snapTorture is the bed of TestTortureSnapshot.
type snapTorture struct {
	t      *testing.T
	node   *testbed.Node
	hub    *hubtest.Server
	repo   *hubtest.Repo
	a, b   *hubtest.Commit
	hubDir string
	sf     *cli
	before map[string]string
	// resumed and refetched sum, over the kills, the bytes found in
	// *.incomplete right after a kill and the bytes of those same blobs
	// the converging apply fetched beyond what was missing.
	resumed, refetched int64
	resetAt            time.Time // the hub's counters were last reset (served)
	// helper: the node helper is installed (unless SPARKFORM_TORTURE_HELPER=0).
	helper bool
}

// TestTortureSnapshot is the snapshot transfer's kill point of make
// torture: kill -9 of the CLI, of its plugin, or of the node's sshd
// connections at uniformly random moments of an apply that fetches two
// snapshots sharing blobs from the test hub (throttled, so that the kills
// land inside transfers), and of their destroy. After each kill, before
// anything else runs: no file under blobs/ is named by an address its bytes
// do not hash to (a half blob is only ever *.incomplete), and refs/main is
// written only once its snapshot is whole. Then one apply must converge
// (layout checked file by file, a plan with no changes) fetching no byte
// of a partial blob it already had (the hub's counters: per blob at most
// size minus what *.incomplete held), and destroy leave the node exactly
// as before; every other round destroys b alone first, and a must stay
// whole. SPARKFORM_TORTURE_SNAPSHOT_KILLS (default 20) kills,
// SPARKFORM_TORTURE_SEED repeats a run. The node helper is installed (its
// hubfetch does the transfer, as on a user's node) and is a fourth kind of
// kill: the helper itself, kill -9 mid-transfer; SPARKFORM_TORTURE_HELPER=0
// runs the receiver's curl loop instead.
func TestTortureSnapshot(t *testing.T) {
	want := envInt(t, "SPARKFORM_TORTURE_SNAPSHOT_KILLS", 20)
	seed := int64(envInt(t, "SPARKFORM_TORTURE_SEED", int(time.Now().UnixNano()%1e9)))
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d (SPARKFORM_TORTURE_SEED=%d repeats this run)", seed, seed)
	requireSnapParts(t)

	st := newSnapTorture(t)
	t0 := time.Now()
	st.sf.must(0, "apply", "-auto-approve")
	tApply := time.Since(t0)
	st.checkWhole("a clean apply")
	t0 = time.Now()
	st.sf.must(0, "destroy", "-auto-approve")
	tDestroy := time.Since(t0)
	st.checkBefore("a clean destroy")
	t.Logf("clean apply %s, destroy %s (%d + %d bytes)", tApply.Round(time.Millisecond), tDestroy.Round(time.Millisecond), st.a.TotalSize(), st.b.TotalSize())

	var kills []*tortureKill
	start := time.Now()
	for round := 1; len(kills) < want && time.Since(start) < 30*time.Minute; round++ {
		// The apply killed (often its recovering rerun too), then converged.
		var phase []*tortureKill
		for i := 0; i < 2; i++ {
			if i > 0 && rng.Intn(2) == 0 {
				break
			}
			k := st.killAt(rng, "apply", tApply)
			if k == nil {
				continue
			}
			kills = append(kills, k)
			phase = append(phase, k)
			st.checkAfterKill(fmt.Sprintf("round %d, apply killed (%s at %s)", round, k.kind, k.at))
		}
		st.hub.ResetCounters()
		st.resetAt = time.Now()
		incomplete := st.incomplete()
		if err := st.converge(); err != nil {
			t.Errorf("round %d: %v", round, err)
			st.repair()
			continue
		}
		st.checkResumed(fmt.Sprintf("round %d", round), incomplete)
		st.checkWhole(fmt.Sprintf("round %d, converged", round))
		for _, k := range phase {
			k.converged = true
		}

		// The destroy: one snapshot at a time every other round, killed
		// half the time and converged by destroy alone.
		if round%2 == 0 {
			st.sf.must(0, "destroy", "-auto-approve", "-target", "hubstage_snapshot.b")
			hubtest.CheckLayout(t, st.hubDir, st.repo, "main")
			if _, err := os.Lstat(filepath.Join(st.hubDir, st.repo.CacheDirName(), "snapshots", st.b.SHA)); err == nil {
				t.Errorf("round %d: destroying b left its snapshot folder", round)
			}
			for _, f := range st.b.Files {
				if st.a.File(f.Path) == nil || st.a.File(f.Path).Etag != f.Etag {
					if _, err := os.Lstat(filepath.Join(st.hubDir, st.repo.CacheDirName(), "blobs", f.Etag)); err == nil {
						t.Errorf("round %d: destroying b left its own blob %s (%s)", round, f.Etag, f.Path)
					}
				}
			}
		}
		if rng.Intn(2) == 0 {
			if k := st.killAt(rng, "destroy", tDestroy); k != nil {
				k.byDestroy = true
				kills = append(kills, k)
				phase = append(phase, k)
				st.checkAfterKill(fmt.Sprintf("round %d, destroy killed (%s at %s)", round, k.kind, k.at))
				r := st.sf.run("destroy", "-auto-approve")
				k.converged = r.code == 0
				if r.code != 0 {
					t.Errorf("round %d: the converging destroy: %s", round, r)
				}
			}
		}
		if r := st.sf.run("destroy", "-auto-approve"); r.code != 0 {
			t.Errorf("round %d: destroy: %s", round, r)
		}
		if leaked := st.checkBefore(fmt.Sprintf("round %d, destroyed", round)); leaked {
			for _, k := range phase {
				k.leaked = true
			}
			st.repair()
		}
	}
	table := tortureTable(kills)
	fmt.Printf("\ntorture (snapshot transfer): %d kill points (seed %d); %d bytes found in *.incomplete after the kills, %d of them fetched again\n%s\n",
		len(kills), seed, st.resumed, st.refetched, table)
	t.Logf("\n%s", table)
	if len(kills) < want {
		t.Errorf("only %d kill points, want %d", len(kills), want)
	}
	if st.resumed == 0 {
		t.Errorf("no kill left a partial blob to resume: the kills missed the transfers (clean apply %s)", tApply)
	}
}

func newSnapTorture(t *testing.T) *snapTorture {
	t.Helper()
	// Two blobs above the receiver's small-blob limit (16 MiB: streamed one
	// by one into blobs/ETAG.incomplete) and four below it (fetched in one
	// batch into blobs/.sparkform-incoming.COMMIT/): kills land in both.
	var specs []hubtest.FileSpec
	for i := 0; i < 6; i++ {
		size := 3<<20 + int64(i)*4099
		if i >= 4 {
			size = 18<<20 + int64(i)*4099
		}
		specs = append(specs, hubtest.FileSpec{Path: fmt.Sprintf("model-%05d-of-00006.safetensors", i+1), Size: size, LFS: true})
	}
	for i := 0; i < 40; i++ {
		specs = append(specs, hubtest.FileSpec{Path: fmt.Sprintf("tok/part-%02d.json", i), Size: int64(500 + 97*i)})
	}
	repo := hubtest.GenRepo("torture/shared-blobs", 31, specs...)
	a := repo.Main()
	bSpecs := append([]hubtest.FileSpec{}, specs...)
	bSpecs[0].Key = "b"                                                                            // one shard changed...
	bSpecs = append(bSpecs, hubtest.FileSpec{Path: "extra.safetensors", Size: 2 << 20, LFS: true}) // ...and one added
	b := repo.AddCommit("", bSpecs...)

	bed := testbed.StartT(t, 1)
	st := &snapTorture{t: t, node: bed.Nodes[0], hub: hubtest.NewServer(t, repo), repo: repo, a: a, b: b}
	if os.Getenv("SPARKFORM_TORTURE_HELPER") != "0" {
		n := st.node.SDK()
		n.Become = true // as the config's node
		helpertest.Install(t, n)
		st.helper = true
	}
	// 4 MiB/s per connection: a clean apply takes several seconds, so
	// uniformly random kills land inside transfers.
	st.hub.Throttle(4 << 20)
	st.hubDir = filepath.Join(st.node.Root, "hub")
	work := t.TempDir()
	writeFiles(t, work, map[string]string{"main.sf.hcl": snapTortureConfig})
	st.sf = &cli{t: t, dir: work, bin: sparkformBin, env: append(os.Environ(),
		"NO_COLOR=1",
		"HOME="+t.TempDir(),
		"HF_ENDPOINT="+st.hub.URL,
		fmt.Sprintf("SPARKFORM_VAR_node={ host = %q, port = %d }", st.node.Host, st.node.Port),
		"SPARKFORM_VAR_user="+bed.User,
		"SPARKFORM_VAR_identity_file="+bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+bed.KnownHosts,
		"SPARKFORM_VAR_hub_dir="+st.hubDir,
		"SPARKFORM_VAR_repo_id="+repo.ID,
		"SPARKFORM_VAR_commit_b="+b.SHA,
	)}
	st.before = listing(t, st.node.Root)
	return st
}

// killAt starts op and kills it at a random moment within expect (one
// kind in three: the CLI, its plugin, the node's sshd connections); nil
// when op ended first.
func (st *snapTorture) killAt(rng *rand.Rand, op string, expect time.Duration) *tortureKill {
	st.t.Helper()
	kinds := []string{"cli", "plugin", "sshd"}
	if st.helper {
		kinds = append(kinds, "helper")
	}
	k := &tortureKill{op: "snapshot " + op, kind: kinds[rng.Intn(len(kinds))]}
	k.at = time.Duration(rng.Int63n(int64(expect) + 1))
	fb := &faultBed{t: st.t, sf: st.sf}
	p := fb.start(nil, op, "-auto-approve")
	select {
	case <-p.done:
		return nil
	case <-time.After(k.at):
	}
	switch k.kind {
	case "plugin":
		kids := testbed.ChildrenOf(p.cmd.Process.Pid)
		if len(kids) == 0 {
			k.kind = "cli"
			p.kill()
			break
		}
		_ = syscall.Kill(kids[rng.Intn(len(kids))], syscall.SIGKILL)
		p.wait(4 * time.Minute)
	case "sshd":
		st.node.DropConnections()
		p.wait(4 * time.Minute)
	case "helper":
		// The node's hubfetch (its command line names the hub folder).
		n := 0
		for _, l := range procsMentioning(st.hubDir) {
			if pid, rest, ok := strings.Cut(l, " "); ok && strings.Contains(rest, "hubfetch") {
				var id int
				if _, err := fmt.Sscan(pid, &id); err == nil && syscall.Kill(id, syscall.SIGKILL) == nil {
					n++
				}
			}
		}
		if n == 0 {
			k.kind = "cli"
			p.kill()
			break
		}
		p.wait(4 * time.Minute)
	default:
		p.kill()
	}
	if p.killed && k.kind != "cli" {
		st.t.Errorf("%s killed (%s at %s): sparkform did not end within 4 minutes:\n%s", op, k.kind, k.at, lastLines(p.out.String(), 20))
	}
	return k
}

var (
	hexName = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)
	// inboxName is the receiver's folder for small blobs in flight
	// (blobs/.sparkform-incoming.<commit>/<etag>): a dot folder no cache
	// reader looks in, its files renamed into blobs/ only once verified.
	inboxName = regexp.MustCompile(`^\.sparkform-incoming\.[0-9a-f]{40}$`)
)

// procsMentioning is "PID CMDLINE" of every process whose command line
// holds s (the node's receivers and the curl they run name the hub folder).
func procsMentioning(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid := e.Name()
		if pid == "" || pid[0] < '0' || pid[0] > '9' || pid == fmt.Sprint(os.Getpid()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if err != nil || !strings.Contains(string(b), s) {
			continue
		}
		cmd := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		if len(cmd) > 160 {
			cmd = cmd[:160] + "..."
		}
		out = append(out, pid+" "+cmd)
	}
	return out
}

// checkAfterKill: right after a kill, whatever the node holds is either
// whole and correctly named or visibly partial. Every blob named by an
// address hashes to it; anything else under blobs/ is ADDRESS.incomplete;
// refs/main, when present, names a's commit and a's snapshot is whole.
func (st *snapTorture) checkAfterKill(what string) {
	st.t.Helper()
	// What a killed run left running on the node must end with it: a
	// receiver still writing would race the next apply's on the same
	// *.incomplete (and fetch its bytes twice).
	var left []string
	for deadline := time.Now().Add(time.Second); ; time.Sleep(100 * time.Millisecond) {
		if left = procsMentioning(st.hubDir); len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		st.t.Errorf("%s: still running on the node 1 s after the kill:\n%s", what, strings.Join(left, "\n"))
	}
	repoDir := filepath.Join(st.hubDir, st.repo.CacheDirName())
	ents, _ := os.ReadDir(filepath.Join(repoDir, "blobs"))
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(repoDir, "blobs", name)
		switch {
		case hexName.MatchString(name):
			if got, err := contentAddress(p, len(name)); err != nil || got != name {
				st.t.Errorf("%s: blobs/%s holds bytes that hash to %s (%v): a half or wrong blob under its final name", what, name, got, err)
			}
		case strings.HasSuffix(name, ".incomplete") && hexName.MatchString(strings.TrimSuffix(name, ".incomplete")):
		case e.IsDir() && inboxName.MatchString(name):
		default:
			st.t.Errorf("%s: blobs/%s: neither a blob address nor ADDRESS.incomplete", what, name)
		}
	}
	if b, err := os.ReadFile(filepath.Join(repoDir, "refs", "main")); err == nil {
		if strings.TrimSpace(string(b)) != st.a.SHA {
			st.t.Errorf("%s: refs/main holds %q, want %s", what, b, st.a.SHA)
		} else if p := st.mainProblems(); len(p) > 0 {
			st.t.Errorf("%s: refs/main is written but its snapshot is not whole (refs must come last):\n%s", what, strings.Join(p, "\n"))
		}
	}
}

// contentAddress is the address huggingface_hub names a blob by: sha256
// (64 hex, LFS) or the git blob sha1 (40 hex) of the file's bytes.
func contentAddress(p string, n int) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var h hash.Hash
	if n == 64 {
		h = sha256.New()
	} else {
		fi, err := f.Stat()
		if err != nil {
			return "", err
		}
		h = sha1.New() //nolint:gosec
		fmt.Fprintf(h, "blob %d\x00", fi.Size())
	}
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// incomplete is etag -> size of every blob in flight on the node now:
// blobs/ETAG.incomplete and the small blobs' blobs/.sparkform-incoming.*/ETAG.
func (st *snapTorture) incomplete() map[string]int64 {
	out := map[string]int64{}
	dir := filepath.Join(st.hubDir, st.repo.CacheDirName(), "blobs")
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if etag, ok := strings.CutSuffix(e.Name(), ".incomplete"); ok {
			if fi, err := e.Info(); err == nil {
				out[etag] = fi.Size()
			}
		}
		if e.IsDir() && inboxName.MatchString(e.Name()) {
			in, _ := os.ReadDir(filepath.Join(dir, e.Name()))
			for _, f := range in {
				etag := strings.TrimSuffix(f.Name(), ".incomplete")
				if fi, err := f.Info(); err == nil && hexName.MatchString(etag) && fi.Mode().IsRegular() {
					out[etag] = max(out[etag], fi.Size())
				}
			}
		}
	}
	return out
}

// checkResumed: for every blob a kill left partial (size k), the
// converging apply fetched at most its size minus k: the bytes already
// there are not fetched again.
func (st *snapTorture) checkResumed(what string, incomplete map[string]int64) {
	st.t.Helper()
	for etag, have := range incomplete {
		f := st.fileOf(etag)
		if f == nil {
			st.t.Errorf("%s: %s.incomplete is no blob of the repository", what, etag)
			continue
		}
		if g := st.b.File(f.Path); st.a.File(f.Path) != nil && g != nil && st.a.File(f.Path).Etag != g.Etag {
			continue // one path, two blobs: the hub's counters by path cannot tell them apart
		}
		served := st.served(f.Path)
		st.resumed += have
		if over := served - (f.Size - have); over > 0 {
			st.refetched += min(over, have)
			st.t.Errorf("%s: %s (%s): %d bytes were in %s.incomplete, yet the apply fetched %d of its %d bytes (%d again); the hub's answers for it since the kill:\n%s",
				what, f.Path, etag, have, etag, served, f.Size, over, st.requestsFor(f.Path))
		}
	}
}

// requestsFor lists the hub's requests for path since the counters were
// reset, one per line: what a lost resume asked for and got.
func (st *snapTorture) requestsFor(path string) string {
	var b strings.Builder
	for _, r := range st.hub.Log() {
		if r.Path == path {
			fmt.Fprintf(&b, "\t%s %s range %q agent %q, %s after the reset: %d, %d bytes\n", r.Endpoint, r.Method, r.Range, r.Agent, r.Arrived.Sub(st.resetAt).Round(time.Millisecond), r.Status, r.Bytes)
		}
	}
	return b.String()
}

// served is the content bytes the hub sent for path to requests that came
// after the counters were reset: the bodies of 200 and 206 answers (a 416
// to a resume at the end of a whole blob carries an error page, not
// content). A request of the killed run still being answered at the reset
// is logged after it with all its bytes, those in the .incomplete
// included: counted, it made a resume look like a fetch from 0 (seed
// 966973120: "5275648 again", the partial and one 32 KiB write).
func (st *snapTorture) served(path string) int64 {
	var n int64
	for _, r := range st.hub.Log() {
		if r.Path == path && (r.Status == 200 || r.Status == 206) && !r.Arrived.Before(st.resetAt) {
			n += r.Bytes
		}
	}
	return n
}

// fileOf is the file of a or b whose blob is etag.
func (st *snapTorture) fileOf(etag string) *hubtest.File {
	for _, c := range []*hubtest.Commit{st.a, st.b} {
		for _, f := range c.Files {
			if f.Etag == etag {
				return f
			}
		}
	}
	return nil
}

// converge is one apply, then a plan with nothing to do.
func (st *snapTorture) converge() error {
	if r := st.sf.run("apply", "-auto-approve"); r.code != 0 {
		return fmt.Errorf("apply after the kill: %s", r)
	}
	if r := st.sf.run("plan", "-detailed-exitcode"); r.code != 0 {
		return fmt.Errorf("plan after the converging apply: %s", r)
	}
	return nil
}

// checkWhole: both snapshots in huggingface_hub's layout, byte for byte,
// and nothing partial left.
func (st *snapTorture) checkWhole(what string) {
	st.t.Helper()
	for rev, c := range map[string]*hubtest.Commit{"main": st.a, st.b.SHA: st.b} {
		if p, err := hubtest.LayoutProblems(st.hubDir, st.repo, rev); err != nil || len(p) > 0 {
			st.t.Errorf("%s: snapshot %.7s: %v\n%s", what, c.SHA, err, strings.Join(p, "\n"))
		}
	}
	if inc := st.incomplete(); len(inc) > 0 {
		st.t.Errorf("%s: partial blobs left: %v", what, inc)
	}
}

// checkBefore: the node folder exactly as before the first apply, and no
// restore record about it. It reports whether something was left.
func (st *snapTorture) checkBefore(what string) bool {
	st.t.Helper()
	d := diffListings(st.before, listing(st.t, st.node.Root))
	for _, l := range d {
		st.t.Errorf("%s: leaked: %s", what, l)
	}
	recs := records(st.hubDir)
	for _, r := range recs {
		st.t.Errorf("%s: restore record left: %s", what, r)
	}
	return len(d)+len(recs) > 0
}

// repair puts the node back by hand after a failure, so the next round
// starts clean.
func (st *snapTorture) repair() {
	st.sf.run("destroy", "-auto-approve")
	os.RemoveAll(st.hubDir)
	for _, r := range records(st.hubDir) {
		os.Remove(r)
	}
	os.RemoveAll(filepath.Join(st.sf.dir, ".sparkform"))
}

// mainProblems is what keeps main's snapshot from being whole. A blob of
// b in flight (blobs/ETAG.incomplete, as the hub client names one: the
// node helper fetches small blobs there too, where the shell's batch used
// its inbox folder) is not one of them unless main links to it.
func (st *snapTorture) mainProblems() []string {
	p, _ := hubtest.LayoutProblems(st.hubDir, st.repo, "main")
	ofA := map[string]bool{}
	for _, f := range st.a.Files {
		ofA[f.Etag] = true
	}
	var out []string
	for _, l := range p {
		if name, ok := strings.CutPrefix(l, "left in flight: blobs/"); ok && !ofA[strings.TrimSuffix(name, ".incomplete")] {
			continue
		}
		out = append(out, l)
	}
	return out
}
