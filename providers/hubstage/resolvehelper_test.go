package hubstage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/nodehelper"
	"github.com/sparkform/sparkform/internal/nodehelper/helpertest"
	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// helperFile writes the node helper where every user may run it.
func helperFile(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hubstage-helper")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	p := filepath.Join(dir, "sparkform-node")
	must(t, os.WriteFile(p, helpertest.Binary(t), 0o755))
	return p
}

// scriptRun is one run of resolveScript as a user.
type scriptRun struct {
	stdout, stderr []byte
	exit           int
}

// runScript runs resolveScript with the helper path h ("" none) as the
// bed's plain user, in a minimal environment with locale lang.
func runScript(t *testing.T, h, lang, maxd, mark string, groups ...string) scriptRun {
	t.Helper()
	u, err := user.Lookup(testbed.User)
	if err != nil {
		t.Fatalf("the bed's user %s: %v (the test bed creates it)", testbed.User, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	args := append([]string{"-c", resolveScript, "sh", h, maxd, "1", mark}, groups...)
	cmd := exec.Command("sh", args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", "LANG=" + lang}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	exit := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return scriptRun{stdout: out.Bytes(), stderr: errb.Bytes(), exit: exit}
}

// betweenMarkers is the part of stderr the contract covers: from each
// "MARK\tn" line to the next "MARK" line (or the end), markers included.
func betweenMarkers(stderr []byte, mark string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.SplitAfter(string(stderr), "\n") {
		switch {
		case strings.HasPrefix(l, mark+"\t"):
			in = true
		case l == mark+"\n":
			b.WriteString(l)
			in = false
			continue
		}
		if in {
			b.WriteString(l)
		}
	}
	return b.String()
}

// diffTree is a hub a differential case builds, and the instances it asks
// for.
type diffTree struct {
	name  string
	maxd  string // "" = maxDepth
	build func(t *testing.T, h *hub) []*spec
}

// chmod changes a mode and puts it back for the temp dir's removal.
func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	must(t, os.Chmod(p, mode))
	t.Cleanup(func() { _ = os.Chmod(p, 0o755) })
}

func hfSpec(h *hub, repo, rev string) *spec {
	return &spec{HubDir: h.dir, RepoID: repo, RepoType: "model", Revision: rev, Target: "/model"}
}

// diffTrees are the hubs of the differential test: the HF layout and every
// awkward thing the walk meets.
var diffTrees = []diffTree{
	{name: "hf layout", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		snap := h.snapshot(repo, commitOf("a"), map[string]string{
			"config.json": "{}", "model-00001-of-00002.safetensors": "w1", "model-00002-of-00002.safetensors": "w2",
			"engrams/g00/e1.bin": "e1", "engrams/g01/e2.bin": "e2", "original/deep/er/x.pth": "x",
		}, true)
		// A file directly in the snapshot (no link), a folder link, times
		// with nanoseconds, none, and before 1970.
		must(t, os.WriteFile(filepath.Join(snap, "README.md"), []byte("readme"), 0o644))
		must(t, os.Symlink("engrams", filepath.Join(snap, "engrams-link")))
		must(t, os.Chtimes(filepath.Join(snap, "README.md"), time.Unix(0, 0), time.Unix(1700000000, 5)))
		must(t, os.Chtimes(filepath.Join(repo, "blobs", sum("w1")), time.Unix(0, 0), time.Unix(-315619200, 500000000)))
		h.ref(repo, "main", commitOf("a"))
		return []*spec{hfSpec(h, "org/m", "main")}
	}},
	{name: "dangling links loops and specials", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
		h.link(filepath.Join(snap, "gone.bin"), filepath.Join(repo, "blobs", sum("never")))
		b := filepath.Join(repo, "blobs", sum("partial"))
		must(t, os.WriteFile(b+".incomplete", []byte("par"), 0o644))
		h.link(filepath.Join(snap, "partial.bin"), b)
		must(t, os.Symlink("b.bin", filepath.Join(snap, "a.bin")))
		must(t, os.Symlink("a.bin", filepath.Join(snap, "b.bin")))
		must(t, os.Symlink(".", filepath.Join(snap, "up")))
		must(t, os.MkdirAll(filepath.Join(snap, "sub/inner"), 0o755))
		must(t, os.Symlink("../..", filepath.Join(snap, "sub/inner/back")))
		must(t, os.Symlink("/", filepath.Join(snap, "root-escape-dir-at-maxdepth-not")))
		must(t, os.Remove(filepath.Join(snap, "root-escape-dir-at-maxdepth-not")))
		must(t, syscall.Mkfifo(filepath.Join(snap, "pipe"), 0o644))
		h.link(filepath.Join(snap, "escape"), filepath.Join(filepath.Dir(h.dir), "outside"))
		must(t, os.WriteFile(filepath.Join(filepath.Dir(h.dir), "outside"), []byte("o"), 0o644))
		return []*spec{hfSpec(h, "org/m", commitOf("a"))}
	}},
	{name: "link chains", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}", "sub/w.bin": "w"}, true)
		// A folder link in the hub, an absolute target, a link to a link
		// beside it, "." and "//" in targets, and a file reached through
		// a folder link of the snapshot.
		must(t, os.Symlink("blobs", filepath.Join(h.dir, "blobs-alias")))
		sha := sum("w")
		must(t, os.Symlink("../../../blobs-alias/"+sha[:2]+"/"+sha, filepath.Join(snap, "via-alias.bin")))
		must(t, os.Symlink(filepath.Join(h.dir, "blobs", sha[:2], sha), filepath.Join(snap, "absolute.bin")))
		must(t, os.Symlink("config.json", filepath.Join(snap, "to-config.bin")))
		must(t, os.Symlink(".//./sub/../sub//w.bin", filepath.Join(snap, "dots.bin")))
		must(t, os.Symlink("sub", filepath.Join(snap, "sub-link")))
		must(t, os.Symlink("../sub-link/w.bin", filepath.Join(snap, "sub", "back.bin")))
		return []*spec{hfSpec(h, "org/m", commitOf("a"))}
	}},
	{name: "awkward names", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		files := map[string]string{"config.json": "{}"}
		for i, n := range []string{"with space.bin", `back\slash.bin`, "ünïcödé.bin", "new\nline.bin", "ta\tb.bin",
			"q'uote\".bin", "inv\xff.bin", "ctl\x01.bin", "nl dir\n/kid.bin", "cafe\u0301.bin", "’right.bin"} {
			files[n] = fmt.Sprint("c", i)
		}
		h.snapshot(repo, commitOf("a"), files, true)
		return []*spec{hfSpec(h, "org/m", commitOf("a"))}
	}},
	{name: "folders the user cannot read", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		snap := h.snapshot(repo, commitOf("a"), map[string]string{
			"config.json": "{}", "closed/x.bin": "x", "q'u\\o\x01\xff é’\tn/y.bin": "y", "readonly/z.bin": "z",
		}, false)
		chmod(t, filepath.Join(snap, "closed"), 0)
		chmod(t, filepath.Join(snap, "q'u\\o\x01\xff é’\tn"), 0)
		chmod(t, filepath.Join(snap, "readonly"), 0o444)
		return []*spec{hfSpec(h, "org/m", commitOf("a"))}
	}},
	{name: "snapshot the user cannot enter, then one it cannot list", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		s1 := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
		s2 := h.snapshot(repo, commitOf("b"), map[string]string{"config.json": "{b}"}, false)
		chmod(t, s1, 0)
		chmod(t, s2, 0o311)
		return []*spec{hfSpec(h, "org/m", commitOf("a")), hfSpec(h, "org/m", commitOf("b"))}
	}},
	{name: "the last instance cannot enter its snapshot", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		h.snapshot(repo, commitOf("b"), map[string]string{"up/x": "x"}, false)
		must(t, os.Symlink("..", filepath.Join(repo, "snapshots", commitOf("b"), "up", "loop")))
		s1 := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
		chmod(t, s1, 0)
		return []*spec{hfSpec(h, "org/m", commitOf("b")), hfSpec(h, "org/m", commitOf("a"))}
	}},
	{name: "every fatal record and manifests", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
		h.ref(repo, "main", commitOf("a")+"\nrest")
		h.ref(repo, "bad", "../../etc")
		h.ref(repo, "short", "abc")
		h.ref(repo, "nul", commitOf("a")[:20]+"\x00"+commitOf("a")[20:])
		h.ref(repo, "nosnap", commitOf("zz"))
		h.ref(repo, "closed", commitOf("a"))
		chmod(t, filepath.Join(repo, "refs", "closed"), 0)
		mdir := filepath.Join(filepath.Dir(h.dir), "m")
		must(t, os.MkdirAll(mdir, 0o755))
		must(t, os.WriteFile(filepath.Join(mdir, "there"), []byte("a\tb\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(mdir, "closed"), []byte("x"), 0o600))
		with := func(s *spec, mp string) *spec { s.ManifestPath = filepath.Join(mdir, mp); return s }
		// The hub behind a link, and a snapshot folder that is a link.
		alias := filepath.Join(filepath.Dir(h.dir), "hub-link")
		must(t, os.Symlink(h.dir, alias))
		h.snapshot(repo, commitOf("elsewhere"), map[string]string{"sub/x.bin": "x"}, true)
		must(t, os.Symlink(commitOf("elsewhere"), filepath.Join(repo, "snapshots", commitOf("l"))))
		linked := hfSpec(h, "org/m", commitOf("l"))
		linked.HubDir = alias
		return []*spec{
			linked,
			with(hfSpec(h, "org/m", commitOf("a")), "."),
			{HubDir: filepath.Join(h.dir, "nope"), RepoID: "org/m", RepoType: "model", Revision: "main"},
			hfSpec(h, "org/other", "main"),
			with(hfSpec(h, "org/m", "main"), "there"),
			with(hfSpec(h, "org/m", "missing-ref"), "missing"),
			with(hfSpec(h, "org/m", "bad"), "closed"),
			hfSpec(h, "org/m", "short"),
			hfSpec(h, "org/m", "nul"),
			hfSpec(h, "org/m", "closed"),
			hfSpec(h, "org/m", "nosnap"),
			hfSpec(h, "org/m", commitOf("a")),
			hfSpec(h, "org/m", strings.ToUpper(commitOf("a"))),
		}
	}},
	{name: "maxdepth", maxd: "3", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		h.snapshot(repo, commitOf("a"), map[string]string{"a/b/c.bin": "c", "a/b/d/e.bin": "e", "a/x.bin": "x", "a/b/d/f/g.bin": "g"}, false)
		must(t, os.Symlink(".", filepath.Join(repo, "snapshots", commitOf("a"), "a", "b", "self")))
		return []*spec{hfSpec(h, "org/m", commitOf("a"))}
	}},
	{name: "a realpath batch over find's limit", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		files := map[string]string{}
		for i := 0; i < 2500; i++ {
			files[fmt.Sprintf("shards/model-%05d-of-02500-with-a-long-name.safetensors", i)] = fmt.Sprint(i)
		}
		h.snapshot(repo, commitOf("a"), files, false)
		return []*spec{hfSpec(h, "org/m", commitOf("a"))}
	}},
	{name: "a folder fts sorts by inode", build: func(t *testing.T, h *hub) []*spec {
		repo := h.repo("model", "org/m")
		snap := filepath.Join(repo, "snapshots", commitOf("a"), "many")
		must(t, os.MkdirAll(snap, 0o755))
		for i := 0; i < 10050; i++ {
			must(t, os.WriteFile(filepath.Join(snap, fmt.Sprintf("f%d", (i*7919)%10050)), nil, 0o644))
		}
		return []*spec{hfSpec(h, "org/m", commitOf("a"))}
	}},
}

// TestResolveHelperMatchesScript: the node helper's resolve prints what
// the script's GNU find path prints, byte for byte (stdout, find's
// complaints between the markers, exit status), on the same hubs as the
// same user, in a UTF-8 and the C locale; so the provider's parsed and
// built result is the same.
func TestResolveHelperMatchesScript(t *testing.T) {
	h := helperFile(t)
	if _, err := user.Lookup(testbed.User); err != nil {
		realpart.Need(t, "the test bed (its users)", testbed.Available())
		bed, err := testbed.Start("", 1) // creates the bed's users
		must(t, err)
		must(t, bed.Stop())
	}
	for _, tc := range diffTrees {
		t.Run(tc.name, func(t *testing.T) {
			hb := newHub(t, t.TempDir())
			specs := tc.build(t, hb)
			var groups []string
			for _, s := range specs {
				if s.Target == "" {
					s.Target = "/model"
				}
				groups = append(groups, s.HubDir, s.repoDir(), s.Revision, s.ManifestPath)
			}
			maxd := tc.maxd
			if maxd == "" {
				maxd = strconv.Itoa(maxDepth)
			}
			const mark = "#sparkform-find-test"
			for _, lang := range []string{"C.UTF-8", "C"} {
				script := runScript(t, "", lang, maxd, mark, groups...)
				helper := runScript(t, h, lang, maxd, mark, groups...)
				if !bytes.Equal(script.stdout, helper.stdout) {
					t.Errorf("%s: stdout differs:\n%s", lang, lineDiff(script.stdout, helper.stdout))
				}
				if s, hl := betweenMarkers(script.stderr, mark), betweenMarkers(helper.stderr, mark); s != hl {
					t.Errorf("%s: find's complaints differ:\nscript: %q\nhelper: %q", lang, s, hl)
				}
				if script.exit != helper.exit {
					t.Errorf("%s: exit status %d from the script, %d from the helper", lang, script.exit, helper.exit)
				}
				sb, se := parsedAndBuilt(specs, script, mark)
				hb, he := parsedAndBuilt(specs, helper, mark)
				if !reflect.DeepEqual(sb, hb) || se != he {
					t.Errorf("%s: parsed results differ:\nscript: %v %s\nhelper: %v %s", lang, sb, se, hb, he)
				}
				if t.Failed() {
					return
				}
			}
			if tc.name == "a realpath batch over find's limit" &&
				!regexp.MustCompile(`(?m)^/.*\nF\t`).Match(runScript(t, "", "C", maxd, mark, groups...).stdout) {
				t.Errorf("find ran realpath once: the case does not show a batch boundary")
			}
		})
	}
}

// parsedAndBuilt is what the provider makes of a run: each instance's
// build result (entries, digest) or its error text.
func parsedAndBuilt(specs []*spec, r scriptRun, mark string) ([]string, string) {
	items, err := parseResolve(r.stdout, r.exit)
	if err != nil {
		return nil, "parse: " + err.Error()
	}
	findComplaints(items, r.stderr, mark)
	var out []string
	for i, it := range items {
		if i >= len(specs) {
			return out, "more items than specs"
		}
		s := *specs[i]
		if err := s.check(); err != nil {
			out = append(out, "spec: "+err.Error())
			continue
		}
		res, err := build(&s, it)
		if err != nil {
			out = append(out, "error: "+err.Error())
			continue
		}
		out = append(out, fmt.Sprintf("%d files %s %s", len(res.Entries), res.Commit, res.Digest))
	}
	return out, ""
}

// lineDiff shows the first differing lines.
func lineDiff(a, b []byte) string {
	al, bl := strings.SplitAfter(string(a), "\n"), strings.SplitAfter(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\nscript: %q\nhelper: %q", i+1, x, y)
		}
	}
	return "(same lines)"
}

// The helper counts the script's odd and bad texts toward find's
// argument limit: its lengths are the script's.
func TestResolveHelperKnowsTheScriptsTexts(t *testing.T) {
	for _, tc := range []struct {
		name string
		re   string
		n    int
	}{
		{"odd", `(?s)\nodd='(.*?)'\n`, nodehelper.ResolveOddLen},
		{"bad", `(?s)\nbad='(.*?)'\none\(\)`, nodehelper.ResolveBadLen},
	} {
		m := regexp.MustCompile(tc.re).FindStringSubmatch(resolveScript)
		if m == nil || len(m[1]) != tc.n {
			t.Errorf("the script's %s text: %d bytes, the helper counts %d", tc.name, len(m[1]), tc.n)
		}
	}
}

// TestManifestSameWithHelper: on an sshd node, as a plain user and with
// become, hubstage_manifest reads and plans the same with the node helper
// installed and without it (SPARKFORM_NODE_HELPER=-): a quiet no-op
// refresh and plan, a moved ref's drift and update plan, a broken hub's
// warning. A refresh with the helper starts one process on the node (the
// session's, which execs the helper); without it, find in the session's
// place and realpath.
func TestManifestSameWithHelper(t *testing.T) {
	bed := testbed.StartT(t, 1)
	nd := bed.Nodes[0]
	h := newHub(t, t.TempDir())
	repo, c1, c2 := modelHub(t, h)
	cfg := config(t, map[string]cty.Value{"hub_dir": cty.StringVal(h.dir), "repo_id": cty.StringVal("coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"), "target": cty.StringVal("/model")})
	broken := filepath.Join(repo, "snapshots", c2, "engrams", "gone.bin")
	for _, become := range []bool{false, true} {
		var transcripts [2]string
		for i, helper := range []bool{false, true} {
			t.Run(fmt.Sprintf("become=%v/helper=%v", become, helper), func(t *testing.T) {
				n := nd.SDK()
				n.Become = become
				if helper {
					helpertest.Install(t, n)
				} else {
					t.Setenv(node.HelperEnv, "-")
				}
				h.ref(repo, "main", c1)
				// The state as root on a local node of the same name: the
				// trace below sees the connection and the refresh only.
				local := sdk.Node{Name: n.Name, Transport: "local"}
				st, pr := sdktest.Create(t, provider(t, []testNode{{name: "root", node: local, conn: node.NewLocal(n.Name)}}), TypeManifest, local, cfg)
				var tr strings.Builder
				fmt.Fprintf(&tr, "create: %s %s\n", st.GetAttr("commit").AsString(), st.GetAttr("digest").AsString())

				if !nd.WaitIdle(10 * time.Second) {
					t.Fatal("a connection of an earlier run is still open")
				}
				trace, err := nd.Trace()
				must(t, err)
				pool := node.NewPool()
				defer pool.Close()
				c, err := pool.Get(context.Background(), n)
				must(t, err)
				p := provider(t, []testNode{{name: "sshd", node: n, conn: c, dir: nd.Root}})
				read := sdktest.Read(t, p, TypeManifest, n, st, pr)
				ps, _ := trace.Stop(0) // the pool's connection stays open
				walk := map[string]bool{"find": true, "realpath": true, "sh": true, filepath.Base(node.HelperPath(n)): true}
				var started []string
				for _, proc := range ps {
					if name := proc.Program(); walk[name] {
						started = append(started, name)
					}
				}
				want := []string{"find", "realpath"}
				if helper && userCanRun(t, n.User, node.HelperPath(n)) {
					want = []string{filepath.Base(node.HelperPath(n))}
				} else if helper {
					// With become the walk runs as the login user first; a
					// root-owned helper under a folder only root may enter
					// (/var/lib/sparkform, 0700 once a restore record made
					// it) is not theirs to run: the script's tools walk.
					t.Logf("%s cannot run %s: the script walks", n.User, node.HelperPath(n))
				}
				slices.Sort(started)
				if !slices.Equal(started, want) {
					t.Errorf("a quiet refresh started %v on the node, want %v (all: %s)", started, want, ps.Programs())
				}
				t.Logf("processes: %s", ps.Programs())
				fmt.Fprintf(&tr, "quiet read: same %v, %d diagnostics\n", read.NewState.RawEquals(st), len(read.Diagnostics))
				pl := sdktest.Plan(t, p, TypeManifest, n, read.NewState, read.Private, cfg)
				fmt.Fprintf(&tr, "quiet plan: no-op %v\n", pl.Planned.RawEquals(read.NewState))

				h.ref(repo, "main", c2)
				read = sdktest.Read(t, p, TypeManifest, n, st, pr)
				fmt.Fprintf(&tr, "moved ref: %s\n", read.NewState.GetAttr(SummaryAttribute).AsString())
				pl = sdktest.Plan(t, p, TypeManifest, n, read.NewState, read.Private, cfg)
				fmt.Fprintf(&tr, "update plan: %s %s %s %v\n", pl.Planned.GetAttr("commit").AsString(), pl.Planned.GetAttr("digest").AsString(),
					pl.Planned.GetAttr(SummaryAttribute).AsString(), pl.Diagnostics.Err())

				h.link(broken, filepath.Join(repo, "blobs", sum("never")))
				defer os.Remove(broken)
				read = sdktest.Read(t, p, TypeManifest, n, st, pr)
				for _, d := range read.Diagnostics {
					fmt.Fprintf(&tr, "broken hub: %s: %s\n", d.Summary, d.Detail)
				}
				transcripts[i] = tr.String()
				t.Log(transcripts[i])
			})
		}
		if transcripts[0] != transcripts[1] {
			t.Errorf("become=%v: with the helper the manifest behaves otherwise:\nwithout:\n%s\nwith:\n%s", become, transcripts[0], transcripts[1])
		}
	}
}

// userCanRun says whether user may execute p (sh's [ -x ], as the
// script tests it).
func userCanRun(t *testing.T, name, p string) bool {
	t.Helper()
	u, err := user.Lookup(name)
	must(t, err)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		p = filepath.Join(u.HomeDir, rest)
	}
	cmd := exec.Command("sh", "-c", `[ -x "$1" ]`, "sh", p)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	return cmd.Run() == nil
}

// helperBenchHub builds a hub with one snapshot of n files in the shared
// blob chain (snapshot -> repo blob -> hub blob), a few folders deep.
func helperBenchHub(b *testing.B, n int) (*hub, *spec) {
	h := newHub(b, b.TempDir())
	repo := h.repo("model", "org/m")
	files := make(map[string]string, n)
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("shards/g%02d/model-%05d-of-%05d.safetensors", i%10, i, n)] = fmt.Sprint("weights ", i)
	}
	h.snapshot(repo, commitOf("a"), files, true)
	h.ref(repo, "main", commitOf("a"))
	s := &spec{HubDir: h.dir, RepoID: "org/m", RepoType: "model", Revision: "main", Target: "/model"}
	must(b, s.check())
	return h, s
}

// BenchmarkResolveHelper reads a 300- and a 1,000-file snapshot with the
// resolve script's tools and with the node helper: "node" runs the
// script here as the node would (node-cpu-ms/op is the CPU of the
// processes it started: sh, find, realpath or the helper), "sshd" is the
// provider's read over SSH to a bed node (wall).
func BenchmarkResolveHelper(b *testing.B) {
	hp := helperFile(b)
	bed := testbed.StartT(b, 1)
	nd := bed.Nodes[0]
	for _, n := range []int{300, 1000} {
		_, s := helperBenchHub(b, n)
		groups := []string{s.HubDir, s.repoDir(), s.Revision, s.ManifestPath}
		for _, mode := range []string{"script", "helper"} {
			h := ""
			if mode == "helper" {
				h = hp
			}
			b.Run(fmt.Sprintf("%d/%s/node", n, mode), func(b *testing.B) {
				before := childCPU()
				for i := 0; i < b.N; i++ {
					cmd := exec.Command("sh", append([]string{"-c", resolveScript, "sh", h, strconv.Itoa(maxDepth), "1", "#m"}, groups...)...)
					out, err := cmd.Output()
					if err != nil || bytes.Count(out, []byte("\nF\t")) != n {
						b.Fatalf("%v: %d files", err, bytes.Count(out, []byte("\nF\t")))
					}
				}
				b.ReportMetric(float64((childCPU()-before).Microseconds())/1000/float64(b.N), "node-cpu-ms/op")
			})
			b.Run(fmt.Sprintf("%d/%s/sshd", n, mode), func(b *testing.B) {
				sn := nd.SDK()
				if mode == "helper" {
					helpertest.Install(b, sn)
				} else {
					b.Setenv(node.HelperEnv, "-")
				}
				pool := node.NewPool()
				defer pool.Close()
				c, err := pool.Get(context.Background(), sn)
				must(b, err)
				r := resourceFor([]testNode{{name: "sshd", node: sn, conn: c}})
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, err := r.resolveOne(context.Background(), sn, s)
					if err != nil || len(res.Entries) != n {
						b.Fatalf("%v: %d entries", err, len(res.Entries))
					}
				}
			})
		}
	}
}

// A helper that refuses resolve (exit 125: one older than the script) or
// cannot be exec'd (a folder at its path: 126) leaves the walk to the
// script's tools: the same result as without a helper. (The script exec'd
// it and the read failed.)
func TestResolveHelperRefusedFallsBack(t *testing.T) {
	h := newHub(t, t.TempDir())
	_, c1, _ := modelHub(t, h)
	s := &spec{HubDir: h.dir, RepoID: "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw", RepoType: "model", Revision: "main", Target: "/model"}
	must(t, s.check())
	dir := t.TempDir()
	old := filepath.Join(dir, "old-helper")
	must(t, os.WriteFile(old, []byte("#!/bin/sh\necho 'sparkform-node: unknown subcommand \"resolve\"' >&2\nexit 125\n"), 0o755))
	conn := node.NewLocal("node.local")
	want, err := resolveMode(context.Background(), conn, "", false, []*spec{s}, "1")
	must(t, err)
	for _, helper := range []string{old, dir} {
		items, err := resolveMode(context.Background(), conn, helper, false, []*spec{s}, "1")
		if err != nil {
			t.Fatalf("helper %s: %v", helper, err)
		}
		if !reflect.DeepEqual(items, want) || items[0].Commit != c1 || len(items[0].Files) != 5 {
			t.Errorf("helper %s: %+v, want %+v", helper, items[0], want[0])
		}
	}
}
