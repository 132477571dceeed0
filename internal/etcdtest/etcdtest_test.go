package etcdtest

import (
	"testing"

	"github.com/sparkform/sparkform/internal/realpart"
)

func need(t *testing.T) {
	t.Helper()
	_, err := Binary()
	realpart.Need(t, "etcd (apt-get install etcd-server)", err)
}

// A three-member cluster elects a leader, serves metrics, and elects a new
// leader when the old one is killed.
func TestClusterLeaderLoss(t *testing.T) {
	need(t)
	c, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	l, err := c.Leader()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.RangeTotal(); err != nil {
		t.Fatalf("range total: %v", err)
	} else {
		t.Logf("leader m%d, ranges so far %v", l, n)
	}
	c.StopMember(l)
	if err := c.WaitHealthy(20e9); err != nil {
		t.Fatal(err)
	}
	l2, _ := c.Leader()
	if l2 == l {
		t.Fatalf("stopped member m%d is still leader", l)
	}
	if err := c.RestartMember(l); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(20e9); err != nil {
		t.Fatal(err)
	}
}
