//go:build linux

package node

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// peerAllowed checks the kernel's credentials of the process at the other
// end: this uid, and this process or one of its children.
func peerAllowed(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, cerr
	}
	pid := int(cred.Pid)
	if int(cred.Uid) != os.Getuid() {
		return pid, fmt.Errorf("peer uid %d is not %d", cred.Uid, os.Getuid())
	}
	self := os.Getpid()
	if pid == self || parentOf(pid) == self {
		return pid, nil
	}
	return pid, fmt.Errorf("peer pid %d is not a child of %d", pid, self)
}

// parentOf is pid's parent pid from /proc, or -1.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return -1
	}
	p, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return p
}
