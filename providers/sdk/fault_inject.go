//go:build sparkform_faultinject

package sdk

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Fault injection, compiled only into test binaries (go build -tags
// sparkform_faultinject): never in the shipped provider, so no variable set
// by accident can stop a real apply.
//
//	SPARKFORM_FAULT_PAUSE=ACTION:ADDRESS   pause after applying ADDRESS
//	                                       (e.g. `create:kmod_module.m["n1"]`)
//	SPARKFORM_FAULT_DIR=DIR                where the pause is announced
//
// The first matching apply (one per DIR: DIR/claimed is taken with
// O_EXCL) writes DIR/paused ("PID ACTION ADDRESS") and waits: until the
// test writes DIR/resume, or the plugin's parent (the CLI) is gone, when it
// exits with status 3 as a plugin killed with its CLI would, or 10 minutes
// pass.
func init() { faultPoint = pauseIfAsked }

// PauseTimeout bounds a pause nobody ends.
const faultPauseTimeout = 10 * time.Minute

func pauseIfAsked(typeName, action, address string) {
	spec, dir := os.Getenv("SPARKFORM_FAULT_PAUSE"), os.Getenv("SPARKFORM_FAULT_DIR")
	if spec == "" || dir == "" || spec != action+":"+address {
		return
	}
	claim, err := os.OpenFile(filepath.Join(dir, "claimed"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return // paused once already
	}
	claim.Close()
	parent := os.Getppid()
	line := fmt.Sprintf("%d %s %s\n", os.Getpid(), action, address)
	tmp := filepath.Join(dir, ".paused")
	if os.WriteFile(tmp, []byte(line), 0o600) != nil || os.Rename(tmp, filepath.Join(dir, "paused")) != nil {
		return
	}
	deadline := time.Now().Add(faultPauseTimeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, "resume")); err == nil {
			return
		}
		if os.Getppid() != parent {
			fmt.Fprintf(os.Stderr, "sparkform fault injection: the CLI is gone while %s was paused after %s; exiting\n", address, strings.ToUpper(action))
			os.Exit(3)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
