package testbed

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sparkform/sparkform/internal/realpart"
)

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// login opens one SSH session on n as User and runs `true`, host key
// checked against the bed's known_hosts line for n.
func login(t *testing.T, b *Bed, n *Node) error {
	key, err := os.ReadFile(b.IdentityFile)
	if err != nil {
		return err
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		return err
	}
	c, err := ssh.Dial("tcp", n.Addr(), &ssh.ClientConfig{User: User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(n.HostKey), Timeout: 20 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run("true")
}

// A fleet of 32 nodes starts (at once, not one after another), every node
// takes a login, and Stop leaves none of their sshds running.
func TestBedFleet32(t *testing.T) {
	realpart.Need(t, "the sshd test bed", Available())
	b, err := Start(t.TempDir(), 32)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if len(b.Nodes) != 32 {
		t.Fatalf("got %d nodes, want 32", len(b.Nodes))
	}
	known, err := os.ReadFile(b.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(known), "\n"); got != 32 {
		t.Fatalf("known_hosts has %d lines, want 32", got)
	}
	addrs := map[string]bool{}
	var pids []int
	errs := make([]error, len(b.Nodes))
	var wg sync.WaitGroup
	for i, n := range b.Nodes {
		if n.Name != "node"+strconv.Itoa(i) {
			t.Fatalf("node %d is named %s: the order is lost", i, n.Name)
		}
		addrs[n.Addr()] = true
		pids = append(pids, n.cmd.Process.Pid)
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = login(t, b, n) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v\nsshd log:\n%s", b.Nodes[i].Name, err, b.Nodes[i].Log())
		}
	}
	if len(addrs) != 32 {
		t.Fatalf("nodes share addresses: %d distinct", len(addrs))
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("sshd %d still runs after Stop", pid)
		}
	}
}

// A bed whose start fails part way (one node cannot listen) leaves none
// of the sshds that did start running: Start's own cleanup stops them.
func TestBedStartFailureStopsTheRest(t *testing.T) {
	realpart.Need(t, "the sshd test bed", Available())
	b := &Bed{Dir: t.TempDir(), User: User, NoSudoUser: NoSudoUser, DockerUser: DockerUser}
	specs := make([]nodeSpec, 8)
	for i := range specs {
		specs[i] = nodeSpec{name: "node" + strconv.Itoa(i), host: "127.0.0." + strconv.Itoa(10+i)}
	}
	specs[5].host = "192.0.2.1" // TEST-NET-1: not an address of this machine
	err := b.start(specs)
	if err == nil {
		b.Stop()
		t.Fatal("start succeeded with a node that cannot listen")
	}
	if !strings.Contains(err.Error(), "node5") {
		t.Errorf("the error does not name the node: %v", err)
	}
	var pids []int
	for _, n := range b.Nodes {
		if n.cmd != nil {
			pids = append(pids, n.cmd.Process.Pid)
		}
	}
	if len(pids) == 0 {
		t.Fatal("no node started: the test proves nothing")
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("sshd %d still runs after a failed start", pid)
		}
	}
	if _, err := os.Stat(b.public); !os.IsNotExist(err) {
		t.Errorf("the bed's public folder %s is left: %v", b.public, err)
	}
}
