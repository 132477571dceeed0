package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/tfjsoncheck"
)

// requireParts checks the parts the test drives before starting anything.
func requireParts(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		realpart.Missing(t, "root (the test bed creates users and starts sshd)")
	}
	for _, p := range []string{"git", "docker"} {
		if _, err := exec.LookPath(p); err != nil {
			realpart.Missing(t, "%s on PATH: %v", p, err)
		}
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		realpart.Missing(t, "busybox-static at /bin/busybox: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		realpart.Missing(t, "a running Docker Engine: %v: %s", err, out)
	}
}

// sharedDir is a world-readable scratch folder (the sshd test user reads
// the hub and the kit repo through it), removed when the test ends.
func sharedDir(t testing.TB, prefix string) string {
	t.Helper()
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// chownTree gives a tree to the named user (git serves only repositories
// owned by the user reading them, unless told otherwise).
func chownTree(t testing.TB, dir, name string) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	err = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeFiles writes name -> content under dir, making folders.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copyTree copies the regular files of src into dst (modes kept).
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// git runs git in dir with a fixed identity and date, returning stdout.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.invalid",
		"GIT_AUTHOR_DATE=2026-09-17T00:00:00Z", "GIT_COMMITTER_DATE=2026-09-17T00:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// makeKitRepo lays out a repo like the kit's (release/runtime/{serving,aot})
// from testdata/kit, commits it and returns the repo path and commit.
func makeKitRepo(t *testing.T, parent, owner string) (string, string) {
	t.Helper()
	repo := filepath.Join(parent, "DeepSeek-v4.1-Flash-2x-DGX-Spark")
	copyTree(t, "testdata/kit", filepath.Join(repo, "release", "runtime"))
	writeFiles(t, repo, map[string]string{"README.md": "kit stand-in for the e2e test\n"})
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "release runtime")
	commit := git(t, repo, "rev-parse", "HEAD")
	chownTree(t, repo, owner)
	return repo, commit
}

// hub is a Hugging Face hub cache folder in the real layout: repo blobs
// that link into the hub-level shared store, snapshots of relative
// symlinks, refs/main.
type hub struct {
	t   testing.TB
	dir string
}

func repoDir(repoID string) string { return "models--" + strings.ReplaceAll(repoID, "/", "--") }

// commit writes a snapshot of files under commit id rev and points
// refs/main at it. The first file's blob lives in the hub-level store
// (<hub>/blobs/xx/hash) behind a repo blob link, as on the NAS.
func (h *hub) commit(repoID, rev string, files map[string]string) {
	t := h.t
	t.Helper()
	rd := filepath.Join(h.dir, repoDir(repoID))
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, name := range names {
		sum := sha256.Sum256([]byte(files[name]))
		hash := hex.EncodeToString(sum[:])
		blob := filepath.Join(rd, "blobs", hash)
		if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(blob); err != nil {
			if i == 0 {
				shared := filepath.Join(h.dir, "blobs", hash[:2], hash)
				writeFiles(t, filepath.Dir(shared), map[string]string{hash: files[name]})
				rel, _ := filepath.Rel(filepath.Dir(blob), shared)
				if err := os.Symlink(rel, blob); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(blob, []byte(files[name]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		link := filepath.Join(rd, "snapshots", rev, name)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Dir(link), blob)
		if err := os.Symlink(rel, link); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, rd, map[string]string{"refs/main": rev})
}

// rev makes a 40-hex commit id from a label.
func rev(label string) string {
	s := sha256.Sum256([]byte(label))
	return hex.EncodeToString(s[:20])
}

// buildImage builds the stand-in serving image FROM scratch with
// busybox-static (testdata/image) and removes it when the test ends.
func buildImage(t *testing.T, tag string) {
	t.Helper()
	ctxDir := t.TempDir()
	copyTree(t, "testdata/image", ctxDir)
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		realpart.Missing(t, "busybox-static at /bin/busybox: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "busybox"), bb, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("docker", "build", "-q", "-t", tag, ctxDir)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build %s: %v\n%s", tag, err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
}

// docker runs the docker CLI (test setup and "by hand" changes only).
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// freePort returns a TCP port free on 127.0.0.1 right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// health GETs http://127.0.0.1:PORT/health and returns the body.
func health(t *testing.T, port int) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	res, err := c.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/health")
	if err != nil {
		t.Fatalf("health check on port %d: %v", port, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("health check on port %d: %s %s", port, res.Status, b)
	}
	return strings.TrimSpace(string(b))
}

// cli runs the sparkform binary in a working directory with the
// environment the test set up.
type cli struct {
	t   testing.TB
	dir string
	env []string
	// bin is the binary to run; "" means sparkformBin.
	bin string
}

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// run runs sparkform ARGS and returns what it printed and its exit code.
func (c *cli) run(args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := c.bin
	if bin == "" {
		bin = sparkformBin
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = c.dir
	cmd.Env = c.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		c.t.Fatalf("sparkform %v: %v", args, err)
	}
	if testing.Verbose() {
		c.t.Logf("$ sparkform %s -> exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	} else {
		c.t.Logf("$ sparkform %s -> exit %d", strings.Join(args, " "), r.code)
	}
	if r.code == 0 {
		checkDocument(c.t, args, r.stdout)
	}
	return r
}

// checkDocument reads every JSON document an e2e test has sparkform
// print (show -json, show -json PLANFILE, output -json) with
// terraform-json, as tools written for Terraform do, and fails the test
// when it does not decode and validate, a change is not whole, or a
// sensitive value is written (internal/tfjsoncheck).
func checkDocument(t testing.TB, args []string, stdout string) {
	t.Helper()
	var pos []string
	asJSON := false
	takesValue := map[string]bool{"-var": true, "-var-file": true, "-backend-config": true, "-lock-timeout": true, "-chdir": true}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-json":
			asJSON = true
		case takesValue[a]:
			i++
		case !strings.HasPrefix(a, "-"):
			pos = append(pos, a)
		}
	}
	if !asJSON || len(pos) == 0 {
		return
	}
	var err error
	switch {
	case pos[0] == "show" && len(pos) == 1:
		_, err = tfjsoncheck.State([]byte(stdout))
	case pos[0] == "show" && len(pos) == 2:
		_, err = tfjsoncheck.Plan([]byte(stdout))
	case pos[0] == "output" && len(pos) == 1:
		_, err = tfjsoncheck.Outputs([]byte(stdout))
	default:
		return
	}
	if err != nil {
		t.Errorf("sparkform %s: terraform-json: %v\n%s", strings.Join(args, " "), err, stdout)
	}
}

// must runs sparkform and requires the exit code.
func (c *cli) must(code int, args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	if r.code != code {
		c.t.Fatalf("sparkform %s: want exit %d, got %s", strings.Join(args, " "), code, r)
	}
	return r
}

// wantLines requires every regexp-free substring in out.
func wantIn(t *testing.T, what, out string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(out, s) {
			t.Errorf("%s: missing %q in:\n%s", what, s, out)
		}
	}
}

func wantNotIn(t *testing.T, what, out string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if strings.Contains(out, s) {
			t.Errorf("%s: unexpected %q in:\n%s", what, s, out)
		}
	}
}

// listing is a byte-for-byte description of a folder tree: every entry's
// relative path, type, mode, owner, size, content hash or link target.
func listing(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%v uid=%d gid=%d", info.Mode(), st.Uid, st.Gid)
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += fmt.Sprintf(" size=%d sha256=%x", len(b), sum)
		}
		out[rel] = line
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffListings describes how after differs from before.
func diffListings(before, after map[string]string) []string {
	var d []string
	for p, b := range before {
		if a, ok := after[p]; !ok {
			d = append(d, "- "+p+" "+b)
		} else if a != b {
			d = append(d, "~ "+p+" "+b+" => "+a)
		}
	}
	for p, a := range after {
		if _, ok := before[p]; !ok {
			d = append(d, "+ "+p+" "+a)
		}
	}
	sort.Strings(d)
	return d
}

// dockerRm removes a container if it is there.
func dockerRm(name string) { exec.Command("docker", "rm", "-f", name).Run() }

// dockerInspect reports whether a container exists.
func dockerInspect(name string) (string, error) {
	out, err := exec.Command("docker", "inspect", "-f", "{{.Id}}", name).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
