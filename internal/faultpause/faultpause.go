// Package faultpause is the pause the fault-injection builds of state and
// providers/sdk share (files tagged sparkform_faultinject; never in a
// shipped binary): a test names a point, the process that reaches it
// first announces itself in a folder and waits there to be killed.
package faultpause

import (
	"os"
	"path/filepath"
	"time"
)

// Timeout bounds a pause nobody ends.
const Timeout = 10 * time.Minute

// Pause claims dir (DIR/claimed, taken with O_EXCL: one pause per folder),
// writes line to DIR/paused (atomically) and waits until the test writes
// DIR/resume, gone() reports true (then it returns true), or Timeout
// passes. It returns false at once when another process claimed dir.
func Pause(dir, line string, gone func() bool) bool {
	claim, err := os.OpenFile(filepath.Join(dir, "claimed"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false // paused once already
	}
	claim.Close()
	tmp := filepath.Join(dir, ".paused")
	if os.WriteFile(tmp, []byte(line), 0o600) != nil || os.Rename(tmp, filepath.Join(dir, "paused")) != nil {
		return false
	}
	for deadline := time.Now().Add(Timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "resume")); err == nil {
			return false
		}
		if gone != nil && gone() {
			return true
		}
	}
	return false
}
