package nodehelper

import (
	"bytes"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listen serves one connection on a fresh unix socket with serve.
func listen(t *testing.T, serve func(c *net.UnixConn)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c.(*net.UnixConn))
	}()
	return path
}

// runDial runs the dial subcommand with stdin and returns its exit status,
// stdout and stderr, failing the test if it does not end within 10s.
func runDial(t *testing.T, arg string, stdin io.Reader) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Main([]string{"dial", arg}, stdin, &out, &errb) }()
	select {
	case code := <-done:
		return code, out.String(), errb.String()
	case <-time.After(10 * time.Second):
		t.Fatalf("dial %s did not end", arg)
		return 0, "", ""
	}
}

// TestDialHalfClose: the end of stdin reaches the peer as EOF while the
// peer's answer still comes back (a peer that answers only after the
// request ends, as an HTTP/1.0 server may); both spellings of the socket.
func TestDialHalfClose(t *testing.T) {
	for _, scheme := range []string{"", "unix://"} {
		req := "GET /_ping\r\n\x00\xffbinary"
		path := listen(t, func(c *net.UnixConn) {
			b, err := io.ReadAll(c) // until dial's CloseWrite
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("got " + string(b)))
		})
		code, out, errs := runDial(t, scheme+path, strings.NewReader(req))
		if code != 0 || out != "got "+req || errs != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and the peer's answer after EOF", scheme, code, out, errs)
		}
	}
}

// TestDialPeerEnds: when the peer closes, dial ends at once with its
// output, though stdin never ends.
func TestDialPeerEnds(t *testing.T) {
	path := listen(t, func(c *net.UnixConn) { _, _ = c.Write([]byte("bye\n")) })
	r, w := io.Pipe()
	defer w.Close()
	code, out, errs := runDial(t, path, r)
	if code != 0 || out != "bye\n" || errs != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, bye", code, out, errs)
	}
}

// TestDialErrors: a missing socket is exit 1 with a line naming it; bad
// arguments are ExitUsage.
func TestDialErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing.sock")
	code, out, errs := runDial(t, "unix://"+missing, strings.NewReader("x"))
	if code != 1 || out != "" || !strings.Contains(errs, "cannot connect to "+missing) || !strings.Contains(errs, "no such file") {
		t.Errorf("missing socket: exit %d, stdout %q, stderr %q; want 1 and a message naming it", code, out, errs)
	}
	for _, args := range [][]string{{"dial"}, {"dial", ""}, {"dial", "tcp://127.0.0.1:1"}, {"dial", "a", "b"}} {
		var o, e bytes.Buffer
		if code := Main(args, strings.NewReader(""), &o, &e); code != ExitUsage || e.Len() == 0 {
			t.Errorf("%q: exit %d (%q), want %d with a usage line", args, code, e.String(), ExitUsage)
		}
	}
}
