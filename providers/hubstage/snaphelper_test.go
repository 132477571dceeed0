package hubstage

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/hubtest"
	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
)

// snapHelper is how snapNodes sets up the node helper for the test that
// runs: "" as the environment has it (the tests' own runs: no helper
// installed, the receiver's shell loop), "on" installed on the sshd node
// (helpertest.Install), "off" turned off (SPARKFORM_NODE_HELPER=-). With
// "on" or "off" only the sshd node runs (a local node has no helper).
var snapHelper string

// TestSnapshotHelperPaths runs the transfer tests with the node helper's
// hubfetch doing the receiver's job loop and with it turned off: the same
// guarantees either way (resume without fetching again, cut connections,
// cancel and kill, shared blobs, the token).
func TestSnapshotHelperPaths(t *testing.T) {
	if !realpart.Optional(t, "the sshd node", testbed.Available()) {
		return
	}
	tests := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"FromHub", TestSnapshotFromHub},
		{"ResumesCutTransfer", TestSnapshotResumesCutTransfer},
		{"DriftRepaired", TestSnapshotDriftRepaired},
		{"FailedCreateIsDestroyedExactly", TestSnapshotFailedCreateIsDestroyedExactly},
		{"ResumesCancelledApply", TestSnapshotResumesCancelledApply},
		{"PinnedAndBatched", TestSnapshotPinnedAndBatched},
		{"TwoAtOnceShareBlobs", TestSnapshotTwoAtOnceShareBlobs},
		{"ReceiverDiesWithItsConnection", TestSnapshotReceiverDiesWithItsConnection},
		{"ResumesInterruptedBatch", TestSnapshotResumesInterruptedBatch},
		{"SharedInOneApply", TestSnapshotSharedInOneApply},
		{"HelperFetches", testSnapshotHelperFetches},
	}
	for _, mode := range []string{"on", "off"} {
		t.Run(mode, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					snapHelper = mode
					defer func() { snapHelper = "" }()
					tc.fn(t)
				})
			}
		})
	}
}

// testSnapshotHelperFetches: with the helper installed every blob comes
// through it (its User-Agent), the token goes to the hub and never to the
// CDN; without it, through curl.
func testSnapshotHelperFetches(t *testing.T) {
	for _, n := range snapNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			c := newSnapCase(t, n)
			c.apply(t, cty.NilVal, nil, c.config(t, nil))
			hubtest.CheckLayout(t, n.hub, c.repo, "main")
			gets := 0
			for _, q := range c.srv.Log() {
				if q.Endpoint == hubtest.EndpointAPI || q.Method != "GET" {
					continue
				}
				gets++
				helper := strings.HasPrefix(q.Agent, "sparkform-node")
				if helper != (snapHelper == "on") {
					t.Errorf("%s %s fetched by %q with the helper %s", q.Endpoint, q.Path, q.Agent, snapHelper)
				}
				if q.Endpoint == hubtest.EndpointCDN && q.Authorized {
					t.Errorf("the token went to the CDN for %s", q.Path)
				}
				if q.Endpoint == hubtest.EndpointResolve && !q.Authorized {
					t.Errorf("resolve of %s without the token", q.Path)
				}
			}
			if gets == 0 {
				t.Error("no blob fetched")
			}
		})
	}
}
