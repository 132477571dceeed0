package node_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
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

// logins counts the logins sshd has logged for node i (LogLevel VERBOSE).
func logins(t *testing.T, i int) int {
	return strings.Count(bed(t).Nodes[i].Log(), "Accepted publickey for ")
}

func newRelay(t testing.TB) (*node.Pool, *node.Relay) {
	t.Helper()
	p := node.NewPool()
	r, err := node.NewRelay(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		p.Close()
	})
	return p, r
}

// TestRelaySharesOneConnection: the core's check and two "plugins" (two
// relay connections, as two plugin processes make) reach node 1 over one
// SSH connection: sshd sees one login. Commands, stdin, stderr, exit
// codes, sudo, sftp and streams all work through the relay.
func TestRelaySharesOneConnection(t *testing.T) {
	b := bed(t)
	n := b.Nodes[1].SDK()
	n.Become = true
	before := logins(t, 1)
	p, r := newRelay(t)

	fi, err := os.Stat(filepath.Dir(r.Path()))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("relay folder: %v, %v; want mode 0700", fi, err)
	}
	if fi, err := os.Stat(r.Path()); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&fs.ModeSocket == 0 {
		t.Fatalf("relay socket: %v, %v; want a 0600 socket", fi, err)
	}

	if err := p.Check(ctxT(t), n); err != nil {
		t.Fatal(err)
	}
	var plugins []*node.SSH
	for range 2 {
		c, err := r.Dial(ctxT(t), n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		plugins = append(plugins, c)
	}
	c := plugins[0]

	res, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", "cat; echo err >&2"}, Stdin: strings.NewReader("in\n")})
	if err != nil || string(res.Stdout) != "in\n" || string(res.Stderr) != "err\n" {
		t.Fatalf("Run: %q %q %v", res.Stdout, res.Stderr, err)
	}
	_, err = c.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", "echo no >&2; exit 3"}})
	var xe *node.ExitError
	if !errors.As(err, &xe) || xe.ExitCode != 3 || xe.Stderr != "no\n" {
		t.Fatalf("want exit 3 with stderr, got %v", err)
	}
	res, err = plugins[1].Run(ctxT(t), node.Cmd{Argv: []string{"id", "-u"}, Become: true})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
		t.Fatalf("become: %q %v", res.Stdout, err)
	}
	// Big output crosses both connections' flow control intact.
	var big bytes.Buffer
	if _, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"head", "-c", "3000000", "/dev/zero"}, Stdout: &big}); err != nil || big.Len() != 3000000 {
		t.Fatalf("3 MB of output: got %d bytes, %v", big.Len(), err)
	}

	dir, err := os.MkdirTemp(b.Nodes[1].Root, "relay-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := filepath.Join(dir, "f")
	if err := c.WriteFile(ctxT(t), f, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := plugins[1].ReadFile(ctxT(t), f); err != nil || string(got) != "hello" {
		t.Fatalf("ReadFile: %q %v", got, err)
	}
	if _, err := c.Stat(ctxT(t), filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a missing file: want fs.ErrNotExist, got %v", err)
	}

	sock := filepath.Join(dir, "echo.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o777)
	echoServer(t, ul)
	s, err := c.Dial(ctxT(t), "unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(s, "one\n")
	if got, err := bufio.NewReader(s).ReadString('\n'); err != nil || got != "echo: one\n" {
		t.Fatalf("Dial: %q %v", got, err)
	}
	s.Close()

	// More concurrent commands than one connection's session cap, from
	// both plugins at once: the relay queues them below sshd's MaxSessions.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := plugins[i%2].Run(ctxT(t), node.Cmd{Argv: []string{"sleep", "0.05"}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	if got := logins(t, 1) - before; got != 1 || p.Dials() != 1 {
		t.Fatalf("sshd logged %d logins (pool dials %d), want 1: the check and both plugins share one connection", got, p.Dials())
	}
}

// TestRelayErrors: a dial error crosses the relay with its text and the
// sentinel it matches; a broken node connection ends the plugins' ones
// with "connection lost" and the next dial is a fresh connection.
func TestRelayErrors(t *testing.T) {
	b := bed(t)
	p, r := newRelay(t)
	bad := b.Nodes[1].SDK()
	bad.KnownHosts = filepath.Join(t.TempDir(), "none")
	_, err := r.Dial(ctxT(t), bad)
	if !errors.Is(err, node.ErrHostKeyUnknown) || !strings.Contains(err.Error(), "ssh-keyscan") && !strings.Contains(err.Error(), "known_hosts") {
		t.Fatalf("want ErrHostKeyUnknown through the relay, got %v", err)
	}
	if _, err := r.Dial(ctxT(t), sdk.Node{Name: "x", Transport: "telnet", Host: "h"}); !errors.Is(err, node.ErrTransport) {
		t.Fatalf("want ErrTransport, got %v", err)
	}

	n := b.Nodes[1].SDK()
	c1, err := r.Dial(ctxT(t), n)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if _, err := c1.Run(ctxT(t), node.Cmd{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if k := b.Nodes[1].DropConnections(); k == 0 {
		t.Fatal("no sshd connection to drop")
	}
	var runErr error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, runErr = c1.Run(ctxT(t), node.Cmd{Argv: []string{"true"}}); runErr != nil {
			break
		}
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "connection lost") {
		t.Fatalf("Run after the node's connection broke: want a connection lost error, got %v", runErr)
	}
	c2, err := r.Dial(ctxT(t), n)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Run(ctxT(t), node.Cmd{Argv: []string{"true"}}); err != nil || p.Dials() != 3 {
		t.Fatalf("after a redial: %v (pool dials %d, want 3: the bad host key, the first and the redial)", err, p.Dials())
	}
}

// relayProbe is the child process of TestRelayRefusesStrangers: it
// connects to the socket in RELAY_PROBE and prints what the relay says
// first (an SSH banner, or nothing when it hangs up).
func relayProbe(sock string) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		os.Stdout.WriteString("dial: " + err.Error())
		os.Exit(0)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	os.Stdout.WriteString(strings.TrimSpace(line))
	os.Exit(0)
}
