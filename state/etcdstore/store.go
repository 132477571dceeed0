package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/sparkform/sparkform/state"
	"github.com/sparkform/sparkform/state/internal/groupcommit"
)

// Backend is the etcd backend for one prefix.
type Backend struct{ cfg Config }

var (
	_ state.Backend = (*Backend)(nil)
	_ state.Store   = (*Store)(nil)
)

// New checks cfg and returns the backend; nothing is contacted yet.
func New(cfg Config) (*Backend, error) {
	cfg.Endpoints = append([]string(nil), cfg.Endpoints...)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Backend{cfg: cfg}, nil
}

func (b *Backend) String() string {
	return fmt.Sprintf("etcd state %q at %s", b.cfg.Prefix, strings.Join(b.cfg.Endpoints, ","))
}

// Config returns the checked configuration.
func (b *Backend) Config() Config { return b.cfg }

func (b *Backend) client() (*clientv3.Client, error) {
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            b.cfg.Endpoints,
		DialTimeout:          b.cfg.DialTimeout,
		DialKeepAliveTime:    b.cfg.LockTTL / 3,
		DialKeepAliveTimeout: b.cfg.LockTTL / 3,
		TLS:                  b.cfg.TLS,
		Username:             b.cfg.Username,
		Password:             b.cfg.Password,
		Logger:               zap.NewNop(),
		// Connect before the first request, and say why a connection
		// failed (a refused certificate, a wrong endpoint) instead of a
		// bare deadline.
		DialOptions: []grpc.DialOption{grpc.WithBlock(), grpc.WithReturnConnectionError()}, //lint:ignore SA1019 clientv3 still dials with grpc.DialContext, where these work
	})
	if err != nil {
		return nil, fmt.Errorf("etcd backend: connect to %s: %w", strings.Join(b.cfg.Endpoints, ","), err)
	}
	return c, nil
}

type mvccKV = mvccpb.KeyValue

func checkAddress(addr string) error { return state.CheckAddress(addr) }

type keys struct{ p string }

func (k keys) meta(name string) string { return k.p + "meta/" + name }
func (k keys) metaPrefix() string      { return k.p + "meta/" }
func (k keys) res(addr string) string  { return k.p + "r/" + addr }
func (k keys) resPrefix() string       { return k.p + "r/" }
func (k keys) jnl(addr string) string  { return k.p + "j/" + addr }
func (k keys) jnlPrefix() string       { return k.p + "j/" }
func (k keys) histPrefix(addr string) string {
	return k.p + "h/" + addr + "\x00" // addresses hold no NUL: no prefix overlap
}
func (k keys) hist(addr string, serial uint64) string {
	return k.histPrefix(addr) + fmt.Sprintf("%016x", serial)
}
func (k keys) allHist() string { return k.p + "h/" }
func (k keys) lock() string    { return k.p + "lock" }

// Store is an open etcd state. Methods are safe for concurrent use.
type Store struct {
	b        *Backend
	c        *clientv3.Client
	k        keys
	readOnly bool
	lock     *lease                                        // nil when read-only
	convert  func(json.RawMessage) ([]byte, []byte, error) // state.Options.ConvertValue

	loop     *groupcommit.Loop[*op] // the group commit; nil when read-only
	roClosed atomic.Bool            // a read-only store was closed

	serial  uint64 // committed serial (the writer is the only one who changes it)
	ranges  atomic.Int64
	commits atomic.Int64
}

// Stats counts what the store sent: range requests (a Get, or one read in
// a transaction) and committed write transactions.
type Stats struct{ Ranges, Commits int64 }

func (s *Store) Stats() Stats { return Stats{Ranges: s.ranges.Load(), Commits: s.commits.Load()} }

// Open connects, takes the writer lock (waiting up to opts.LockTimeout)
// and creates the state's meta data when the prefix is empty.
func (b *Backend) Open(opts state.Options) (state.Store, error) { return b.OpenStore(opts) }

// OpenStore is Open with the concrete type.
func (b *Backend) OpenStore(opts state.Options) (*Store, error) {
	c, err := b.client()
	if err != nil {
		return nil, err
	}
	s := &Store{b: b, c: c, k: keys{b.cfg.Prefix + "/"}, convert: opts.ConvertValue}
	l, err := s.acquire(opts)
	if err != nil {
		c.Close()
		return nil, err
	}
	s.lock = l
	if err := s.init(); err != nil {
		l.release()
		c.Close()
		return nil, err
	}
	s.startCommitLoop()
	return s, nil
}

// OpenReadOnly connects without the lock. It fails with state.ErrNoState
// when the prefix holds no state.
func (b *Backend) OpenReadOnly() (state.Store, error) {
	c, err := b.client()
	if err != nil {
		return nil, err
	}
	s := &Store{b: b, c: c, k: keys{b.cfg.Prefix + "/"}, readOnly: true}
	if _, err := s.Meta(); err != nil {
		c.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.b.cfg.RequestTimeout)
}

func (s *Store) where() string { return s.b.String() }

func (s *Store) init() error {
	ctx, cancel := s.ctx()
	defer cancel()
	resp, err := s.get(ctx, s.k.metaPrefix(), clientv3.WithPrefix())
	if err != nil {
		return err
	}
	// An interrupted push leaves meta/replacing: a writer may open the
	// state to push again.
	_, m, err := s.decodeMeta(resp.Kvs, true)
	if err == nil {
		s.serial = m.Serial
		if m.Version < state.FormatVersion {
			// Records of format 1 (JSON) and 2 stay readable and become
			// format 3 as they are written; the version tells an older
			// sparkform that it can no longer read this state.
			tr, err := s.c.Txn(ctx).If(s.lock.held()).Then(
				clientv3.OpPut(s.k.meta("version"), strconv.Itoa(state.FormatVersion))).Commit()
			if err != nil {
				return fmt.Errorf("etcd backend: upgrade the state format under %q: %w", s.b.cfg.Prefix, err)
			}
			if !tr.Succeeded {
				return fmt.Errorf("%w: %s (while upgrading the state format)", state.ErrLockLost, s.where())
			}
		}
		return nil
	}
	if !errors.Is(err, state.ErrNoState) {
		return err
	}
	lineage := state.NewLineage()
	tr, err := s.c.Txn(ctx).If(
		s.lock.held(),
		clientv3.Compare(clientv3.CreateRevision(s.k.meta("lineage")), "=", 0),
	).Then(
		clientv3.OpPut(s.k.meta("lineage"), lineage),
		clientv3.OpPut(s.k.meta("serial"), "0"),
		clientv3.OpPut(s.k.meta("version"), strconv.Itoa(state.FormatVersion)),
		clientv3.OpPut(s.k.meta("created"), time.Now().UTC().Format(time.RFC3339Nano)),
	).Commit()
	if err != nil {
		return fmt.Errorf("etcd backend: create state under %q: %w", s.b.cfg.Prefix, err)
	}
	if !tr.Succeeded {
		return fmt.Errorf("%w: %s (while creating the state)", state.ErrLockLost, s.where())
	}
	return nil
}

// Flush: every write here returns once the cluster committed it (Complete
// included), so nothing is ever left to wait for.
func (s *Store) Flush() error { return nil }

// Close waits for pending writes, then releases the lock and the client.
func (s *Store) Close() error {
	if s.loop != nil {
		if !s.loop.Close() {
			return nil // closed already
		}
	} else if !s.roClosed.CompareAndSwap(false, true) {
		return nil
	}
	var err error
	if s.lock != nil {
		err = s.lock.release()
	}
	s.c.Close()
	return err
}

func (s *Store) checkOpen() error {
	if s.roClosed.Load() || (s.loop != nil && s.loop.Closed()) {
		return state.ErrClosed
	}
	return nil
}

// get is one range request.
func (s *Store) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	s.ranges.Add(1)
	resp, err := s.c.Get(ctx, key, opts...)
	if err != nil {
		return nil, fmt.Errorf("etcd backend: read %s: %w", s.where(), err)
	}
	return resp, nil
}

func (s *Store) readMeta(ctx context.Context) (state.Meta, error) {
	resp, err := s.get(ctx, s.k.metaPrefix(), clientv3.WithPrefix())
	if err != nil {
		return state.Meta{}, err
	}
	_, m, err := s.decodeMeta(resp.Kvs, false)
	return m, err
}

// decodeMeta reads the meta keys (and outputs, which live beside them).
func (s *Store) decodeMeta(kvs []*mvccKV, replacingOK bool) (map[string][]byte, state.Meta, error) {
	vals := map[string][]byte{}
	for _, kv := range kvs {
		vals[strings.TrimPrefix(string(kv.Key), s.k.metaPrefix())] = kv.Value
	}
	if len(vals) == 0 {
		return vals, state.Meta{}, fmt.Errorf("%w: %s holds no state (nothing has been applied there)", state.ErrNoState, s.where())
	}
	serial, err1 := strconv.ParseUint(string(vals["serial"]), 10, 64)
	version, err2 := strconv.Atoi(string(vals["version"]))
	if len(vals["lineage"]) == 0 || err1 != nil || err2 != nil {
		return vals, state.Meta{}, fmt.Errorf("%w: %s has keys under %smeta/ that are not sparkform meta data", state.ErrFormat, s.where(), s.k.p)
	}
	m := state.Meta{Lineage: string(vals["lineage"]), Serial: serial, Version: version}
	if vals["replacing"] != nil && !replacingOK {
		return vals, m, fmt.Errorf("%w: %s is half-way through a state push or migrate that did not finish; "+
			"run that push or migrate again", state.ErrFormat, s.where())
	}
	if m.Version > state.FormatVersion {
		return vals, m, fmt.Errorf("%w: %s has format version %d; this sparkform reads up to %d: upgrade sparkform",
			state.ErrFormat, s.where(), m.Version, state.FormatVersion)
	}
	return vals, m, nil
}

// Meta returns lineage, serial and format version (one range request).
func (s *Store) Meta() (state.Meta, error) {
	if err := s.checkOpen(); err != nil {
		return state.Meta{}, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	return s.readMeta(ctx)
}

// Resources returns every instance, sorted by address (one range request).
func (s *Store) Resources() ([]*state.Resource, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	resp, err := s.get(ctx, s.k.resPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	return decodeAll(state.DecodeResource, resp.Kvs, s.k.resPrefix())
}

// Resource returns one instance.
func (s *Store) Resource(addr string) (*state.Resource, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	resp, err := s.get(ctx, s.k.res(addr))
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("%w: %s", state.ErrResourceNotFound, addr)
	}
	return state.DecodeResource(resp.Kvs[0].Value, addr)
}

// Intents returns the journal, sorted by address (one range request).
func (s *Store) Intents() ([]*state.Intent, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	resp, err := s.get(ctx, s.k.jnlPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	return decodeAll(state.DecodeIntent, resp.Kvs, s.k.jnlPrefix())
}

// Snapshot reads meta, resources and journal at one revision: three range
// requests in one read transaction.
func (s *Store) Snapshot() (*state.Snapshot, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	s.ranges.Add(3)
	resp, err := s.c.Txn(ctx).Then(
		clientv3.OpGet(s.k.metaPrefix(), clientv3.WithPrefix()),
		clientv3.OpGet(s.k.resPrefix(), clientv3.WithPrefix()),
		clientv3.OpGet(s.k.jnlPrefix(), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("etcd backend: read %s: %w", s.where(), err)
	}
	var snap state.Snapshot
	if _, snap.Meta, err = s.decodeMeta(resp.Responses[0].GetResponseRange().Kvs, false); err != nil {
		return nil, err
	}
	if snap.Resources, err = decodeAll(state.DecodeResource, resp.Responses[1].GetResponseRange().Kvs, s.k.resPrefix()); err != nil {
		return nil, err
	}
	if snap.Intents, err = decodeAll(state.DecodeIntent, resp.Responses[2].GetResponseRange().Kvs, s.k.jnlPrefix()); err != nil {
		return nil, err
	}
	return &snap, nil
}

// History returns addr's prior records, newest first.
func (s *Store) History(addr string) ([]*state.HistoryEntry, error) {
	if err := checkAddress(addr); err != nil {
		return nil, err
	}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	resp, err := s.get(ctx, s.k.histPrefix(addr), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(state.HistoryLimit))
	if err != nil {
		return nil, err
	}
	var out []*state.HistoryEntry
	prefix := s.k.histPrefix(addr)
	for _, kv := range resp.Kvs {
		serial, err := strconv.ParseUint(strings.TrimPrefix(string(kv.Key), prefix), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: history key %q", state.ErrFormat, kv.Key)
		}
		e, err := state.DecodeHistory(kv.Value, addr, serial)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Outputs returns every stored output.
func (s *Store) Outputs() (map[string]state.Output, error) {
	out := map[string]state.Output{}
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	resp, err := s.get(ctx, s.k.meta("outputs"))
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 1 {
		if err := json.Unmarshal(resp.Kvs[0].Value, &out); err != nil {
			return nil, fmt.Errorf("%w: outputs record is corrupt: %v", state.ErrFormat, err)
		}
	}
	return out, nil
}

func decodeAll[T any](dec func([]byte, string) (*T, error), kvs []*mvccKV, prefix string) ([]*T, error) {
	out := make([]*T, 0, len(kvs))
	for _, kv := range kvs {
		v, err := dec(kv.Value, strings.TrimPrefix(string(kv.Key), prefix))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil // etcd returns keys in byte order, as bbolt does
}
