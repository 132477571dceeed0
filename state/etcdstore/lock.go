package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sparkform/sparkform/state"
)

// lease is a held writer lock: the lock key on this run's lease.
type lease struct {
	s      *Store
	id     clientv3.LeaseID
	ttl    time.Duration
	cancel context.CancelFunc // ends the keepalive
	kaDone chan struct{}

	mu          sync.Mutex
	lastRefresh time.Time // last confirmed keepalive (or the grant)
	lost        error
}

// held is the condition every write transaction starts with: the lock key
// is still on this run's lease. A lease that expired took the key with it,
// and a new holder's key is on another lease.
func (l *lease) held() clientv3.Cmp {
	return clientv3.Compare(clientv3.LeaseValue(l.s.k.lock()), "=", l.id)
}

// check reports whether writing is still safe: the lock was not found
// broken, the keepalive stream lives, and a refresh was confirmed within
// 2/3 of the TTL (etcd expires the lease at most TTL after its last
// refresh, and refreshes go out every TTL/3).
func (l *lease) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	if since := time.Since(l.lastRefresh); since > l.ttl*2/3 {
		l.lost = fmt.Errorf("%w: %s: no lease refresh confirmed for %s (lock TTL %s), so the cluster may already have "+
			"given the lock to another run; stopping before the next write. Unfinished instances stay in the journal "+
			"and the next run settles them", state.ErrLockLost, l.s.where(), since.Round(time.Millisecond), l.ttl)
	}
	return l.lost
}

func (l *lease) markLost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil {
		l.lost = err
	}
}

func ttlSeconds(d time.Duration) int64 { return int64(math.Ceil(d.Seconds())) }

// acquire takes the lock, polling while another run holds it.
func (s *Store) acquire(opts state.Options) (*lease, error) {
	ttl := s.b.cfg.LockTTL
	ctx, cancel := s.ctx()
	g, err := s.c.Grant(ctx, ttlSeconds(ttl))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("etcd backend: %s: grant a lock lease: %w", s.where(), err)
	}
	kctx, kcancel := context.WithCancel(context.Background())
	l := &lease{s: s, id: g.ID, ttl: ttl, cancel: kcancel, kaDone: make(chan struct{}), lastRefresh: time.Now()}
	ch, err := s.c.KeepAlive(kctx, g.ID)
	if err != nil {
		kcancel()
		return nil, fmt.Errorf("etcd backend: %s: keep the lock lease alive: %w", s.where(), err)
	}
	go func() {
		defer close(l.kaDone)
		for range ch {
			l.mu.Lock()
			l.lastRefresh = time.Now()
			l.mu.Unlock()
		}
		if kctx.Err() == nil {
			l.markLost(fmt.Errorf("%w: %s: the lock's lease ended (it expired, the cluster stopped answering its keepalives, "+
				"or someone ran force-unlock; lock TTL %s); stopping before the next write. Unfinished instances stay in the journal and the next "+
				"run settles them", state.ErrLockLost, s.where(), ttl))
		}
	}()
	holder, _ := json.Marshal(state.CurrentHolder(opts.Command))
	start, delay := time.Now(), 50*time.Millisecond
	for {
		ctx, cancel := s.ctx()
		s.ranges.Add(1)
		resp, err := s.c.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(s.k.lock()), "=", 0)).
			Then(clientv3.OpPut(s.k.lock(), string(holder), clientv3.WithLease(g.ID))).
			Else(clientv3.OpGet(s.k.lock())).
			Commit()
		cancel()
		if err != nil {
			l.abandon()
			return nil, fmt.Errorf("etcd backend: %s: take the lock: %w", s.where(), err)
		}
		if resp.Succeeded {
			return l, nil
		}
		var h *state.Holder
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			h = parseHolder(kvs[0].Value)
		}
		waited := time.Since(start)
		if waited >= opts.LockTimeout {
			l.abandon()
			return nil, &state.LockedError{Path: s.where(), Holder: h, Waited: waited,
				Note: fmt.Sprintf("if that process is gone, the lock frees itself when its lease expires (lock_ttl, %s here)", ttl)}
		}
		time.Sleep(min(delay, opts.LockTimeout-waited))
		delay = min(2*delay, 500*time.Millisecond)
	}
}

func parseHolder(v []byte) *state.Holder {
	var h state.Holder
	if json.Unmarshal(v, &h) != nil {
		return nil
	}
	return &h
}

// abandon stops the keepalive and revokes the lease (lock not taken).
func (l *lease) abandon() {
	l.cancel()
	<-l.kaDone
	ctx, cancel := l.s.ctx()
	defer cancel()
	_, _ = l.s.c.Revoke(ctx, l.id)
}

// release deletes the lock key if it is still ours and revokes the lease.
func (l *lease) release() error {
	l.cancel()
	<-l.kaDone
	ctx, cancel := l.s.ctx()
	defer cancel()
	_, err := l.s.c.Txn(ctx).If(l.held()).Then(clientv3.OpDelete(l.s.k.lock())).Commit()
	if _, rerr := l.s.c.Revoke(ctx, l.id); err == nil && rerr != nil && !isLeaseNotFound(rerr) {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("etcd backend: %s: release the lock (it frees itself within %s): %w", l.s.where(), l.ttl, err)
	}
	return nil
}

func isLeaseNotFound(err error) bool { return errors.Is(err, rpctypes.ErrLeaseNotFound) }

// ReadHolder returns the current lock holder, or state.ErrNotLocked.
func (b *Backend) ReadHolder() (*state.Holder, error) {
	c, err := b.client()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.RequestTimeout)
	defer cancel()
	resp, err := c.Get(ctx, b.cfg.Prefix+"/lock")
	if err != nil {
		return nil, fmt.Errorf("etcd backend: %s: read the lock: %w", b, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%w: %s", state.ErrNotLocked, b)
	}
	h := parseHolder(resp.Kvs[0].Value)
	if h == nil {
		h = &state.Holder{Command: "(unreadable holder record)"}
	}
	return h, nil
}

// ForceUnlock breaks the lock: it deletes the lock key and revokes its
// lease, so the holder's next write fails its lock condition
// (state.ErrLockLost). As with the local file, a holder that is a live
// process on this host is refused unless opts.Force. A holder that died
// needs no force-unlock: its lock frees itself one TTL after its death.
func (b *Backend) ForceUnlock(opts state.UnlockOptions) (*state.Holder, error) {
	c, err := b.client()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.RequestTimeout)
	defer cancel()
	key := b.cfg.Prefix + "/lock"
	resp, err := c.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("etcd backend: %s: read the lock: %w", b, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%w: %s", state.ErrNotLocked, b)
	}
	kv := resp.Kvs[0]
	h := parseHolder(kv.Value)
	if err := opts.CheckID(h); err != nil {
		return h, err
	}
	host, _ := os.Hostname()
	if !opts.Force && h != nil && h.Host == host && processAlive(h.PID) {
		return h, fmt.Errorf("%w: pid %d (%q) on this host holds the lock on %s since %s; "+
			"let it finish or stop it, or force the unlock if it is hung",
			state.ErrHolderAlive, h.PID, h.Command, b, h.Since.Format(time.RFC3339))
	}
	// Only the lock we read: a new holder that got in meanwhile keeps its own.
	tr, err := c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
		Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return h, fmt.Errorf("etcd backend: %s: force-unlock: %w", b, err)
	}
	if !tr.Succeeded {
		return h, fmt.Errorf("%w: the lock of %s changed hands while unlocking; look again", state.ErrNotLocked, b)
	}
	if kv.Lease != 0 {
		if _, err := c.Revoke(ctx, clientv3.LeaseID(kv.Lease)); err != nil && !isLeaseNotFound(err) {
			return h, fmt.Errorf("etcd backend: %s: revoke the old holder's lease: %w", b, err)
		}
	}
	if h == nil {
		h = &state.Holder{Command: "(unreadable holder record)"}
	}
	return h, nil
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
