//go:build sparkform_faultinject

package state

import (
	"fmt"
	"os"
	"slices"

	"github.com/sparkform/sparkform/internal/faultpause"
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
		faultpause.Pause(dir, fmt.Sprintf("%d store %s\n", os.Getpid(), addr), nil)
	}
}
