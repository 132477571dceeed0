//go:build linux

package node

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// quickACK makes the kernel acknowledge every segment sshd sends as soon
// as it is read. sshd leaves Nagle's algorithm on for sessions without a
// terminal, so a small packet it writes while an earlier one is still
// unacknowledged waits for the client's ACK, and Linux delays that ACK up
// to 40 ms when the client has nothing to send: the channel confirmation
// after the login, and a command's exit status after its output, each
// stalled that long (issue 13). TCP_QUICKACK is not sticky, so it is set
// again after every read. Anything but a TCP connection is returned as
// it is (a jump host's stream is an SSH channel).
func quickACK(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &quickAckConn{TCPConn: tc, rc: rc}
}

type quickAckConn struct {
	*net.TCPConn
	rc syscall.RawConn
}

func (c *quickAckConn) Read(b []byte) (int, error) {
	n, err := c.TCPConn.Read(b)
	if n > 0 {
		_ = c.rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
		})
	}
	return n, err
}
