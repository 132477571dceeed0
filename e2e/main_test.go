package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sparkform/sparkform/internal/testbed"
)

// sparkformBin is the sparkform binary, built once (a test build whose kmod
// provider drives simulated kernels): the tests run it as a user does, and
// it starts its providers as plugin processes of itself.
var sparkformBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sparkform-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sparkformBin = filepath.Join(dir, "sparkform")
	// -tags kmodsim: the kmod provider drives the simulated kernels the
	// tests name with SPARKFORM_KMOD_* (the shipped build never does).
	out, err := exec.Command("go", "build", "-tags", "kmodsim", "-o", sparkformBin, "../cmd/sparkform").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building sparkform: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	testbed.RemoveStaleRestoreRecords()
	os.Exit(code)
}
