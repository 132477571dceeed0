package docker

import (
	"os"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
)

func TestMain(m *testing.M) {
	// No node helper unless a test installs one (helpertest.Install): the
	// machine's helper folder holds one only when another package's test
	// put it there, and these tests must not depend on that.
	os.Setenv(node.HelperEnv, "-")
	os.Exit(m.Run())
}
