package qemunode_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/testbed/qemunode"
)

// TestBootAndSSH boots the real kernel and logs in with the OpenSSH client,
// host key checked against the known_hosts line the harness wrote.
func TestBootAndSSH(t *testing.T) {
	n := qemunode.StartT(t)
	out, err := exec.Command("ssh", "-p", strconv.Itoa(n.Port), "-i", n.Image.IdentityFile,
		"-o", "UserKnownHostsFile="+n.KnownHosts, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
		"-o", "LogLevel=ERROR", "root@127.0.0.1",
		"uname -r; cat /sys/fs/cgroup/cgroup.controllers; modprobe brd rd_nr=2 && cat /sys/module/brd/parameters/rd_nr").CombinedOutput()
	if err != nil {
		t.Fatalf("ssh: %v\n%s\nconsole:\n%s", err, out, n.Console())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || lines[0] != n.Image.KernelVer || !strings.Contains(lines[1], "memory") || lines[2] != "2" {
		t.Fatalf("got %q; want kernel %s, cgroup controllers with memory, rd_nr 2", out, n.Image.KernelVer)
	}
}
