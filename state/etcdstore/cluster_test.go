package etcdstore

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/etcdtest"
	"github.com/sparkform/sparkform/state"
	"github.com/sparkform/sparkform/state/statetest"
)

// One three-member cluster serves the package's tests; each test gets its
// own prefix. Tests that stop members start their own.
var (
	sharedOnce sync.Once
	shared     *etcdtest.Cluster
	sharedErr  error
	prefixN    atomic.Int64
)

func TestMain(m *testing.M) {
	if os.Getenv("ETCDSTORE_CHILD") != "" {
		os.Exit(childMain())
	}
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	os.Exit(code)
}

func needCluster(t testing.TB) *etcdtest.Cluster {
	t.Helper()
	if _, err := etcdtest.Binary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v", err)
		}
		t.Skipf("%v", err)
	}
	sharedOnce.Do(func() { shared, sharedErr = etcdtest.Start(etcdtest.Options{}) })
	if sharedErr != nil {
		t.Fatalf("start etcd: %v", sharedErr)
	}
	return shared
}

func ownCluster(t testing.TB, opts etcdtest.Options) *etcdtest.Cluster {
	t.Helper()
	if _, err := etcdtest.Binary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v", err)
		}
		t.Skipf("%v", err)
	}
	c, err := etcdtest.Start(opts)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

func newBackend(t testing.TB, c *etcdtest.Cluster, ttl time.Duration) *Backend {
	t.Helper()
	b, err := New(Config{Endpoints: c.Endpoints(), Prefix: fmt.Sprintf("test/%d", prefixN.Add(1)), LockTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The etcd backend passes the Store conformance suite against a real
// three-member cluster.
func TestConformanceEtcd(t *testing.T) {
	c := needCluster(t)
	statetest.Run(t, func(t *testing.T) state.Backend { return newBackend(t, c, 0) })
}
