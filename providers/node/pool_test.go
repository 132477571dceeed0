package node_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// echoServer answers each line it reads with "echo: LINE".
func echoServer(t *testing.T, l net.Listener) {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					io.WriteString(c, "echo: "+line)
				}
			}()
		}
	}()
}

func TestDial(t *testing.T) {
	b := bed(t)
	sock := filepath.Join(b.Nodes[0].Root, "echo.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o777) // the ssh user connects to it
	echoServer(t, ul)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, tl)

	for _, tr := range transports(t) {
		for _, target := range []struct{ network, addr string }{{"unix", sock}, {"tcp", tl.Addr().String()}} {
			t.Run(tr.name+"/"+target.network, func(t *testing.T) {
				c, err := tr.conn.Dial(ctxT(t), target.network, target.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				r := bufio.NewReader(c)
				for _, msg := range []string{"one", "two"} {
					io.WriteString(c, msg+"\n")
					got, err := r.ReadString('\n')
					if err != nil || got != "echo: "+msg+"\n" {
						t.Fatalf("got %q, %v", got, err)
					}
				}
			})
		}
		t.Run(tr.name+"/refused", func(t *testing.T) {
			if _, err := tr.conn.Dial(ctxT(t), "unix", filepath.Join(tr.dir, "nobody.sock")); err == nil {
				t.Fatal("dial to a missing socket succeeded")
			}
		})
	}
}

func TestPoolSharesOneConnection(t *testing.T) {
	b := bed(t)
	p := node.NewPool()
	defer p.Close()
	const callers = 20
	conns := make([]node.Conn, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := b.Nodes[0].SDK()
			if i%2 == 1 {
				n.Transport = "" // the default is the same ssh connection
			}
			conns[i], errs[i] = p.Get(ctxT(t), n)
		}()
	}
	wg.Wait()
	for i := range conns {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if conns[i] != conns[0] {
			t.Fatalf("Get %d returned a different connection", i)
		}
	}
	if d := p.Dials(); d != 1 {
		t.Fatalf("%d concurrent Gets dialled %d times, want 1", callers, d)
	}
	// The shared connection carries concurrent commands (more than the
	// per-connection session cap).
	var runs sync.WaitGroup
	for i := 0; i < 24; i++ {
		runs.Add(1)
		go func() {
			defer runs.Done()
			if _, err := conns[i%callers].Run(ctxT(t), node.Cmd{Argv: []string{"sleep", "0.05"}}); err != nil {
				t.Error(err)
			}
		}()
	}
	runs.Wait()

	other, err := p.Get(ctxT(t), b.Nodes[1].SDK())
	if err != nil {
		t.Fatal(err)
	}
	if other == conns[0] || p.Dials() != 2 {
		t.Fatalf("a second node must get its own connection (dials %d)", p.Dials())
	}
}

func TestPoolRedialsBrokenConnection(t *testing.T) {
	b := bed(t)
	p := node.NewPool()
	defer p.Close()
	c1, err := p.Get(ctxT(t), b.Nodes[0].SDK())
	if err != nil {
		t.Fatal(err)
	}
	c1.Close() // as if the network dropped it
	if _, err := c1.Run(ctxT(t), node.Cmd{Argv: []string{"true"}}); err == nil {
		t.Fatal("Run on a closed connection succeeded")
	}
	var c2 node.Conn
	// The close is noticed asynchronously: poll for a bounded time, not a
	// bounded count (a busy machine may need more than a tight loop).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if c2, err = p.Get(ctxT(t), b.Nodes[0].SDK()); err != nil {
			t.Fatal(err)
		}
		if c2 != c1 || time.Now().After(deadline) {
			break
		}
	}
	if c2 == c1 || p.Dials() != 2 {
		t.Fatalf("broken connection not redialled (dials %d)", p.Dials())
	}
	if _, err := c2.Run(ctxT(t), node.Cmd{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
}

func TestPoolTransports(t *testing.T) {
	b := bed(t)
	p := node.NewPool()
	c, err := p.Get(ctxT(t), sdk.Node{Name: "here", Transport: "local"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*node.Local); !ok {
		t.Fatalf("local transport gave %T", c)
	}
	_, err = p.Get(ctxT(t), sdk.Node{Name: "x", Transport: "telnet", Host: "h"})
	if !errors.Is(err, node.ErrTransport) || !strings.Contains(err.Error(), `"telnet"`) {
		t.Fatalf("want ErrTransport naming the transport, got %v", err)
	}
	// A failed dial is reported to its callers and retried on the next Get.
	bad := b.Nodes[0].SDK()
	bad.KnownHosts = filepath.Join(t.TempDir(), "none")
	for i := 0; i < 2; i++ {
		if _, err := p.Get(ctxT(t), bad); !errors.Is(err, node.ErrHostKeyUnknown) {
			t.Fatalf("Get %d: want ErrHostKeyUnknown, got %v", i, err)
		}
	}
	if p.Dials() != 4 {
		t.Fatalf("dials = %d, want 4 (local, telnet, two failed ssh)", p.Dials())
	}
	p.Close()
	if _, err := p.Get(ctxT(t), b.Nodes[0].SDK()); !errors.Is(err, node.ErrClosed) {
		t.Fatalf("Get after Close: want ErrClosed, got %v", err)
	}
}

// TestPoolPrewarm: a prewarmed node's connection is the one Get and Check
// use (one dial, one sshd login) and its become check is the first
// Check's (one sudo -n true); a prewarm that failed is reported, as
// the dial's own error, by the first Get only (no second dial behind the
// caller's back), and the Get after that dials again.
func TestPoolPrewarm(t *testing.T) {
	b := bed(t)
	p := node.NewPool()
	defer p.Close()
	n := b.Nodes[0].SDK()
	n.Become = true
	logins := func() int { return strings.Count(b.Nodes[0].Log(), "Accepted publickey for ") }
	sessions := func() int { return strings.Count(b.Nodes[0].Log(), "Starting session: command") }
	before, sessBefore := logins(), sessions()
	p.Prewarm(n)
	p.Prewarm(n) // once per node
	// It logs in and runs the become check (sudo -n true) on its own,
	// before anyone asks.
	for deadline := time.Now().Add(30 * time.Second); logins() == before || sessions() == sessBefore; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Prewarm did not log in and check become")
		}
	}
	if err := p.Check(ctxT(t), n); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(ctxT(t), n); err != nil {
		t.Fatal(err)
	}
	if d, l, s := p.Dials(), logins()-before, sessions()-sessBefore; d != 1 || l != 1 || s != 1 {
		t.Fatalf("prewarm, check and get: %d dials, %d sshd logins, %d commands; want 1, 1 and 1 (the check took the prewarm's)", d, l, s)
	}
	// A later check finds the privileged shell the first one started
	// still held: it starts nothing.
	if err := p.Check(ctxT(t), n); err != nil || sessions()-sessBefore != 1 {
		t.Fatalf("second check: %v, %d commands; want the held shell (1 command)", err, sessions()-sessBefore)
	}
	// A Become read runs on that shell as a frame and leaves it (no new
	// session, and the next check starts nothing); a Become command with
	// stdin takes it: the check after that starts a new one.
	c, err := p.Get(ctxT(t), n)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"id", "-u"}, Become: true}); err != nil || string(res.Stdout) != "0\n" {
		t.Fatalf("become on the held shell: %q, %v; want uid 0", res.Stdout, err)
	}
	if err := p.Check(ctxT(t), n); err != nil || sessions()-sessBefore != 1 {
		t.Fatalf("third check, after a Become read: %v, %d commands; want the held shell still (1 command)", err, sessions()-sessBefore)
	}
	if res, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", "id -u; cat"}, Become: true, Stdin: strings.NewReader("x")}); err != nil || string(res.Stdout) != "0\nx" {
		t.Fatalf("become with stdin on the held shell: %q, %v", res.Stdout, err)
	}
	if s := sessions() - sessBefore; s != 1 {
		t.Fatalf("the Become commands started %d sessions, want none (they run on the held shell)", s-1)
	}
	if err := p.Check(ctxT(t), n); err != nil || sessions()-sessBefore != 2 {
		t.Fatalf("fourth check: %v, %d commands; want a new privileged shell (2 commands)", err, sessions()-sessBefore)
	}

	// A user sudo refuses: the prewarmed check's failure is the check's,
	// said as before.
	nosudo := b.Nodes[0].SDK()
	nosudo.User, nosudo.Become = b.NoSudoUser, true
	p.Prewarm(nosudo)
	if err := p.Check(ctxT(t), nosudo); !errors.Is(err, node.ErrBecome) {
		t.Fatalf("check of a user without sudo after a prewarm: %v, want ErrBecome", err)
	}

	bad := b.Nodes[1].SDK()
	bad.KnownHosts = filepath.Join(t.TempDir(), "none")
	d0 := p.Dials()
	p.Prewarm(bad)
	// Whether the check comes while the prewarm dials or after it failed,
	// it reports that dial's error and dials nothing itself.
	err = p.Check(ctxT(t), bad)
	if !errors.Is(err, node.ErrHostKeyUnknown) || !strings.Contains(err.Error(), "ssh-keyscan") {
		t.Fatalf("check after a failed prewarm: %v, want the unknown host key with what to do", err)
	}
	if d := p.Dials() - d0; d != 1 {
		t.Fatalf("the check dialled again after the prewarm failed: %d dials, want 1", d)
	}
	if _, err := p.Get(ctxT(t), bad); !errors.Is(err, node.ErrHostKeyUnknown) || p.Dials()-d0 != 2 {
		t.Fatalf("the Get after the reported failure: %v, %d dials; want a new dial (2)", err, p.Dials()-d0)
	}
}
