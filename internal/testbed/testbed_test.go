package testbed_test

import (
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
)

// sshArgs logs in with the system OpenSSH client, host-key checking on.
func sshArgs(b *testbed.Bed, n *testbed.Node, user string, cmd ...string) []string {
	return append([]string{
		"-F", "/dev/null", "-i", b.IdentityFile, "-p", strconv.Itoa(n.Port),
		"-o", "UserKnownHostsFile=" + b.KnownHosts, "-o", "StrictHostKeyChecking=yes",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
		user + "@" + n.Host, "--"}, cmd...)
}

func TestBedLoginsWithRealSSHClient(t *testing.T) {
	b := testbed.StartT(t, 2)
	if len(b.Nodes) != 2 || b.Nodes[0].Host == b.Nodes[1].Host {
		t.Fatalf("want 2 nodes on distinct hosts, got %+v", b.Nodes)
	}
	tests := []struct {
		name, user, cmd, want string
		wantErr               string
	}{
		{"user", testbed.User, "id -un", testbed.User, ""},
		{"sudo as user", testbed.User, "sudo -n id -u", "0", ""},
		{"nosudo user", testbed.NoSudoUser, "id -un", testbed.NoSudoUser, ""},
		{"nosudo refused", testbed.NoSudoUser, "sudo -n true", "", "password is required"},
	}
	for _, n := range b.Nodes {
		for _, tc := range tests {
			t.Run(n.Name+"/"+tc.name, func(t *testing.T) {
				out, err := exec.Command("ssh", sshArgs(b, n, tc.user, tc.cmd)...).CombinedOutput()
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(string(out), tc.wantErr) {
						t.Fatalf("want failure with %q, got err=%v out=%s", tc.wantErr, err, out)
					}
					return
				}
				if err != nil {
					t.Fatalf("ssh: %v: %s\nsshd log:\n%s", err, out, n.Log())
				}
				if got := strings.TrimSpace(string(out)); got != tc.want {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			})
		}
	}
	// The node root is writable by the login user.
	n := b.Nodes[0]
	if out, err := exec.Command("ssh", sshArgs(b, n, testbed.User, "touch "+n.Root+"/x")...).CombinedOutput(); err != nil {
		t.Fatalf("write to node root: %v: %s", err, out)
	}
}

func TestBedEnv(t *testing.T) {
	b := testbed.StartT(t, 2)
	env := b.Env()
	for k, want := range map[string]string{
		"SF_NODES":         "2",
		"SF_NODE0_HOST":    b.Nodes[0].Host,
		"SF_NODE1_PORT":    strconv.Itoa(b.Nodes[1].Port),
		"SF_NODE1_ROOT":    b.Nodes[1].Root,
		"SF_NODE_USER":     testbed.User,
		"SF_IDENTITY_FILE": b.IdentityFile,
		"SF_KNOWN_HOSTS":   b.KnownHosts,
	} {
		if env[k] != want {
			t.Errorf("Env()[%s] = %q, want %q", k, env[k], want)
		}
	}
	s := b.Nodes[0].SDK()
	if s.Transport != "ssh" || s.Port != b.Nodes[0].Port || s.KnownHosts != b.KnownHosts {
		t.Errorf("SDK() = %+v", s)
	}
}

func TestStopKillsSSHD(t *testing.T) {
	b, err := testbed.Start(t.TempDir(), 1)
	if err != nil {
		if testbed.Available() != nil {
			realpart.Missing(t, "the sshd test bed: %v", err)
		}
		t.Fatal(err)
	}
	n := b.Nodes[0]
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(); err != nil { // idempotent
		t.Fatal(err)
	}
	if out, err := exec.Command("ssh", sshArgs(b, n, testbed.User, "true")...).CombinedOutput(); err == nil {
		t.Fatalf("ssh still works after Stop: %s", out)
	}
}

// Beds started at once (users created under the flock) all work.
func TestConcurrentBeds(t *testing.T) {
	testbed.StartT(t, 1) // skips or fails here when no bed can run
	var wg sync.WaitGroup
	beds := make([]*testbed.Bed, 3)
	errs := make([]error, 3)
	for i := range beds {
		wg.Add(1)
		go func() { defer wg.Done(); beds[i], errs[i] = testbed.Start(t.TempDir(), 1) }()
	}
	wg.Wait()
	for i, b := range beds {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Cleanup(func() { b.Stop() })
	}
	ports := map[string]bool{}
	for _, b := range beds {
		ports[b.Nodes[0].Addr()] = true
		out, err := exec.Command("ssh", sshArgs(b, b.Nodes[0], testbed.User, "echo ok")...).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "ok" {
			t.Fatalf("bed %s: %v %s", b.Dir, err, out)
		}
	}
	if len(ports) != 3 {
		t.Fatalf("beds share addresses: %v", ports)
	}
}
