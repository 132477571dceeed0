package gitkit_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestBecome stages under a root-owned folder on an sshd node whose user
// is not root: refused without become, done through sudo -n with it.
func TestBecome(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	bed := testbed.StartT(t, 1)
	bn := bed.Nodes[0]
	pool := node.NewPool()
	defer pool.Close()
	if _, err := pool.Get(context.Background(), bn.SDK()); err != nil {
		t.Fatal(err)
	}
	// The test process is root and shares the node's filesystem.
	locked := filepath.Join(bn.Root, "become", "locked")
	if err := os.MkdirAll(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(locked, "kit")
	cfg := config(fx.url, fx.c1, "release/runtime", path)

	for pname, p := range providers(t) {
		t.Run(pname, func(t *testing.T) {
			plain := bn.SDK()
			in := newInstance(t, p, plain, "gitkit_checkout.kit")
			resp, _ := in.apply(cfg, in.plan(cfg))
			if !resp.Diagnostics.HasErrors() {
				t.Fatal("staged into a root-owned folder without become")
			}
			msg := resp.Diagnostics.Err().Error()
			for _, w := range []string{gitkit.ErrNotWritable.Error(), locked + " is not writable by " + bn.User, "set become = true on node " + plain.Name} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if got := listDir(t, locked); len(got) != 0 {
				t.Errorf("refused apply left %q", got)
			}

			nosudo := plain
			nosudo.User, nosudo.Become = bn.NoSudoUser, true
			in = newInstance(t, p, nosudo, "gitkit_checkout.kit")
			resp, _ = in.apply(cfg, in.plan(cfg))
			if !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics.Err().Error(), "sudo") {
				t.Errorf("become without sudo rights: %v", resp.Diagnostics.Err())
			}

			root := plain
			root.Become = true
			in = newInstance(t, p, root, "gitkit_checkout.kit")
			in.converge(cfg)
			fi, err := os.Stat(filepath.Join(path, "serving/serve.py"))
			if err != nil {
				t.Fatal(err)
			}
			if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
				t.Errorf("staged through sudo but owned by uid %d", uid)
			}
			applied := digestOf(in.state)
			// A folder only root can read: Read retries through sudo.
			if err := os.Chmod(filepath.Join(path, "serving"), 0o700); err != nil {
				t.Fatal(err)
			}
			if rr := in.refresh(); rr.RoundTrips != 2 || digestOf(in.state) != applied {
				t.Errorf("read of an unreadable tree: %d round trips, digest %s (want 2, %s)", rr.RoundTrips, digestOf(in.state), applied)
			}
			resp, _ = in.apply(cfg, sdk.PlanResponse{Planned: nullObj(), PlannedPrivate: in.priv})
			if resp.Diagnostics.HasErrors() || !in.state.IsNull() {
				t.Fatalf("destroy through sudo: %v", resp.Diagnostics.Err())
			}
			if got := listDir(t, locked); !reflect.DeepEqual(got, []string(nil)) {
				t.Errorf("destroy left %q", got)
			}

			// Folders made through sudo (root's) are removed through sudo.
			deep := filepath.Join(locked, "made", "deeper", "kit")
			in = newInstance(t, p, root, "gitkit_checkout.kit")
			in.converge(config(fx.url, fx.c1, "release/runtime", deep))
			fi, err = os.Stat(filepath.Join(locked, "made"))
			if err != nil {
				t.Fatal(err)
			}
			if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
				t.Errorf("folder made through sudo owned by uid %d", uid)
			}
			resp, _ = in.apply(cfg, sdk.PlanResponse{Planned: nullObj(), PlannedPrivate: in.priv})
			if resp.Diagnostics.HasErrors() || !in.state.IsNull() || len(resp.Diagnostics) > 0 {
				t.Fatalf("destroy through sudo: %v %v", resp.Diagnostics.Err(), resp.Diagnostics)
			}
			if got := listDir(t, locked); !reflect.DeepEqual(got, []string(nil)) {
				t.Errorf("destroy left %q", got)
			}
		})
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
