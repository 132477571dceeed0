package nodehelper

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
)

func init() { register("dial", dial) }

// dial is `docker system dial-stdio` for a unix socket: `sparkform-node
// dial unix:///PATH` (or PATH) connects to the socket and copies stdin to
// it and it to stdout. At the end of stdin the socket's write side is
// closed (the peer reads EOF, as with a TCP half-close) and dial waits for
// the peer's answer to end; when the socket's read side ends, dial exits
// 0 at once, whatever is left on stdin. A socket it cannot connect to is
// a line on stderr and exit status 1 (the Docker CLI's status for it).
//
// It replaces `docker system dial-stdio` run as root for the Docker
// provider (the CLI's start is the largest part of a no-op plan's node
// CPU) and, like it, holds no state: it ends with its stream.
func dial(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 || args[0] == "" {
		fmt.Fprintln(stderr, "usage: sparkform-node dial unix:///PATH")
		return ExitUsage
	}
	path := args[0]
	if rest, ok := strings.CutPrefix(path, "unix://"); ok {
		path = rest
	} else if strings.Contains(path, "://") {
		fmt.Fprintf(stderr, "sparkform-node dial: %q: only unix:// sockets are supported\n", args[0])
		return ExitUsage
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Fprintf(stderr, "sparkform-node dial: cannot connect to %s: %v\n", path, unwrapOp(err))
		return 1
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	in := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, stdin)
		if cerr := conn.CloseWrite(); err == nil {
			err = cerr
		}
		in <- err
	}()
	out := make(chan error, 1)
	go func() {
		_, err := io.Copy(stdout, conn)
		out <- err
	}()
	select {
	case err = <-out:
		// The peer is done: what is left on stdin has nowhere to go.
	case <-in:
		// The peer still answers what it was sent (a stdin that failed
		// is its end too).
		err = <-out
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintf(stderr, "sparkform-node dial: %s: %v\n", path, unwrapOp(err))
		return 1
	}
	return 0
}

// unwrapOp drops net.OpError's "dial unix PATH:" prefix, which the
// message already says.
func unwrapOp(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}
