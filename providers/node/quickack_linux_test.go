package node

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestQuickACKAfterEveryRead: a connection the kernel has put in
// delayed-ACK ("pingpong") mode is back in quick-ACK mode after each read
// through quickACK, so the peer's next small packet is not held by its
// Nagle algorithm until our delayed ACK (up to 40 ms; see quickACK). Real
// TCP on loopback; TCP_QUICKACK=0 enters the delayed mode, as an
// interactive exchange does.
func TestQuickACKAfterEveryRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const rounds = 5
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		b := make([]byte, 1)
		for i := 0; i < rounds; i++ {
			if _, err := s.Read(b); err != nil {
				return
			}
			if _, err := s.Write([]byte("packet")); err != nil {
				return
			}
		}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	c := quickACK(raw)
	if _, ok := c.(*quickAckConn); !ok {
		t.Fatalf("quickACK(%T) = %T, want the TCP connection wrapped", raw, c)
	}
	rc, err := raw.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	sockopt := func(v int) (got int) {
		t.Helper()
		var serr error
		err := rc.Control(func(fd uintptr) {
			if v >= 0 {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, v)
				return
			}
			got, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK)
		})
		if err != nil || serr != nil {
			t.Fatalf("TCP_QUICKACK: %v %v", err, serr)
		}
		return got
	}
	buf := make([]byte, 64)
	for i := 0; i < rounds; i++ {
		sockopt(0) // delayed ACKs, as the kernel chooses for a chatty connection
		if got := sockopt(-1); got != 0 {
			t.Fatalf("round %d: TCP_QUICKACK = %d after setting 0; this kernel does not report the mode", i, got)
		}
		if _, err := c.Write([]byte{'?'}); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Read(buf); err != nil || string(buf[:n]) != "packet" {
			t.Fatalf("round %d: read %q, %v", i, buf[:n], err)
		}
		if got := sockopt(-1); got != 1 {
			t.Fatalf("round %d: TCP_QUICKACK = %d after a read, want 1: the next small packet from sshd would wait for a delayed ACK", i, got)
		}
	}
}

// TestQuickACKLeavesOtherConns: a stream that is not TCP (a jump host's
// channel, a pipe) is used as it is.
func TestQuickACKLeavesOtherConns(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := quickACK(a); got != a {
		t.Fatalf("quickACK(pipe) = %T, want the pipe itself", got)
	}
}
