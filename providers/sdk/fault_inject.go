//go:build sparkform_faultinject

package sdk

import (
	"fmt"
	"os"
	"strings"

	"github.com/sparkform/sparkform/internal/faultpause"
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

func pauseIfAsked(typeName, action, address string) {
	spec, dir := os.Getenv("SPARKFORM_FAULT_PAUSE"), os.Getenv("SPARKFORM_FAULT_DIR")
	if spec == "" || dir == "" || spec != action+":"+address {
		return
	}
	parent := os.Getppid()
	if faultpause.Pause(dir, fmt.Sprintf("%d %s %s\n", os.Getpid(), action, address), func() bool { return os.Getppid() != parent }) {
		fmt.Fprintf(os.Stderr, "sparkform fault injection: the CLI is gone while %s was paused after %s; exiting\n", address, strings.ToUpper(action))
		os.Exit(3)
	}
}
