package etcdstore

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/etcdtest"
	"github.com/sparkform/sparkform/state"
	"github.com/sparkform/sparkform/state/statetest"
)

// Username and password come from the environment (SPARKFORM_ETCD_*): with
// auth enabled on the cluster, the right ones work, a wrong password and
// none are refused.
func TestUserPasswordFromEnv(t *testing.T) {
	c := ownCluster(t, etcdtest.Options{})
	cl, err := c.Client(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := etcdtest.Ctx()
	defer cancel()
	for _, step := range []func() error{
		func() error { _, err := cl.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := cl.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cl.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	open := func(env map[string]string) error {
		cfg := Config{Endpoints: c.Endpoints(), Prefix: "auth", RequestTimeout: 3 * time.Second}
		if err := cfg.ConfigFromEnv(func(k string) string { return env[k] }); err != nil {
			return err
		}
		b, err := New(cfg)
		if err != nil {
			return err
		}
		s, err := b.Open(state.Options{Command: "auth"})
		if err != nil {
			return err
		}
		defer s.Close()
		return s.PutResource(statetest.Resource("a.x", "1"))
	}
	if err := open(map[string]string{EnvUser: "root", EnvPassword: "rootpw"}); err != nil {
		t.Fatalf("right credentials: %v", err)
	}
	if err := open(map[string]string{EnvUser: "root", EnvPassword: "wrong"}); err == nil || !strings.Contains(err.Error(), "authentication failed") {
		t.Errorf("wrong password: %v", err)
	}
	if err := open(nil); err == nil || !strings.Contains(err.Error(), "user name is empty") && !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("no credentials: %v", err)
	}
	if err := open(map[string]string{EnvPassword: "rootpw"}); err == nil || !strings.Contains(err.Error(), EnvUser) {
		t.Errorf("password without user: %v", err)
	}
}

// Concurrent results share transactions (group commit), split so none
// passes etcd's per-transaction operation limit (128 by default, which the
// cluster enforces: a bigger one would fail).
func TestGroupCommitWithinTxnLimit(t *testing.T) {
	c := needCluster(t)
	b := newBackend(t, c, 0)
	s, err := b.OpenStore(state.Options{Command: "group"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 600
	var wg sync.WaitGroup
	errs := make(chan error, n)
	before := s.Stats().Commits
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := fmt.Sprintf("a.x[%d]", i)
			errs <- s.Complete(a, statetest.Resource(a, "v"))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	commits := s.Stats().Commits - before
	t.Logf("%d results in %d transactions", n, commits)
	// Each Complete is 3 operations: at most 33 fit in one transaction.
	if commits >= n/4 || commits < n*3/maxTxnOps {
		t.Errorf("%d results in %d transactions: want grouped, within %d operations each", n, commits, maxTxnOps)
	}
	m, err := s.Meta()
	if err != nil || m.Serial != n {
		t.Errorf("serial %d (%v), want %d", m.Serial, err, n)
	}
}
