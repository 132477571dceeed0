package realpart

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Cgroup2Root is a cgroup v2 hierarchy of this machine that a test may
// make groups in (tests run as root): /sys/fs/cgroup on a unified host,
// /sys/fs/cgroup/unified on a hybrid one. None is a missing part.
func Cgroup2Root(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		Missing(t, "/proc/self/mounts: %v", err)
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[2] != "cgroup2" {
			continue
		}
		probe := filepath.Join(f[1], fmt.Sprintf("sparkform-probe-%d", os.Getpid()))
		if err := os.Mkdir(probe, 0o755); err != nil {
			continue
		}
		_ = os.Remove(probe)
		return f[1]
	}
	Missing(t, "a cgroup v2 hierarchy this test can make groups in (mounted cgroup2, run as root)")
	return ""
}
