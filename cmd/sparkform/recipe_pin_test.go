package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
)

// TestRecipeImportPinFrom: an unpinned image is pinned to the registry
// digest the node (here the local one, through the real Docker Engine)
// holds; a node without the image, or with one never pulled or pushed
// (no registry digest), leaves it unpinned with a warning saying why.
// The registry is Debian's docker-registry on 127.0.0.1. The same over
// SSH to an sshd node (with and without sudo); a host key that is not in
// known_hosts is refused.
func TestRecipeImportPinFrom(t *testing.T) {
	docker, err := exec.LookPath("docker")
	realpart.Need(t, "the docker CLI", err)
	bb, err := os.ReadFile("/bin/busybox")
	realpart.Need(t, "busybox-static at /bin/busybox", err)
	reg := startPinRegistry(t)
	image := reg + "/sparkform-pin-test"
	ctx := t.TempDir()
	os.WriteFile(filepath.Join(ctx, "busybox"), bb, 0o755)
	os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte("FROM scratch\nCOPY busybox /bin/busybox\nENTRYPOINT [\"/bin/busybox\"]\n"), 0o644)
	sh := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(docker, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	t.Cleanup(func() { exec.Command(docker, "image", "rm", "-f", image+":latest").Run() })

	dir := t.TempDir()
	recipe := filepath.Join(dir, "pin.yaml")
	os.WriteFile(recipe, []byte(fmt.Sprintf("model: org/model\nruntime: vllm\ncontainer: %s\ndefaults:\n  port: 8000\ncommand: vllm serve {model} --port {port}\n", image)), 0o644)
	imp := func(out string, pin ...string) (string, string) {
		t.Helper()
		if pin == nil {
			pin = []string{"-pin-from", "local"}
		}
		var o, e bytes.Buffer
		if code := run(append([]string{"recipe", "import", recipe, "-o", filepath.Join(dir, out)}, pin...), nil, &o, &e); code != 0 {
			t.Fatalf("import exited %d: %s", code, e.String())
		}
		main, err := os.ReadFile(filepath.Join(dir, out, "main.sf.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		return string(main), e.String()
	}

	// Not on the node: unpinned, and the warning says so.
	main, stderr := imp("absent")
	if !strings.Contains(stderr, "local does not have "+image) || !strings.Contains(stderr, "cannot see that drift") {
		t.Errorf("no image on the node: stderr %q", stderr)
	}
	if !imageIs(main, image) {
		t.Errorf("the image changed though the node lacks it:\n%s", main)
	}

	// Built here, never pushed: no registry digest to pin.
	sh("build", "-q", "-t", image+":latest", ctx)
	_, stderr = imp("built")
	if !strings.Contains(stderr, "no registry digest") {
		t.Errorf("a built image: stderr %q", stderr)
	}

	// Pushed: the node's repo digest is what the config runs.
	sh("push", "-q", image+":latest")
	digests := sh("image", "inspect", "--format", "{{range .RepoDigests}}{{println .}}{{end}}", image+":latest")
	want := strings.Fields(digests)[0]
	if !strings.HasPrefix(want, image+"@sha256:") {
		t.Fatalf("repo digest %q", want)
	}
	main, stderr = imp("pushed")
	if !imageIs(main, want) || !strings.Contains(main, "pinned to the digest local has") {
		t.Errorf("not pinned to %s:\n%s", want, main)
	}
	if strings.Contains(stderr, "unpinned") {
		t.Errorf("a pinned image still warned: %q", stderr)
	}

	// Over SSH to an sshd node of the test bed (this machine's Docker):
	// as a user in the docker group, and as one that needs sudo -n.
	if !realpart.Optional(t, "the sshd test bed", testbed.Available()) {
		return
	}
	n := testbed.StartT(t, 1).Nodes[0]
	ssh := func(user string, extra ...string) []string {
		return append([]string{"-pin-from", fmt.Sprintf("%s@%s", user, net.JoinHostPort(n.Host, fmt.Sprint(n.Port))), "-identity-file", n.IdentityFile, "-known-hosts", n.KnownHosts}, extra...)
	}
	for _, tc := range []struct {
		name string
		pin  []string
	}{
		{"docker-group", ssh(n.DockerUser)},
		{"sudo", ssh(n.User, "-pin-sudo")},
	} {
		main, stderr := imp("ssh-"+tc.name, tc.pin...)
		if !imageIs(main, want) || strings.Contains(stderr, "unpinned") {
			t.Errorf("%s: not pinned to %s (stderr %q)", tc.name, want, stderr)
		}
	}
	// A host key that is not the node's is refused, and nothing is written.
	other := filepath.Join(dir, "other_known_hosts")
	os.WriteFile(other, nil, 0o600)
	var o, e bytes.Buffer
	args := append([]string{"recipe", "import", recipe, "-o", filepath.Join(dir, "unknown-key")}, ssh(n.DockerUser)...)
	args[len(args)-1] = other
	if code := run(args, nil, &o, &e); code == 0 {
		t.Errorf("an unknown host key was accepted: %s", o.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "unknown-key")); err == nil {
		t.Error("a refused import wrote its folder")
	}
	t.Logf("unknown host key: %s", e.String())
}

// imageIs reports whether the module call runs image.
func imageIs(main, image string) bool {
	return regexp.MustCompile(`(?m)^\s*image\s+= ` + regexp.QuoteMeta(fmt.Sprintf("%q", image)) + `$`).MatchString(main)
}

// startPinRegistry runs Debian's docker-registry on 127.0.0.1 (Docker
// pushes to a loopback registry over plain HTTP) and returns host:port.
func startPinRegistry(t *testing.T) string {
	t.Helper()
	const bin = "/usr/bin/docker-registry"
	if _, err := os.Stat(bin); err != nil {
		realpart.Missing(t, "docker-registry (apt-get install docker-registry): %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var logb bytes.Buffer
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = &logb, &logb
	if err := cmd.Start(); err != nil {
		t.Fatalf("start registry: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry on %s did not answer: %v\n%s", addr, err, logb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
