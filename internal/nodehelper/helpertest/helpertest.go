// Package helpertest builds the node helper (cmd/sparkform-node) for the
// machine the tests run on and installs it where providers/node looks for
// it on the test bed's nodes, for tests of the providers' helper paths
// without a sparkform built with nodebin. The tests run as root; the bed's
// nodes share this machine's filesystem.
package helpertest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

var (
	buildOnce sync.Once
	built     []byte
	buildErr  error
)

// Binary builds the helper once per test process and returns it.
func Binary(t testing.TB) []byte {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sparkform-node-build")
		if err != nil {
			buildErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "sparkform-node")
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, "github.com/sparkform/sparkform/cmd/sparkform-node")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{msg: strings.TrimSpace(string(msg)), err: err}
			return
		}
		built, buildErr = os.ReadFile(out)
	})
	if buildErr != nil {
		t.Fatalf("building the node helper: %v", buildErr)
	}
	return built
}

type buildError struct {
	msg string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.msg }

// Install builds the helper, installs it for each node where
// node.HelperPath looks (root-owned for become or root logins, else in the
// login's ~/.cache, owned by it), and sets node.HelperEnv for the test (and
// the plugins it starts) to its id, which starts with "t". It returns the
// id.
func Install(t testing.TB, nodes ...sdk.Node) string {
	t.Helper()
	bin := Binary(t)
	sum := sha256.Sum256(bin)
	id := "t" + hex.EncodeToString(sum[:])[:15]
	t.Setenv(node.HelperEnv, id)
	for _, n := range nodes {
		p := node.HelperPath(n)
		if p == "" {
			continue
		}
		uid, gid := 0, 0
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			u, err := user.Lookup(n.User)
			if err != nil {
				t.Fatalf("node helper for %s: %v", n.Name, err)
			}
			uid, _ = strconv.Atoi(u.Uid)
			gid, _ = strconv.Atoi(u.Gid)
			p = filepath.Join(u.HomeDir, rest)
			for d := filepath.Dir(p); d != u.HomeDir && d != "/"; d = filepath.Dir(d) {
				defer func(d string) { _ = os.Chown(d, uid, gid) }(d)
			}
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		tmp := p + ".tmp" + strconv.Itoa(os.Getpid())
		if err := os.WriteFile(tmp, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(tmp, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	return id
}
