package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// heldShells lists the node processes of held privileged shells (their
// command line carries the ready marker) still running on this machine
// that belong to bed node n's sshd (ps: every bed node is this machine).
func heldShells(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ps", "-eo", "pid,user,args").CombinedOutput()
	if err != nil {
		t.Fatalf("ps: %v: %s", err, out)
	}
	var found []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "sparkform-held-ready") && !strings.Contains(l, "ps -eo") {
			found = append(found, strings.TrimSpace(l))
		}
	}
	return found
}

// waitNoHeld waits until no held shell runs on the machine.
func waitNoHeld(t *testing.T, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := heldShells(t)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: privileged shells still running on the node:\n%s", what, strings.Join(left, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cancelledEnds runs marker (a command line unique on the machine) as a
// Become command cancelled after 500 ms, and fails unless the cancel is
// reported and the command is gone from the node within 10 s.
func cancelledEnds(t *testing.T, name string, conn node.Conn, marker string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := conn.Run(ctx, node.Cmd{Argv: []string{"sh", "-c", "exec " + marker}, Become: true})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: cancelled command: %v, want the deadline", name, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _ := exec.Command("pgrep", "-f", marker).Output()
		if len(out) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q still runs on the node after its cancellation", name, marker)
		}
	}
}

// heldBed is a become node of the bed checked by a pool (its held shell
// started, traced from before the check), with the pool's connection and
// a plugin's through the relay.
type heldBed struct {
	n          sdk.Node // the node, Become set
	p          *node.Pool
	r          *node.Relay
	tr         *testbed.Tracer
	plug, core node.Conn
}

func newHeldBed(t *testing.T) *heldBed {
	t.Helper()
	nd := bed(t).Nodes[0]
	n := nd.SDK()
	n.Become = true
	hb := &heldBed{n: n, p: node.NewPool()}
	t.Cleanup(func() { hb.p.Close() })
	var err error
	if hb.r, err = node.NewRelay(hb.p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb.r.Close() })
	if hb.tr, err = nd.Trace(); err != nil {
		t.Fatal(err)
	}
	if err := hb.p.Check(ctxT(t), n); err != nil {
		t.Fatal(err)
	}
	if hb.plug, err = hb.r.Dial(ctxT(t), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb.plug.Close() })
	if hb.core, err = hb.p.Get(ctxT(t), n); err != nil {
		t.Fatal(err)
	}
	return hb
}

// TestHeldShell: the node check of a node with become starts one
// privileged shell (one sudo) and the first Become command, in the core
// or in a plugin through the relay, runs on it; commands keep their
// stdin, stdout, stderr, exit status and quoting; a later one starts a
// new sudo; nothing is left running when the pool closes.
func TestHeldShell(t *testing.T) {
	hb := newHeldBed(t)
	n, p, r, tr, plug, core := hb.n, hb.p, hb.r, hb.tr, hb.plug, hb.core
	hostile := "a'b \"c\" $(id) `x` \\ \n; *"
	for i, tc := range []struct {
		name string
		conn node.Conn
	}{{"relayed", plug}, {"core", core}} {
		// Output, quoting and environment pass through unchanged.
		res, err := tc.conn.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", `id -u; printf '%s|' "$1" "$V"; pwd`, "sh", hostile},
			Become: true, Env: map[string]string{"V": hostile}, Dir: "/tmp"})
		if want := "0\n" + hostile + "|" + hostile + "|/tmp\n"; err != nil || string(res.Stdout) != want {
			t.Fatalf("%s: got %q, %v; want %q", tc.name, res.Stdout, err, want)
		}
		if i == 0 {
			ps, err := tr.Stop(0)
			_ = err // the connection stays open: Stop reports it, not a failure here
			if got := ps.Count("sudo"); got != 1 {
				t.Fatalf("check and the first Become command started %d sudo, want 1:\n%s", got, ps.Programs())
			}
		}
		// Stdin in, stderr and the exit status out.
		res, err = tc.conn.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", "cat; echo oops >&2; exit 7"}, Become: true, Stdin: strings.NewReader("in\x00put")})
		var ee *node.ExitError
		if !errors.As(err, &ee) || ee.ExitCode != 7 || strings.TrimSpace(ee.Stderr) != "oops" || string(res.Stdout) != "in\x00put" {
			t.Fatalf("%s: got %q, %v; want stdin echoed and exit 7 with oops", tc.name, res.Stdout, err)
		}
		// A cancelled command ends on the node.
		cancelledEnds(t, tc.name, tc.conn, fmt.Sprintf("sleep %d", 1000+i))
	}
	// The check holds a new idle shell; closing the pool ends it.
	if err := p.Check(ctxT(t), n); err != nil {
		t.Fatal(err)
	}
	if len(heldShells(t)) == 0 {
		t.Fatal("no privileged shell held after the check")
	}
	plug.Close()
	r.Close()
	p.Close()
	waitNoHeld(t, "after the pool closed")
}

// TestHeldShellSudoRefused: where sudo wants a password the node check
// fails with the clear become error, through the relay as well, and no
// shell is left.
func TestHeldShellSudoRefused(t *testing.T) {
	b := bed(t)
	n := b.Nodes[0].SDK()
	n.User, n.Become = b.NoSudoUser, true
	p := node.NewPool()
	defer p.Close()
	err := p.Check(ctxT(t), n)
	var be *node.BecomeError
	if !errors.As(err, &be) || !errors.Is(err, node.ErrBecome) || !strings.Contains(err.Error(), "passwordless sudo") ||
		!strings.Contains(err.Error(), "sudo: a password is required") {
		t.Fatalf("check: %v; want the BecomeError saying sudo wants a password", err)
	}
	r, err := node.NewRelay(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	plug, err := r.Dial(ctxT(t), n)
	if err != nil {
		t.Fatal(err)
	}
	defer plug.Close()
	_, err = plug.Run(ctxT(t), node.Cmd{Argv: []string{"true"}, Become: true})
	if !errors.Is(err, node.ErrBecome) || !strings.Contains(err.Error(), "a password is required") {
		t.Fatalf("relayed Become command: %v; want ErrBecome", err)
	}
	waitNoHeld(t, "after sudo refused")
}

// TestHeldShellGoesWithKilledCLI: a sparkform process killed with
// SIGKILL while it holds a privileged shell leaves nothing on the node:
// sshd ends the session with the connection, and the shell its stdin.
func TestHeldShellGoesWithKilledCLI(t *testing.T) {
	b := bed(t)
	waitNoHeld(t, "before the test")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HELD_HOLDER="+strings.Join([]string{b.Nodes[0].Host, fmt.Sprint(b.Nodes[0].Port), b.User, b.IdentityFile, b.KnownHosts}, "\x1f"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	nr, _ := out.Read(buf)
	if !strings.Contains(string(buf[:nr]), "held") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("holder did not start its shell: %q", buf[:nr])
	}
	if len(heldShells(t)) == 0 {
		t.Fatal("the holder holds no privileged shell")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	waitNoHeld(t, "after kill -9 of the process holding it")
}

// heldHolder is TestHeldShellGoesWithKilledCLI's child (TestMain runs it
// when HELD_HOLDER is set): it checks a node with become (starting the
// held shell), says so, and waits to be killed.
func heldHolder(spec string) {
	f := strings.Split(spec, "\x1f")
	var port int
	fmt.Sscan(f[1], &port)
	nd := &testbed.Node{Host: f[0], Port: port, User: f[2], IdentityFile: f[3], KnownHosts: f[4], Name: "holder"}
	n := nd.SDK()
	n.Become = true
	p := node.NewPool()
	if err := p.Check(context.Background(), n); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestHeldShellFrames: Become reads (no stdin, output collected) run as
// frames on the one held shell, in the core and through the relay, and
// leave it for the next: output (binary, no final newline), stderr and
// exit status per command, nothing read from the session's stdin; many
// reads and then a command that takes the shell (stdin) share one sudo.
// A cancelled frame takes its command down and the next read starts a
// new shell; nothing is left when the pool closes.
func TestHeldShellFrames(t *testing.T) {
	hb := newHeldBed(t)
	p, r, tr, plug, core := hb.p, hb.r, hb.tr, hb.plug, hb.core
	conns := []struct {
		name string
		conn node.Conn
	}{{"core", core}, {"relayed", plug}}
	for round := 0; round < 3; round++ {
		for _, tc := range conns {
			// Output without a final newline, bytes a line reader would
			// trip on, stderr, a status, and stdin that is not the session's.
			res, err := tc.conn.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c",
				`id -u; printf 'a\000b\nno newline'; echo "err $1" >&2; read x && echo "read $x"; exit 3`, "sh", tc.name}, Become: true})
			var ee *node.ExitError
			if !errors.As(err, &ee) || ee.ExitCode != 3 || strings.TrimSpace(ee.Stderr) != "err "+tc.name {
				t.Fatalf("%s round %d: %v; want exit 3 with stderr %q", tc.name, round, err, "err "+tc.name)
			}
			if want := "0\na\x00b\nno newline"; string(res.Stdout) != want {
				t.Fatalf("%s round %d: stdout %q, want %q", tc.name, round, res.Stdout, want)
			}
			res, err = tc.conn.Run(ctxT(t), node.Cmd{Argv: []string{"echo", "ok"}, Become: true})
			if err != nil || string(res.Stdout) != "ok\n" || len(res.Stderr) != 0 {
				t.Fatalf("%s round %d: %q %q %v", tc.name, round, res.Stdout, res.Stderr, err)
			}
		}
	}
	// The Docker-stream kind of command (stdin) takes the same shell.
	res, err := plug.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", "id -u; cat"}, Become: true, Stdin: strings.NewReader("streamed")})
	if err != nil || string(res.Stdout) != "0\nstreamed" {
		t.Fatalf("taking command: %q, %v", res.Stdout, err)
	}
	ps, _ := tr.Stop(0)
	if got := ps.Count("sudo"); got != 1 {
		t.Fatalf("the check, 12 reads and a taking command started %d sudo, want 1:\n%s", got, ps.Programs())
	}
	// Cancelled: the command ends on the node, the next read works.
	for i, tc := range conns {
		cancelledEnds(t, tc.name, tc.conn, fmt.Sprintf("sleep %d", 2000+i))
		res, err := tc.conn.Run(ctxT(t), node.Cmd{Argv: []string{"id", "-u"}, Become: true})
		if err != nil || string(res.Stdout) != "0\n" {
			t.Fatalf("%s: the read after a cancelled frame: %q, %v", tc.name, res.Stdout, err)
		}
	}
	plug.Close()
	r.Close()
	p.Close()
	waitNoHeld(t, "after the pool closed")
}
