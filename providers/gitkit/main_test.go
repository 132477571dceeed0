package gitkit_test

import (
	"os"
	"testing"

	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
)

// TestMain removes the restore records that tests which apply without
// destroying leave on this machine (keyed by their gone temp folders).
func TestMain(m *testing.M) {
	// No node helper unless a test installs one (helpertest.Install): the
	// machine's helper folder holds one only when another package's test
	// put it there, and these tests must not depend on that.
	os.Setenv(node.HelperEnv, "-")
	code := m.Run()
	testbed.RemoveStaleRestoreRecords()
	os.Exit(code)
}
