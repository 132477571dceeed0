package gitkit_test

import (
	"os"
	"testing"

	"github.com/sparkform/sparkform/internal/testbed"
)

// TestMain removes the restore records that tests which apply without
// destroying leave on this machine (keyed by their gone temp folders).
func TestMain(m *testing.M) {
	code := m.Run()
	testbed.RemoveStaleRestoreRecords()
	os.Exit(code)
}
