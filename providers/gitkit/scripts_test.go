package gitkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/providers/node"
)

// busyboxEnv returns a PATH whose first folder holds every busybox applet,
// so the scripts run with busybox tools as on a minimal node.
func busyboxEnv(t *testing.T) (busybox, path string) {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	realpart.Need(t, "busybox (apt-get install busybox-static)", err)
	out, err := exec.Command(bb, "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, applet := range strings.Fields(string(out)) {
		if err := os.Symlink(bb, filepath.Join(dir, applet)); err != nil {
			t.Fatal(err)
		}
	}
	// git is not an applet: it comes from the system folders after dir.
	return bb, dir + ":" + os.Getenv("PATH")
}

func runScript(t *testing.T, shell []string, env []string, script string, args ...string) string {
	t.Helper()
	return runArgv(t, shell, env, shArgv(script, args...))
}

// runArgv runs argv (sh -c SCRIPT ...) with shell in place of its sh.
func runArgv(t *testing.T, shell []string, env []string, argv []string) string {
	t.Helper()
	argv = append(append([]string{}, shell...), argv[1:]...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", shell, err, out)
	}
	return string(out)
}

// TestScriptsBusyboxCompatible runs the read and stage scripts under
// busybox ash with busybox tools and under the system sh with the system
// tools: both work, and both see the same digest for the same tree.
func TestScriptsBusyboxCompatible(t *testing.T) {
	bb, bbPath := busyboxEnv(t)
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	for name, mode := range map[string]os.FileMode{"a/run.sh": 0o755, "a/b/data": 0o644, "empty": 0o600} {
		p := filepath.Join(tree, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a/run.sh", filepath.Join(tree, "run")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(tree, "hollow"), 0o755); err != nil {
		t.Fatal(err)
	}

	shells := []struct {
		name  string
		shell []string
		env   []string
	}{
		{"system", []string{"sh"}, nil},
		{"busybox", []string{bb, "sh"}, []string{"PATH=" + bbPath}},
	}
	var digests []string
	for _, sh := range shells {
		out := runScript(t, sh.shell, sh.env, readScript, tree, filepath.Join(dir, "nothing"), filepath.Join(tree, "run"))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "dir ") || len(lines[0]) != 4+64 ||
			lines[1] != "absent" || lines[2] != "other symlink" {
			t.Fatalf("%s: read.sh printed %q", sh.name, out)
		}
		digests = append(digests, lines[0])
	}
	if digests[0] != digests[1] {
		t.Errorf("system and busybox digests differ: %q", digests)
	}

	// stage.sh under busybox: a whole-tree checkout of a one-commit repo.
	repo := filepath.Join(dir, "repo")
	gitEnv := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	for _, argv := range [][]string{{"init", "-q", repo}, {"-C", repo, "add", "-A"}, {"-C", repo, "commit", "-q", "-m", "x"}} {
		if argv[0] == "-C" && argv[2] == "add" {
			if err := os.CopyFS(repo, os.DirFS(tree)); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("git", argv...)
		cmd.Env = append(os.Environ(), gitEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", argv, err, out)
		}
	}
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	made1, made2 := filepath.Join(dir, "made"), filepath.Join(dir, "made", "x y")
	dest := filepath.Join(made2, "kit")
	out := runScript(t, shells[1].shell, shells[1].env, stageScript, "create", repo, strings.TrimSpace(string(head)), "", dest)
	if !strings.Contains(out, "progress: cloning "+repo) || !strings.Contains(out, "digest: ") ||
		!strings.Contains(out, "made: "+made1+"\n") || !strings.Contains(out, "made: "+made2+"\n") {
		t.Fatalf("stage.sh under busybox printed %q", out)
	}
	if _, err := os.Stat(filepath.Join(dest, "a/run.sh")); err != nil {
		t.Fatal(err)
	}

	// remove.sh under busybox: the checkout, then the made folders while
	// empty; one holding another file is reported and kept.
	if err := os.WriteFile(filepath.Join(made1, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out = runScript(t, shells[1].shell, shells[1].env, removeScript, dest, made2, made1)
	if out != "removed\nkept: "+made1+"\n" {
		t.Errorf("remove.sh printed %q, want kept: %s", out, made1)
	}
	if _, err := os.Lstat(made2); !os.IsNotExist(err) {
		t.Errorf("empty made folder %s: %v, want removed", made2, err)
	}
	if _, err := os.Stat(filepath.Join(made1, "other")); err != nil {
		t.Errorf("other file: %v", err)
	}
}

// TestTreeDigestPinned pins tree_digest's value for a tree with every kind
// of entry and awkward names (spaces, newlines in a folder, a file and a
// symlink target, a fifo): the digest is in every checkout's state, so
// rewriting the script (fewer processes) must not change it, under the
// system sh or busybox. The values are the original script's (24d09db);
// the two tool sets differ here (GNU sha256sum escapes a newline in a
// name, busybox's does not).
func TestTreeDigestPinned(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	for _, d := range []string{"a/b", "we ird", "nl\ndir"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, f := range map[string]struct {
		data string
		mode os.FileMode
	}{"a/f": {"x\n", 0o644}, "nl\ndir/file\nname": {"y\n", 0o600}, "a/b/exe": {"z", 0o755}} {
		p := filepath.Join(tree, name)
		if err := os.WriteFile(p, []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link": "a/f", "l2": "nl\ndir"} {
		if err := os.Symlink(target, filepath.Join(tree, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := exec.Command("mkfifo", filepath.Join(tree, "fifo")).Run(); err != nil {
		t.Fatal(err)
	}
	bb, bbPath := busyboxEnv(t)
	for _, sh := range []struct {
		name, want string
		shell      []string
		env        []string
	}{
		{"system", "dir 51bee8eeb1ea8fbc5bdfcda06f2a88b1800bdd4f887eeec3db90f9a76da6be16", []string{"sh"}, nil},
		{"busybox", "dir 594dc767876424674e133e1de45044af72c764258daef8e67e8e427e08f71589", []string{bb, "sh"}, []string{"PATH=" + bbPath}},
	} {
		if got := strings.TrimSpace(runScript(t, sh.shell, sh.env, readScript, tree)); got != sh.want {
			t.Errorf("%s: read.sh printed %q; want %q", sh.name, got, sh.want)
		}
		// walk.sh leaves a newline in a name (and busybox's tools, which
		// fail it) to read.sh.
		argv := append(append([]string{}, sh.shell...), walkArgv("", tree)[1:]...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), sh.env...)
		out, err := cmd.Output() // busybox's find refuses -printf: an error
		if obs, st := parseWalk(out, 1); err == nil && st == walkOK {
			t.Errorf("%s: walk.sh gave %v for a tree with newlines; want it left to read.sh", sh.name, obs)
		}
	}
}

// TestWalkDigest: walk.sh's listing, hashed by the provider, is
// tree_digest's value (TestTreeDigestOneWalk's tree, awkward names and
// all), in one find and no sort, sed or sha256sum of the listing on the
// node; other paths are answered as read.sh does.
func TestWalkDigest(t *testing.T) {
	tree := oneWalkTree(t)
	env, log := countingFind(t)
	dir := filepath.Dir(tree)
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := runArgv(t, []string{"sh"}, env, walkArgv("", tree, filepath.Join(dir, "nothing"), filepath.Join(dir, "file"), tree))
	obs, st := parseWalk([]byte(out), 4)
	if st != walkOK {
		t.Fatalf("walk.sh printed %q: not a walk", out)
	}
	want := []observation{{digest: "sha256:" + oneWalkDigest}, {absent: true}, {digest: "(file, not a directory)"}, {digest: "sha256:" + oneWalkDigest}}
	for i := range want {
		if obs[i] != want[i] {
			t.Errorf("path %d: %+v, want %+v", i, obs[i], want[i])
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "find\n"); n != 2 {
		t.Errorf("walk.sh started find %d times for two trees, want 2", n)
	}
	// A helper path where no helper is (not installed, not executable):
	// the script, as without one.
	for _, h := range []string{filepath.Join(dir, "nothing"), filepath.Join(dir, "file"), "~/.cache/sparkform/none"} {
		out := runArgv(t, []string{"sh"}, env, walkArgv(h, tree, filepath.Join(dir, "nothing"), filepath.Join(dir, "file"), tree))
		if got, st := parseWalk([]byte(out), 4); st != walkOK || !slices.Equal(got, want) {
			t.Errorf("helper path %q: %+v (%v), want %+v", h, got, st, want)
		}
	}
	// An unreadable tree is left to read.sh (which says why).
	if _, st := parseWalk([]byte("walk\nd .\n#end 1\n"), 1); st != walkFailed {
		t.Error("a failed walk was not said to be one")
	}
	if _, st := parseWalk([]byte("walk\nd .\n"), 2); st != walkFallback {
		t.Error("a walk cut short was taken")
	}
	if _, st := parseWalk([]byte("walk\nd .\n#newline\n"), 1); st != walkFallback {
		t.Error("a walk that met a newline was taken")
	}
}

// countingFind returns env that puts a `find` first in PATH that logs each
// start to the returned file and runs the system's find.
func countingFind(t *testing.T) (env []string, log string) {
	t.Helper()
	real, err := exec.LookPath("find")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log = filepath.Join(dir, "log")
	w := "#!/bin/sh\necho find >>" + node.Quote(log) + "\nexec " + node.Quote(real) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "find"), []byte(w), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + dir + ":" + os.Getenv("PATH")}, log
}

// TestTreeDigestOneWalk: with GNU find and sha256sum, tree_digest walks a
// tree whose names and symlink targets hold no newline in one find (after
// one find that checks the tools and the names) instead of five, and its
// value is the original script's for names with spaces, tabs, CR,
// backslashes, parentheses, control characters, bytes that are not UTF-8
// and text that looks like sha256sum's output.
// A newline anywhere takes the original walk (TestTreeDigestPinned).
func TestTreeDigestOneWalk(t *testing.T) {
	tree := oneWalkTree(t)
	env, log := countingFind(t)
	const want = "dir " + oneWalkDigest
	if got := strings.TrimSpace(runScript(t, []string{"sh"}, env, readScript, tree)); got != want {
		t.Errorf("read.sh printed %q; want %q (the original script's digest)", got, want)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "find\n"); n != 2 {
		t.Errorf("tree_digest started find %d times, want 2 (the check, then one walk)", n)
	}
}

// oneWalkDigest is the original script's tree_digest of oneWalkTree.
const oneWalkDigest = "7fffcb36efcb42b853321a9fd9ccc85ade5cb022755e61918ee47de561f02633"

// oneWalkTree makes TestTreeDigestOneWalk's tree.
func oneWalkTree(t *testing.T) string {
	tree := filepath.Join(t.TempDir(), "tree")
	for _, d := range []string{"a/b", "we ird", "tab\there", "empty dir"} {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hash := strings.Repeat("0", 64)
	for name, f := range map[string]struct {
		data string
		mode os.FileMode
	}{
		"a/f": {"x\n", 0o644}, "a/b/exe": {"z", 0o755}, "we ird/sp ace.sh": {"#!/bin/sh\n", 0o755},
		`back\slash`: {"b", 0o644}, `x\y.sh`: {"c", 0o700}, "cr\rname": {"", 0o644},
		"f) = " + hash: {"p", 0o755}, "SHA256 (g) = " + hash: {"q", 0o644}, hash + "  h": {"r", 0o644},
		"d x": {"s", 0o644}, "tab\there/o p": {"t", 0o600},
		"bytes \xff\x01\x1b[31m": {"u", 0o644}, "tab\there/\xfe\x02": {"v", 0o755},
	} {
		p := filepath.Join(tree, name)
		if err := os.WriteFile(p, []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link": "a/f", "l nk": "t a r g e t", `l\k`: `x\y.sh`, "dangling": "nowhere/at all"} {
		if err := os.Symlink(target, filepath.Join(tree, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := exec.Command("mkfifo", filepath.Join(tree, "fi fo")).Run(); err != nil {
		t.Fatal(err)
	}
	return tree
}
