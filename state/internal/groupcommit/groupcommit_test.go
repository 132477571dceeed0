package groupcommit_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sparkform/sparkform/internal/etcdtest"
	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/state/internal/groupcommit"
)

// write is the test's operation: put key=value, or fail (checked before
// anything of it is written, as the backends' ops check first).
type write struct {
	key, value string
	fail       bool
	size       int
}

var errRefused = errors.New("refused")

// store is what a backend gives the loop: a Run that commits one batch as
// one transaction, on a real bbolt file or a real etcd cluster.
type store struct {
	name   string
	commit func(ws []write) error // one transaction
	get    func(key string) (string, bool)
	mu     sync.Mutex
	txns   int
}

// run is Config.Run: failing writes are reported alone, the rest go in
// one transaction.
func (s *store) run(ws []write, done func(int, error)) {
	var ok []write
	var idx []int
	for i, w := range ws {
		if w.fail {
			done(i, fmt.Errorf("%s: %w", w.key, errRefused))
			continue
		}
		ok, idx = append(ok, w), append(idx, i)
	}
	if len(ok) == 0 {
		return
	}
	err := s.commit(ok)
	s.mu.Lock()
	s.txns++
	s.mu.Unlock()
	for _, i := range idx {
		done(i, err)
	}
}

func boltStore(t *testing.T) *store {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "gc.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	bucket := []byte("b")
	return &store{name: "bbolt",
		commit: func(ws []write) error {
			return db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists(bucket)
				if err != nil {
					return err
				}
				for _, w := range ws {
					if err := b.Put([]byte(w.key), []byte(w.value)); err != nil {
						return err
					}
				}
				return nil
			})
		},
		get: func(key string) (v string, ok bool) {
			_ = db.View(func(tx *bolt.Tx) error {
				if b := tx.Bucket(bucket); b != nil {
					if got := b.Get([]byte(key)); got != nil {
						v, ok = string(got), true
					}
				}
				return nil
			})
			return v, ok
		},
	}
}

func etcdStore(t *testing.T) *store {
	_, err := etcdtest.Binary()
	realpart.Need(t, "etcd (apt-get install etcd-server)", err)
	c, err := etcdtest.Start(etcdtest.Options{Members: 1})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(c.Stop)
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 10*time.Second)
	}
	return &store{name: "etcd",
		commit: func(ws []write) error {
			var ops []clientv3.Op
			for _, w := range ws {
				ops = append(ops, clientv3.OpPut("gc/"+w.key, w.value))
			}
			// etcd bounds a transaction's operations (128 by default):
			// the test's Run keeps under it with MaxOps.
			cx, cancel := ctx()
			defer cancel()
			_, err := cli.Txn(cx).Then(ops...).Commit()
			return err
		},
		get: func(key string) (string, bool) {
			cx, cancel := ctx()
			defer cancel()
			resp, err := cli.Get(cx, "gc/"+key)
			if err != nil || len(resp.Kvs) == 0 {
				return "", false
			}
			return string(resp.Kvs[0].Value), true
		},
	}
}

// TestGroupCommit runs the shared loop on real bbolt and real etcd:
// concurrent writers share transactions, each learns its own outcome, a
// deferred write is durable once a later waited one returns and its
// failure reaches Flush, and Close ends it all.
func TestGroupCommit(t *testing.T) {
	for _, mk := range []func(*testing.T) *store{boltStore, etcdStore} {
		s := mk(t)
		t.Run(s.name, func(t *testing.T) {
			stopped := 0
			closedErr := errors.New("closed for the test")
			l := groupcommit.Start(groupcommit.Config[write]{Run: s.run, MaxOps: 100, Linger: 2 * time.Millisecond,
				Stop: func() { stopped++ }, Closed: closedErr})

			// 16 writers, 25 writes each, every fifth refused.
			const writers, each = 16, 25
			var wg sync.WaitGroup
			errs := make([][]error, writers)
			for w := range writers {
				errs[w] = make([]error, each)
				wg.Go(func() {
					for i := range each {
						errs[w][i] = l.Submit(write{key: fmt.Sprintf("w%02d/%02d", w, i), value: "v", fail: i%5 == 4})
					}
				})
			}
			wg.Wait()
			for w := range writers {
				for i := range each {
					key := fmt.Sprintf("w%02d/%02d", w, i)
					_, stored := s.get(key)
					if i%5 == 4 {
						if !errors.Is(errs[w][i], errRefused) || stored {
							t.Errorf("%s: %v, stored %v; want refused and not stored", key, errs[w][i], stored)
						}
					} else if errs[w][i] != nil || !stored {
						t.Errorf("%s: %v, stored %v", key, errs[w][i], stored)
					}
				}
			}
			if s.txns >= writers*each*4/5 {
				t.Errorf("%d writes that succeeded took %d transactions: no group commit", writers*each*4/5, s.txns)
			}
			t.Logf("%s: %d writes in %d transactions (%d batches)", s.name, writers*each, s.txns, l.Commits())

			// A deferred write is durable once a write queued after it
			// returns; a deferred failure is Flush's, with its label.
			if err := l.SubmitDeferred(write{key: "deferred", value: "d"}, "deferred"); err != nil {
				t.Fatal(err)
			}
			if err := l.Submit(write{key: "after", value: "a"}); err != nil {
				t.Fatal(err)
			}
			if v, ok := s.get("deferred"); !ok || v != "d" {
				t.Errorf("deferred write not stored after a later write returned: %q %v", v, ok)
			}
			if err := l.SubmitDeferred(write{key: "bad", fail: true}, `a.bad["x"]`); err != nil {
				t.Fatal(err)
			}
			err := l.Flush()
			if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), `storing the result of a.bad["x"]`) {
				t.Errorf("Flush after a failed deferred write: %v", err)
			}
			if l.Pending() {
				t.Error("deferred writes still pending after Flush")
			}

			if !l.Close() || l.Close() {
				t.Error("Close: the first call closes, the second does not")
			}
			if stopped != 1 {
				t.Errorf("Stop ran %d times", stopped)
			}
			if err := l.Submit(write{key: "late"}); !errors.Is(err, closedErr) {
				t.Errorf("Submit after Close: %v", err)
			}
			if err := l.SubmitDeferred(write{key: "late"}, "late"); !errors.Is(err, closedErr) {
				t.Errorf("SubmitDeferred after Close: %v", err)
			}
		})
	}
}

// TestBatchBounds: a batch takes no more writes once it holds MaxBytes,
// and deferred writes alone wait DeferLinger for more (a waited write ends
// the wait), on real bbolt.
func TestBatchBounds(t *testing.T) {
	s := boltStore(t)
	var sizes []int
	run := func(ws []write, done func(int, error)) {
		sizes = append(sizes, len(ws))
		s.run(ws, done)
	}
	l := groupcommit.Start(groupcommit.Config[write]{Run: run, MaxBytes: 20, Size: func(w write) int { return w.size },
		DeferLinger: time.Minute})
	defer l.Close()
	for i := range 5 {
		if err := l.SubmitDeferred(write{key: fmt.Sprint(i), value: "x", size: 5}, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Four fill a batch (20 bytes); the fifth waits a minute for more,
	// until a waited write comes.
	if err := l.Submit(write{key: "w", value: "w"}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sizes) != "[4 2]" {
		t.Errorf("batches %v, want [4 2] (four deferred writes fill 20 bytes; the fifth waits for the waited one)", sizes)
	}
	for _, k := range []string{"0", "4", "w"} {
		if _, ok := s.get(k); !ok {
			t.Errorf("%s not stored", k)
		}
	}
}
