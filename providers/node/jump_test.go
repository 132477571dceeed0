package node_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// viaJumps is bed node i reached through every jump host of b, as
// ssh_config's ProxyJump would give it: hops log in with the bed's key
// (IdentityFile, IdentitiesOnly) and are checked against the same
// known_hosts.
func viaJumps(b *testbed.Bed, i int) sdk.Node {
	n := b.Nodes[i].SDK()
	for _, j := range b.Jumps {
		n.ProxyJump = append(n.ProxyJump, sdk.Node{Host: j.Host, Port: j.Port, User: j.User,
			IdentityFiles: []string{b.IdentityFile}, IdentitiesOnly: true})
	}
	return n
}

// answersSSH: an sshd answers this process at addr. (A connect alone
// proves nothing: a sandbox's gateway may accept any connection.)
func answersSSH(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.HasPrefix(line, "SSH-")
}

// assertUnreachable: only the jump hosts lead to addr.
func assertUnreachable(t *testing.T, addr string) {
	t.Helper()
	if answersSSH(addr) {
		t.Fatalf("an sshd answers at %s directly; the test bed must only be reachable through its jump hosts", addr)
	}
}

func TestDialThroughJumpHost(t *testing.T) {
	b := testbed.StartBehindJumpsT(t, 1, 2)
	for i := range b.Nodes {
		assertUnreachable(t, b.Nodes[i].Addr())
	}
	for i := range b.Nodes {
		c := dialNode(t, viaJumps(b, i))
		res, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", "echo $SSH_CONNECTION"}})
		if err != nil {
			t.Fatal(err)
		}
		// The node sees the connection on its own address, not on one
		// this process could use.
		if f := strings.Fields(string(res.Stdout)); len(f) != 4 || f[2] != b.Nodes[i].Host {
			t.Fatalf("SSH_CONNECTION = %q, want the node's address %s third", res.Stdout, b.Nodes[i].Host)
		}
		// Files and become work over the jumped connection as over any.
		p := filepath.Join(b.Nodes[i].Root, "via-jump")
		if err := c.WriteFile(ctxT(t), p, []byte("hi"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(p); err != nil || string(got) != "hi" {
			t.Fatalf("file written through the jump host: %q, %v", got, err)
		}
		if res, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"id", "-u"}, Become: true}); err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
			t.Fatalf("become through the jump host: %q, %v", res.Stdout, err)
		}
	}
}

func TestDialThroughJumpChain(t *testing.T) {
	b := testbed.StartBehindJumpsT(t, 2, 1)
	target := b.Nodes[0]
	assertUnreachable(t, target.Addr())
	assertUnreachable(t, b.Jumps[1].Addr())
	if !answersSSH(b.Jumps[0].Addr()) { // the check itself can see an sshd
		t.Fatalf("jump0 at %s does not answer", b.Jumps[0].Addr())
	}

	// The first jump host alone cannot reach the node: the chain is needed.
	first := b.Jumps[0].SDK()
	c0 := dialNode(t, first)
	if s, err := c0.Dial(ctxT(t), "tcp", target.Addr()); err == nil {
		s.Close()
		t.Fatalf("jump0 reached %s itself; only jump1 should", target.Addr())
	}

	c := dialNode(t, viaJumps(b, 0))
	res, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", "echo $SSH_CONNECTION"}})
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(res.Stdout)); len(f) != 4 || f[2] != target.Host {
		t.Fatalf("SSH_CONNECTION = %q", res.Stdout)
	}
	// Closing the node's connection closes the hops under it.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// Every hop's host key is checked: a jump host missing from known_hosts,
// or with a changed key, stops the dial with a HostKeyError naming it.
func TestJumpHostKeysChecked(t *testing.T) {
	b := testbed.StartBehindJumpsT(t, 2, 1)
	known, err := os.ReadFile(b.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	without := func(host string) string {
		var keep []string
		for _, l := range strings.Split(strings.TrimSpace(string(known)), "\n") {
			if !strings.Contains(l, host+"]") {
				keep = append(keep, l)
			}
		}
		p := filepath.Join(dir, strings.ReplaceAll(host, ".", "_"))
		if err := os.WriteFile(p, []byte(strings.Join(keep, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i, j := range b.Jumps {
		n := viaJumps(b, 0)
		n.KnownHosts = without(j.Host)
		_, err := node.DialSSH(ctxT(t), n)
		var hk *node.HostKeyError
		if !errors.As(err, &hk) || !errors.Is(err, node.ErrHostKeyUnknown) || hk.Host != j.Host {
			t.Fatalf("jump host %d unknown: got %v", i, err)
		}
		if want := "(jump host " + string(rune('1'+i)) + " of 2)"; !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say which hop: %v", err)
		}
	}
	// jump1's line with node0's key: a changed key.
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(known)), "\n") {
		if strings.Contains(l, b.Jumps[1].Host+"]") {
			l = testbed.KnownHostsLine(b.Jumps[1].Host, b.Jumps[1].Port, b.Nodes[0].HostKey)
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	changed := filepath.Join(dir, "changed")
	os.WriteFile(changed, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	n := viaJumps(b, 0)
	n.KnownHosts = changed
	if _, err := node.DialSSH(ctxT(t), n); !errors.Is(err, node.ErrHostKeyChanged) {
		t.Fatalf("changed jump host key: got %v", err)
	}
}

// notices captures the notices of the dials given its options, for one
// test.
func notices(t *testing.T) (node.Options, func() []string) {
	var mu sync.Mutex
	var got []string
	o := node.Options{Notify: func(msg string) {
		mu.Lock()
		got = append(got, msg)
		mu.Unlock()
	}}
	return o, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// An sshd restarting refuses connections for a moment: the dial retries
// with backoff, says so, and connects once sshd is back.
func TestDialRetriesWhileSSHDRestarts(t *testing.T) {
	b := testbed.StartT(t, 1)
	opts, lines := notices(t)
	target := b.Nodes[0]
	if err := target.Kill(); err != nil {
		t.Fatal(err)
	}
	revived := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		revived <- target.Revive()
	}()
	n := target.SDK()
	n.Timeout = 2 * time.Second
	c, err := node.DialSSHWith(ctxT(t), n, opts)
	if rerr := <-revived; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("dial while sshd restarts: %v", err)
	}
	defer c.Close()
	got := lines()
	if len(got) == 0 {
		t.Fatal("no line said the connection was retried")
	}
	if !strings.Contains(got[0], "connection refused") || !strings.Contains(got[0], "retrying in") || !strings.Contains(got[0], "node node0") {
		t.Errorf("retry line: %q", got[0])
	}
	if _, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
}

// The retrying is bounded: a node that stays down fails after
// RetryWindow, saying how many attempts were made; a refused host key is
// not retried at all.
func TestDialRetryIsBounded(t *testing.T) {
	b := testbed.StartT(t, 1)
	opts, lines := notices(t)
	n := b.Nodes[0].SDK()
	n.Timeout = time.Second
	if err := b.Nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := node.DialSSHWith(ctx, n, opts)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "gave up after") {
		t.Fatalf("want a refused dial that gave up, got %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the retrying ran into the test's own deadline: it is not bounded by RetryWindow")
	}
	if len(lines()) < 2 {
		t.Errorf("want a line per retry, got %q", lines())
	}

	if err := b.Nodes[0].Revive(); err != nil {
		t.Fatal(err)
	}
	before := len(lines())
	n.KnownHosts = filepath.Join(t.TempDir(), "empty")
	os.WriteFile(n.KnownHosts, nil, 0o600)
	if _, err := node.DialSSH(ctxT(t), n); !errors.Is(err, node.ErrHostKeyUnknown) || strings.Contains(err.Error(), "gave up") {
		t.Fatalf("unknown host key: got %v", err)
	}
	if len(lines()) != before {
		t.Errorf("a refused host key was retried: %q", lines()[before:])
	}
}
