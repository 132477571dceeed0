package etcdstore

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/etcdtest"
	"github.com/sparkform/sparkform/internal/realpart"
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
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	os.Exit(code)
}

func needCluster(t testing.TB) *etcdtest.Cluster {
	t.Helper()
	_, err := etcdtest.Binary()
	realpart.Need(t, "etcd (apt-get install etcd-server)", err)
	sharedOnce.Do(func() { shared, sharedErr = etcdtest.Start(etcdtest.Options{}) })
	if sharedErr != nil {
		t.Fatalf("start etcd: %v", sharedErr)
	}
	return shared
}

func ownCluster(t testing.TB, opts etcdtest.Options) *etcdtest.Cluster {
	t.Helper()
	_, err := etcdtest.Binary()
	realpart.Need(t, "etcd (apt-get install etcd-server)", err)
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

// A holder whose lease is gone (expired, or revoked as force-unlock does)
// writes nothing more: the next write fails with ErrLockLost and the
// cluster does not have it; another writer takes the lock at once.
func TestLostLeaseStopsWrites(t *testing.T) {
	c := needCluster(t)
	b := newBackend(t, c, 3*time.Second)
	s, err := b.OpenStore(state.Options{Command: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutResource(statetest.Resource("a.x", "1")); err != nil {
		t.Fatal(err)
	}
	cl, err := c.Client(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := etcdtest.Ctx()
	defer cancel()
	if _, err := cl.Revoke(ctx, s.lock.id); err != nil {
		t.Fatal(err)
	}
	// Whether the keepalive noticed first or the lock condition failed,
	// the write is refused and says why.
	err = s.PutResource(statetest.Resource("a.x", "2"))
	if !errors.Is(err, state.ErrLockLost) || !strings.Contains(err.Error(), "before the next write") && !strings.Contains(err.Error(), "nothing more is written") {
		t.Fatalf("write after the lease ended: %v", err)
	}
	if err := s.PutIntent(&state.Intent{Address: "a.y", Action: "create"}); !errors.Is(err, state.ErrLockLost) {
		t.Fatalf("intent after the lease ended: %v", err)
	}
	s2, err := b.OpenStore(state.Options{Command: "next"})
	if err != nil {
		t.Fatalf("next writer: %v", err)
	}
	defer s2.Close()
	r, err := s2.Resource("a.x")
	if err != nil || strings.Contains(string(r.Value), `"2"`) {
		t.Fatalf("the lost holder's write landed: %v %s", err, r.Value)
	}
	if in, _ := s2.Intents(); len(in) != 0 {
		t.Fatalf("the lost holder's intent landed: %+v", in)
	}
}

// The lock frees itself one TTL after its holder stops refreshing it
// (a process killed with kill -9): a waiting writer gets it.
func TestLockFreesAfterHolderDies(t *testing.T) {
	c := needCluster(t)
	b := newBackend(t, c, 2*time.Second)
	s, err := b.OpenStore(state.Options{Command: "doomed"})
	if err != nil {
		t.Fatal(err)
	}
	// Stop the keepalive without releasing: what a killed process leaves.
	s.lock.cancel()
	<-s.lock.kaDone
	start := time.Now()
	s2, err := b.OpenStore(state.Options{Command: "next", LockTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("waiting writer: %v", err)
	}
	defer s2.Close()
	if w := time.Since(start); w > 10*time.Second {
		t.Errorf("lock freed after %s; TTL is 2s", w)
	}
	if err := s.PutResource(statetest.Resource("a.x", "late")); !errors.Is(err, state.ErrLockLost) {
		t.Errorf("the dead holder's write: %v", err)
	}
	s.c.Close()
}
