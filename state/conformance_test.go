package state_test

import (
	"path/filepath"
	"testing"

	"github.com/sparkform/sparkform/state"
	"github.com/sparkform/sparkform/state/statetest"
)

// The local bbolt file passes the Store conformance suite.
func TestConformanceBolt(t *testing.T) {
	statetest.Run(t, func(t *testing.T) state.Backend {
		return state.Local{Path: filepath.Join(t.TempDir(), "state.db")}
	})
}
