//go:build sparkform_faultinject

package state

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Fault injection, compiled only into test binaries (go build -tags
// sparkform_faultinject), as in providers/sdk:
//
//	SPARKFORM_FAULT_STORE=ADDRESS   pause the commit loop before it commits
//	                                the deferred Complete of ADDRESS
//	SPARKFORM_FAULT_DIR=DIR         where the pause is announced
//
// The first match (one per DIR: DIR/claimed is taken with O_EXCL) writes
// DIR/paused ("PID store ADDRESS") and waits to be killed, for at most 10
// minutes, or until the test writes DIR/resume.
func init() {
	addr, dir := os.Getenv("SPARKFORM_FAULT_STORE"), os.Getenv("SPARKFORM_FAULT_DIR")
	if addr == "" || dir == "" {
		return
	}
	faultBeforeCommit = func(addrs []string) {
		if !slices.Contains(addrs, addr) {
			return
		}
		claim, err := os.OpenFile(filepath.Join(dir, "claimed"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return // paused once already
		}
		claim.Close()
		tmp := filepath.Join(dir, ".paused")
		if os.WriteFile(tmp, fmt.Appendf(nil, "%d store %s\n", os.Getpid(), addr), 0o600) != nil ||
			os.Rename(tmp, filepath.Join(dir, "paused")) != nil {
			return
		}
		for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, "resume")); err == nil {
				return
			}
		}
	}
}
