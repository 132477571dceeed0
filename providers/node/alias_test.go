package node_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/sshconfig"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// aliasNode resolves alias through an ssh_config file as engine/config
// does for a node block whose host is an ssh_config Host.
func aliasNode(t *testing.T, config, alias string, base sdk.Node) sdk.Node {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := sshconfig.Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	h, err := cfg.Resolve(alias)
	if err != nil {
		t.Fatal(err)
	}
	n := base
	n.Host, n.HostAlias = h.HostName, h.Alias
	if h.Port != 0 {
		n.Port = h.Port
	}
	if h.User != "" {
		n.User = h.User
	}
	return n
}

// Connection errors name the ssh_config alias the user wrote, with the
// address it resolved to, on a real sshd: a refused port, a refused login;
// and the alias changes nothing about how the node is reached.
func TestErrorsNameSSHConfigAlias(t *testing.T) {
	real := bed(t).Nodes[0]
	closed, err := net.Listen("tcp", real.Host+":0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	config := "Host spark-01\n  HostName " + real.Host + "\n  Port " + strconv.Itoa(real.Port) + "\n\n" +
		"Host spark-down\n  HostName " + real.Host + "\n  Port " + strconv.Itoa(closedPort) + "\n\n" +
		"Host spark-nobody\n  HostName " + real.Host + "\n  Port " + strconv.Itoa(real.Port) + "\n  User nobody\n"

	// Reached by its alias: the real sshd answers.
	c, err := node.DialSSH(ctxT(t), aliasNode(t, config, "spark-01", real.SDK()))
	if err != nil {
		t.Fatalf("dial through the alias: %v", err)
	}
	c.Close()

	for _, tc := range []struct {
		alias string
		port  int
		want  []string
	}{
		{"spark-down", closedPort, []string{"connect to spark-down (" + net.JoinHostPort(real.Host, strconv.Itoa(closedPort)) + ")",
			"check that sshd is running on spark-down (" + real.Host + ") and listens on port " + strconv.Itoa(closedPort)}},
		{"spark-nobody", real.Port, []string{"ssh nobody@spark-nobody (" + real.Addr() + "): the node refused every key"}},
	} {
		t.Run(tc.alias, func(t *testing.T) {
			n := aliasNode(t, config, tc.alias, real.SDK())
			n.Timeout = time.Second // the refused port is retried for RetryWindow: 5 s
			opts, lines := notices(t)
			pool := node.NewPoolWith(opts)
			defer pool.Close()
			err := pool.Check(ctxT(t), n)
			if err == nil {
				t.Fatal("the check passed")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			for _, l := range lines() {
				if !strings.Contains(l, tc.alias+" (") {
					t.Errorf("retry notice does not name the alias: %s", l)
				}
			}
		})
	}
}
