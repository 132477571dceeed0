package node_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The peer credential check (SO_PEERCRED) is Linux-only, so is its test.

// TestRelayRefusesStrangers: a child of this process is served; a
// process that is not (here a grandchild, as a command a plugin runs
// would be) is hung up on before the SSH handshake.
func TestRelayRefusesStrangers(t *testing.T) {
	_, r := newRelay(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(self)
	child.Env = append(os.Environ(), "RELAY_PROBE="+r.Path())
	out, err := child.Output()
	if err != nil || !strings.HasPrefix(string(out), "SSH-2.0-") {
		t.Fatalf("child: got %q, %v; want the relay's SSH banner", out, err)
	}
	grand := exec.Command("sh", "-c", `"$0"; true`, self)
	grand.Env = child.Env
	out, err = grand.Output()
	if err != nil || len(out) != 0 {
		t.Fatalf("grandchild: got %q, %v; want the relay to hang up", out, err)
	}
	r.Close()
	if _, err := os.Stat(filepath.Dir(r.Path())); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("relay folder after Close: %v, want it gone", err)
	}
}
