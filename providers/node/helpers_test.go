package node_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// One bed of two sshd nodes is shared by the package's tests.
var (
	bedOnce sync.Once
	theBed  *testbed.Bed
	bedErr  error
)

func TestMain(m *testing.M) {
	if sock := os.Getenv("RELAY_PROBE"); sock != "" {
		relayProbe(sock) // a child process of TestRelayRefusesStrangers
	}
	if spec := os.Getenv("HELD_HOLDER"); spec != "" {
		heldHolder(spec) // a child process of TestHeldShellGoesWithKilledCLI
	}
	// No node helper unless a test installs one (install_test.go): the
	// pool's node check would install this build's into the machine's
	// folders, and the counts other tests make include no install.
	os.Setenv(node.HelperEnv, "-")
	cache, err := os.MkdirTemp("", "sparkform-node-test-cache-")
	if err == nil {
		os.Setenv("XDG_CACHE_HOME", cache) // the helper's seen records
	}
	code := m.Run()
	if cache != "" {
		os.RemoveAll(cache)
	}
	if theBed != nil {
		theBed.Stop()
	}
	os.Exit(code)
}

func bed(t testing.TB) *testbed.Bed {
	t.Helper()
	realpart.Need(t, "the sshd test bed", testbed.Available())
	bedOnce.Do(func() { theBed, bedErr = testbed.Start("", 2) })
	if bedErr != nil {
		t.Fatal(bedErr)
	}
	return theBed
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// dial connects to bed node i as the sudo user.
func dial(t testing.TB, i int) *node.SSH {
	t.Helper()
	return dialNode(t, bed(t).Nodes[i].SDK())
}

func dialNode(t testing.TB, n sdk.Node) *node.SSH {
	t.Helper()
	c, err := node.DialSSH(ctxT(t), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// transport is one Conn under test with a scratch directory it may write.
type transport struct {
	name string
	conn node.Conn
	dir  string
}

// transports returns the SSH transport (to node0, scratch in its Root) and
// the local one (scratch in a temp dir), for parity tables.
func transports(t *testing.T) []transport {
	t.Helper()
	b := bed(t)
	sshDir, err := os.MkdirTemp(b.Nodes[0].Root, "t-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sshDir, 0o777); err != nil { // the ssh user writes here
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sshDir) })
	return []transport{
		{"ssh", dial(t, 0), sshDir},
		{"local", node.NewLocal("local"), t.TempDir()},
	}
}
