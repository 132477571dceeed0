package main

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/providers/sdk"
)

func TestHumanCounts(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		p    sdk.Progress
		from int64
		want string
	}{
		{sdk.Progress{Current: 3328599654, Total: 31997506355, Unit: sdk.UnitBytes}, 3328599654 - 40*47185920, "3.1 GiB of 29.8 GiB, 45.0 MiB/s"},
		{sdk.Progress{Current: 512, Total: 2048, Unit: sdk.UnitBytes}, 512, "512 B of 2.0 KiB"},
		{sdk.Progress{Current: 450, Total: 1000, Unit: sdk.UnitObjects}, 0, "450 of 1000 objects"},
		{sdk.Progress{Current: 7}, 0, "7"},
		{sdk.Progress{Message: "resolving"}, 0, ""},
	} {
		o := &op{addr: "x", action: plans.Create, start: now.Add(-40 * time.Second)}
		o.update(sdk.Progress{Current: tc.from, Total: tc.p.Total, Unit: tc.p.Unit}, now.Add(-40*time.Second))
		o.update(tc.p, now)
		if got := o.counts(now); got != tc.want {
			t.Errorf("counts(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
	o := &op{addr: `docker_image.w["a"]`, action: plans.Create, start: now.Add(-40 * time.Second)}
	o.update(sdk.Progress{Message: "pulling r: 1/2 layers", Current: 3328599654, Total: 31997506355, Unit: sdk.UnitBytes}, now)
	want := `docker_image.w["a"]: Still creating... [40s elapsed], 3.1 GiB of 29.8 GiB (pulling r: 1/2 layers)`
	if got := o.stillLine(now); got != want {
		t.Errorf("stillLine = %q, want %q", got, want)
	}
}

// throttle serves at most rate bytes a second per response body.
type throttledBody struct {
	r    io.ReadCloser
	rate int
}

func (b *throttledBody) Read(p []byte) (int, error) {
	if len(p) > b.rate/10 {
		p = p[:b.rate/10]
	}
	n, err := b.r.Read(p)
	time.Sleep(time.Duration(n) * time.Second / time.Duration(b.rate))
	return n, err
}

func (b *throttledBody) Close() error { return b.r.Close() }

// startThrottledRegistry starts Debian's docker-registry with an image of
// size random bytes in one layer, and a proxy in front of it that serves
// blobs at rate bytes a second. It returns the image reference through
// the proxy.
func startThrottledRegistry(t *testing.T, size, rate int) string {
	t.Helper()
	const bin = "/usr/bin/docker-registry"
	_, err := os.Stat(bin)
	realpart.Need(t, "docker-registry (apt-get install docker-registry)", err)
	realpart.Need(t, "the Docker Engine", exec.Command("docker", "info").Run())
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	regAddr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), regAddr)
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var logb bytes.Buffer
	reg := exec.Command(bin, "serve", filepath.Join(dir, "config.yml"))
	reg.Stdout, reg.Stderr = &logb, &logb
	if err := reg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Process.Kill(); reg.Wait() })
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + regAddr + "/v2/")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry did not start: %v\n%s", err, logb.String())
		}
	}
	// The image: one layer of random bytes (nothing cached anywhere),
	// made with docker import, so no builder is involved.
	direct := regAddr + "/sparkform/pull-budget:1"
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	blob := make([]byte, size)
	rand.Read(blob)
	tw.WriteHeader(&tar.Header{Name: "weights.bin", Mode: 0o644, Size: int64(size)})
	tw.Write(blob)
	tw.Close()
	imp := exec.Command("docker", "import", "-", direct)
	imp.Stdin = &layer
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	if out, err := exec.Command("docker", "push", direct).CombinedOutput(); err != nil {
		t.Fatalf("docker push: %v\n%s", err, out)
	}
	exec.Command("docker", "rmi", "-f", direct).Run()

	target, _ := url.Parse("http://" + regAddr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if strings.Contains(r.Request.URL.Path, "/blobs/") && r.Request.Method == http.MethodGet {
			r.Body = &throttledBody{r: r.Body, rate: rate}
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/sparkform/pull-budget:1"
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", ref).Run() })
	return ref
}

// TestPullLineBudgetOffTerminal: a pull through a throttled local registry
// (about 25 s), with stdout a pipe, prints a line when it starts and ends
// and in between at most one line per 10 s, each with human sizes; the
// provider reports progress several times a second.
func TestPullLineBudgetOffTerminal(t *testing.T) {
	ref := startThrottledRegistry(t, 3<<20, 128<<10)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "main.sf.hcl"), []byte(fmt.Sprintf(`
node "local" {
  transport = "local"
}

resource "docker_image" "weights" {
  node         = node.local
  name         = %q
  keep_locally = false
}
`, ref)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+work, "NO_COLOR=1")
	sf := func(args ...string) (string, time.Duration) {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "sparkform"), args...)
		cmd.Dir, cmd.Env = work, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("sparkform %v: %v\n%s", args, err, out.String())
		}
		return out.String(), time.Since(start)
	}
	defer sf("destroy", "-auto-approve")
	output, took := sf("apply", "-auto-approve")
	out := bytes.NewBufferString(output)
	var lines, still []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(l, "docker_image.weights: ") {
			lines = append(lines, l)
			if strings.Contains(l, "Still creating...") {
				still = append(still, l)
			}
		}
	}
	t.Logf("pull took %s; %d lines about it (%.1f a minute):\n%s", took.Round(time.Second), len(lines),
		float64(len(lines))/took.Minutes(), strings.Join(lines, "\n"))
	if took < 15*time.Second {
		t.Fatalf("the throttled pull took only %s; the test needs one over 15 s", took)
	}
	budget := 2 + int(took/stillEvery)
	if len(lines) > budget {
		t.Errorf("%d lines about the pull in %s, want at most %d (start, end, one per 10 s)", len(lines), took.Round(time.Second), budget)
	}
	if len(still) < 1 {
		t.Fatalf("no 'Still creating...' line during a %s pull", took.Round(time.Second))
	}
	human := regexp.MustCompile(`Still creating\.\.\. \[\d+s elapsed\], [0-9.]+ (KiB|MiB) of 3\.0 MiB, [0-9.]+ KiB/s \(pulling .*: \d/\d layers\)`)
	if !human.MatchString(still[0]) {
		t.Errorf("progress line %q: want elapsed time, human sizes of the total, a rate and the layer count", still[0])
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Errorf("escape sequences in output that is not a terminal:\n%q", out.String())
	}

	// The same pull with -json: apply_progress at most once per 10 s, with
	// the byte counts, unit and rate as fields.
	sf("destroy", "-auto-approve") // keep_locally = false: the image goes
	stream, took := sf("apply", "-json", "-auto-approve")
	var progress []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stream), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("apply -json: a line is not JSON: %v: %q", err, l)
		}
		if m["type"] == "apply_progress" {
			progress = append(progress, m)
		}
	}
	t.Logf("-json pull took %s; %d apply_progress messages", took.Round(time.Second), len(progress))
	if len(progress) < 1 || len(progress) > int(took/stillEvery) {
		t.Fatalf("%d apply_progress messages in %s, want 1..%d", len(progress), took.Round(time.Second), int(took/stillEvery))
	}
	hook := progress[0]["hook"].(map[string]any)
	total, _ := hook["total"].(float64)
	current, _ := hook["current"].(float64)
	if hook["unit"] != "bytes" || total < 3<<20 || current <= 0 || current > total || hook["bytes_per_second"] == nil || hook["elapsed_seconds"].(float64) < 10 {
		t.Errorf("apply_progress hook %v: want unit bytes, current and total of >= 3 MiB, bytes_per_second, elapsed_seconds >= 10", hook)
	}
}

// TestProgressRedrawOnTerminal: on a terminal (a pty), running operations
// are lines redrawn in place (cursor up, erase) with their elapsed time,
// an overall N/M line shows while more than one runs, and each finished
// operation leaves one plain line.
func TestProgressRedrawOnTerminal(t *testing.T) {
	work := t.TempDir()
	repo := filepath.Join(work, "repo")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "x"}} {
		c := exec.Command("git", args...)
		c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
		if out, err := c.CombinedOutput(); err != nil {
			realpart.Need(t, "git", fmt.Errorf("%v: %s", err, out))
		}
	}
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	// git's fetch takes 3 s: long enough to be redrawn several times.
	slow := filepath.Join(work, "slowbin")
	os.MkdirAll(slow, 0o755)
	realGit, _ := exec.LookPath("git")
	os.WriteFile(filepath.Join(slow, "git"), []byte("#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = fetch ]; then sleep 3; break; fi\ndone\nexec "+realGit+" \"$@\"\n"), 0o755)
	os.WriteFile(filepath.Join(work, "main.sf.hcl"), []byte(fmt.Sprintf(`
node "local" {
  transport = "local"
}

resource "gitkit_checkout" "kit" {
  for_each = toset(["a", "b"])
  node     = node.local
  repo     = %q
  commit   = %q
  path     = "%s/out/${each.key}"
}
`, repo, strings.TrimSpace(string(head)), work)), 0o644)

	cmd := exec.Command(filepath.Join(binDir, "sparkform"), "apply", "-auto-approve")
	cmd.Dir = work
	env := []string{"HOME=" + work, "TERM=xterm", "PATH=" + slow + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PATH=") && !strings.HasPrefix(e, "TERM=") && !strings.HasPrefix(e, "HOME=") && !strings.HasPrefix(e, "SPARKFORM_PROGRESS=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	realpart.Need(t, "a pty", err)
	var mu sync.Mutex
	var raw bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			mu.Lock()
			raw.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	werr := cmd.Wait()
	<-done
	f.Close()
	out := raw.String()
	if werr != nil {
		t.Fatalf("apply: %v\n%q", werr, out)
	}
	if os.Getenv("SHOW_PTY") != "" {
		t.Logf("%q", out)
	}
	// The redraw: cursor up N lines and erase to the end, many times.
	redraws := regexp.MustCompile(`\x1b\[\d+A\x1b\[J`).FindAllStringIndex(out, -1)
	if len(redraws) < 5 {
		t.Errorf("%d redraws on the terminal, want several:\n%q", len(redraws), out)
	}
	for _, want := range []string{
		`gitkit_checkout.kit["a"]: Creating... [1s]`,
		`gitkit_checkout.kit["a"]: Creating... [2s]`,
		`Applying: 0/2 done, 2 running`,
		`gitkit_checkout.kit["a"]: Creation complete after`,
		`gitkit_checkout.kit["b"]: Creation complete after`,
		"Apply complete! Resources: 2 added, 0 changed, 0 destroyed.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
	if strings.Contains(out, "Still creating") {
		t.Errorf("plain 'Still creating' lines on a terminal:\n%q", out)
	}
	// What stays on the screen has one line per finished operation.
	if n := strings.Count(out, `gitkit_checkout.kit["a"]: Creation complete`); n != 1 {
		t.Errorf("%d completion lines for kit[\"a\"], want 1", n)
	}
}
