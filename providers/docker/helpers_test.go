package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// engine returns an API client on this machine's Docker Engine (for
// test setup and for "by hand" changes), or skips/fails.
func engine(t testing.TB) *client.Client {
	t.Helper()
	api, err := client.New(client.WithHost("unix://" + socketPath))
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		realpart.Missing(t, "Docker Engine at %s: %v", socketPath, err)
	}
	t.Cleanup(func() { api.Close() })
	return api
}

// buildImage builds an image FROM scratch through the API from files (the
// tar context; "Dockerfile" among them) and tags it.
func buildImage(t testing.TB, api *client.Client, tag string, files map[string][]byte, modes map[string]int64) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		mode := int64(0o644)
		if m, ok := modes[name]; ok {
			mode = m
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	tw.Close()
	ctx := context.Background()
	res, err := api.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatalf("build %s: %v", tag, err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	var log bytes.Buffer
	for {
		var m struct {
			Stream      string
			ErrorDetail *struct{ Message string }
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("build %s: %v", tag, err)
		}
		log.WriteString(m.Stream)
		if m.ErrorDetail != nil {
			t.Fatalf("build %s: %s\n%s", tag, m.ErrorDetail.Message, log.String())
		}
	}
}

const guardImage = "sparkform-test/guard:1"

var guardOnce sync.Once

// ensureGuardImage builds the tiny busybox-static image whose entrypoint
// is testdata/guard.sh.
func ensureGuardImage(t testing.TB, api *client.Client) {
	t.Helper()
	guardOnce.Do(func() {
		bb, err := os.ReadFile("/bin/busybox")
		if err != nil {
			realpart.Missing(t, "busybox-static at /bin/busybox: %v", err)
		}
		guard, err := os.ReadFile("testdata/guard.sh")
		if err != nil {
			t.Fatal(err)
		}
		buildImage(t, api, guardImage, map[string][]byte{
			"Dockerfile": []byte("FROM scratch\nCOPY busybox /bin/busybox\nCOPY guard.sh /guard.sh\n" +
				"ENV PATH=/bin IMAGE_ONLY=from-image\nENTRYPOINT [\"/bin/busybox\", \"sh\", \"/guard.sh\"]\n"),
			"busybox": bb, "guard.sh": guard,
		}, map[string]int64{"busybox": 0o755, "guard.sh": 0o755})
	})
}

// testNodes is the local node and, when the sshd test bed and the SSH
// transport are here, one sshd node (become: its user reaches the docker
// socket through sudo -n docker system dial-stdio).
func testNodes(t *testing.T) []sdk.Node {
	nodes := []sdk.Node{{Name: "local", Transport: "local"}}
	if !realpart.Optional(t, "the sshd node", testbed.Available()) {
		return nodes
	}
	bed := testbed.StartT(t, 1)
	n := bed.Nodes[0].SDK()
	n.Become = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pool := node.NewPool()
	defer pool.Close()
	if _, err := pool.Get(ctx, n); !realpart.Optional(t, "the sshd node (the SSH transport cannot reach the test bed)", err) {
		return nodes
	}
	return append(nodes, n)
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRegistry runs Debian's docker-registry on 127.0.0.1 and returns its
// host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	const bin = "/usr/bin/docker-registry"
	if _, err := os.Stat(bin); err != nil {
		realpart.Missing(t, "docker-registry (apt-get install docker-registry): %v", err)
	}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n",
		filepath.Join(dir, "data"), addr)
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

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// byHand runs the docker CLI, the way an operator changes a node.
func byHand(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v\n%s", args, err, out)
	}
}
