package etcdstore

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sparkform/sparkform/state"
	"github.com/sparkform/sparkform/state/internal/groupcommit"
)

// Limits of one write transaction: etcd refuses more than --max-txn-ops
// (default 128) operations or --max-request-bytes (default 1.5 MiB).
const (
	maxTxnOps   = 100
	maxTxnBytes = 1 << 20
	maxBatch    = 1000
	readChunk   = 60 // addresses per prefetch transaction (two reads each)
)

// op is one queued write.
type op struct {
	addrs  []string           // addresses whose record and history stage reads
	stage  func(*batch) error // an error means nothing was staged
	direct func() error       // instead of stage: runs alone (Replace)
}

// batch is one group commit in the making: the etcd operations staged so
// far and, per address it touched, the record and history keys as they
// will be once it commits (so two writes to one address in one batch see
// each other). An op stages into cur; runBatch then moves cur into ops,
// committing ops first when cur would push it past etcd's limits or touch
// a key ops already writes (etcd refuses a key twice in one transaction).
type batch struct {
	s      *Store
	serial uint64
	now    time.Time
	recs   map[string][]byte // nil value: absent
	hist   map[string][]string
	ops    []clientv3.Op
	keys   map[string]bool // keys written by ops
	size   int
	cur    []clientv3.Op
	curKey []string
	curLen int
}

func (b *batch) put(k string, v []byte) {
	b.cur = append(b.cur, clientv3.OpPut(k, string(v)))
	b.curKey = append(b.curKey, k)
	b.curLen += len(k) + len(v) + 16
}

func (b *batch) del(k string) {
	b.cur = append(b.cur, clientv3.OpDelete(k))
	b.curKey = append(b.curKey, k)
	b.curLen += len(k) + 16
}

// fits reports whether cur can join ops in one transaction.
func (b *batch) fits() bool {
	if len(b.ops)+len(b.cur) > maxTxnOps || b.size+b.curLen > maxTxnBytes {
		return false
	}
	for _, k := range b.curKey {
		if b.keys[k] {
			return false
		}
	}
	return true
}

func (b *batch) take() {
	b.ops = append(b.ops, b.cur...)
	for _, k := range b.curKey {
		b.keys[k] = true
	}
	b.size += b.curLen
	b.cur, b.curKey, b.curLen = nil, nil, 0
}

func (b *batch) setRecord(addr string, data []byte) {
	if data == nil {
		b.del(b.s.k.res(addr))
	} else {
		b.put(b.s.k.res(addr), data)
	}
	b.recs[addr] = data
}

// addHistory records prior (nil: did not exist) for addr at serial and
// trims the address's history to state.HistoryLimit.
func (b *batch) addHistory(addr string, serial uint64, action, peer string, prior []byte) {
	data := state.EncodeHistory(b.now, action, peer, prior)
	key := b.s.k.hist(addr, serial)
	b.put(key, data)
	keys := append([]string{key}, b.hist[addr]...)
	for _, old := range keys[min(len(keys), state.HistoryLimit):] {
		b.del(old)
	}
	b.hist[addr] = keys[:min(len(keys), state.HistoryLimit)]
}

func (b *batch) next() uint64 { b.serial++; return b.serial }

// submit queues o and waits until its transaction is committed or failed.
func (s *Store) submit(o *op) error {
	if s.readOnly {
		return state.ErrReadOnly
	}
	return s.loop.Submit(o)
}

// startCommitLoop starts the group commit (package groupcommit), which
// hands each batch to runOps.
func (s *Store) startCommitLoop() {
	s.loop = groupcommit.Start(groupcommit.Config[*op]{Run: s.runOps, MaxOps: maxBatch, Closed: state.ErrClosed})
}

// runOps is one batch of the commit loop: direct ops run alone, in queue
// order, the others in as few transactions as runBatch can.
func (s *Store) runOps(ops []*op, done func(int, error)) {
	base := 0
	for len(ops) > 0 {
		i := 0
		for i < len(ops) && ops[i].direct == nil {
			i++
		}
		if i > 0 {
			s.runBatch(ops[:i], func(j int, err error) { done(base+j, err) })
		}
		if i < len(ops) {
			if err := s.lock.check(); err != nil {
				done(base+i, err)
			} else {
				done(base+i, ops[i].direct())
			}
			i++
		}
		ops, base = ops[i:], base+i
	}
}

// runBatch prefetches what the ops read, stages them in order and commits
// them in as few transactions as the limits allow.
func (s *Store) runBatch(ops []*op, done func(int, error)) {
	b := &batch{s: s, serial: s.serial, now: time.Now().UTC(), recs: map[string][]byte{},
		hist: map[string][]string{}, keys: map[string]bool{}}
	// A lost lock fails the batch before it reads anything: a cut-off
	// holder says why it stops, not that a read timed out.
	err := s.lock.check()
	if err == nil {
		err = s.prefetch(b, ops)
	}
	if err != nil {
		for i := range ops {
			done(i, err)
		}
		return
	}
	var pending []int // ops staged into b.ops, not yet committed
	pendingSerial := b.serial
	flush := func() error {
		err := s.commitOps(b.ops, pendingSerial)
		for _, i := range pending {
			done(i, err)
		}
		pending, b.ops, b.keys, b.size = nil, nil, map[string]bool{}, 0
		return err
	}
	for i, o := range ops {
		serialBefore := b.serial
		if err := o.stage(b); err != nil {
			// Nothing of o was kept: checks come before any staging.
			b.cur, b.curKey, b.curLen, b.serial = nil, nil, 0, serialBefore
			done(i, err)
			continue
		}
		if !b.fits() && len(pending) > 0 {
			if err := flush(); err != nil {
				for j := i; j < len(ops); j++ {
					done(j, fmt.Errorf("%w (an earlier write in the same batch failed)", err))
				}
				return
			}
		}
		b.take()
		pending = append(pending, i)
		pendingSerial = b.serial
	}
	if len(pending) > 0 {
		flush()
	}
}

// prefetch reads the record and the history keys of every address the ops
// name, a few dozen addresses per read transaction.
func (s *Store) prefetch(b *batch, ops []*op) error {
	var addrs []string
	seen := map[string]bool{}
	for _, o := range ops {
		for _, a := range o.addrs {
			if !seen[a] {
				seen[a] = true
				addrs = append(addrs, a)
			}
		}
	}
	for len(addrs) > 0 {
		chunk := addrs[:min(len(addrs), readChunk)]
		addrs = addrs[len(chunk):]
		reads := make([]clientv3.Op, 0, 2*len(chunk))
		for _, a := range chunk {
			reads = append(reads, clientv3.OpGet(s.k.res(a)),
				clientv3.OpGet(s.k.histPrefix(a), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
					clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(state.HistoryLimit)))
		}
		ctx, cancel := s.ctx()
		s.ranges.Add(int64(len(reads)))
		resp, err := s.c.Txn(ctx).Then(reads...).Commit()
		cancel()
		if err != nil {
			return fmt.Errorf("etcd backend: read %s: %w", s.where(), err)
		}
		for i, a := range chunk {
			if kvs := resp.Responses[2*i].GetResponseRange().Kvs; len(kvs) == 1 {
				b.recs[a] = kvs[0].Value
			} else {
				b.recs[a] = nil
			}
			var hk []string
			for _, kv := range resp.Responses[2*i+1].GetResponseRange().Kvs {
				hk = append(hk, string(kv.Key))
			}
			b.hist[a] = hk
		}
	}
	return nil
}

// commitOps is one write transaction, guarded by the lock condition.
func (s *Store) commitOps(ops []clientv3.Op, serial uint64) error {
	if err := s.lock.check(); err != nil {
		return err
	}
	if serial != s.serial {
		ops = append(ops, clientv3.OpPut(s.k.meta("serial"), strconv.FormatUint(serial, 10)))
	}
	if len(ops) == 0 {
		return nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	resp, err := s.c.Txn(ctx).If(s.lock.held()).Then(ops...).Commit()
	if err != nil {
		// Not known to have failed: it may have committed. The journal
		// intent written before the provider call covers the instance.
		return fmt.Errorf("etcd backend: write %s: %w", s.where(), err)
	}
	if !resp.Succeeded {
		err := fmt.Errorf("%w: %s: the lock is no longer this run's (its lease expired, or someone ran force-unlock); "+
			"nothing more is written. Unfinished instances stay in the journal and the next run settles them",
			state.ErrLockLost, s.where())
		s.lock.markLost(err)
		return err
	}
	s.serial = serial
	s.commits.Add(1)
	return nil
}

func marshalResource(r *state.Resource, now time.Time) ([]byte, error) {
	if err := state.CheckResource(r); err != nil {
		return nil, err
	}
	rec := *r
	rec.UpdatedAt = now
	if rec.Status == "" {
		rec.Status = state.StatusReady
	}
	return state.EncodeResource(&rec, rec.Address)
}

func putStage(addr string, data []byte) func(*batch) error {
	return func(b *batch) error {
		prior := b.recs[addr]
		action := state.HistoryUpdate
		if prior == nil {
			action = state.HistoryCreate
		}
		b.addHistory(addr, b.next(), action, "", prior)
		b.setRecord(addr, data)
		return nil
	}
}

func deleteStage(addr string, missingOK bool) func(*batch) error {
	return func(b *batch) error {
		prior := b.recs[addr]
		if prior == nil {
			if missingOK {
				return nil
			}
			return fmt.Errorf("%w: %s", state.ErrResourceNotFound, addr)
		}
		b.addHistory(addr, b.next(), state.HistoryDelete, "", prior)
		b.setRecord(addr, nil)
		return nil
	}
}

// PutResource stores r, records its prior value and bumps the serial.
func (s *Store) PutResource(r *state.Resource) error {
	data, err := marshalResource(r, time.Now().UTC())
	if err != nil {
		return err
	}
	return s.submit(&op{addrs: []string{r.Address}, stage: putStage(r.Address, data)})
}

// Complete stores an apply's result (nil: gone) and clears addr's intent.
// Unlike the local file's, it returns once committed (the stronger form of
// the Store contract): a deferred write here would need its own ordering
// across the transactions a batch is split into.
func (s *Store) Complete(addr string, result *state.Resource) error {
	if err := checkAddress(addr); err != nil {
		return err
	}
	var write func(*batch) error
	if result != nil {
		if result.Address != addr {
			return fmt.Errorf("%w: Complete(%s) got a record for %s", state.ErrInvalid, addr, result.Address)
		}
		data, err := marshalResource(result, time.Now().UTC())
		if err != nil {
			return err
		}
		write = putStage(addr, data)
	} else {
		write = deleteStage(addr, true)
	}
	return s.submit(&op{addrs: []string{addr}, stage: func(b *batch) error {
		if err := write(b); err != nil {
			return err
		}
		b.del(s.k.jnl(addr))
		return nil
	}})
}

// DeleteResource removes addr (history keeps the record).
func (s *Store) DeleteResource(addr string) error {
	if err := checkAddress(addr); err != nil {
		return err
	}
	return s.submit(&op{addrs: []string{addr}, stage: deleteStage(addr, false)})
}

// MoveResource renames an instance.
func (s *Store) MoveResource(from, to string) error {
	if err := checkAddress(from); err != nil {
		return err
	}
	if err := checkAddress(to); err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("%w: cannot move %s onto itself", state.ErrInvalid, from)
	}
	return s.submit(&op{addrs: []string{from, to}, stage: func(b *batch) error {
		prior := b.recs[from]
		if prior == nil {
			return fmt.Errorf("%w: %s (nothing to move)", state.ErrResourceNotFound, from)
		}
		if b.recs[to] != nil {
			return fmt.Errorf("%w: %s; remove it first or pick another address", state.ErrResourceExists, to)
		}
		r, err := state.DecodeResource(prior, from)
		if err != nil {
			return err
		}
		if err := state.CheckMove(r, to); err != nil {
			return err
		}
		r.Address, r.UpdatedAt = to, b.now
		data, err := state.EncodeResource(r, to)
		if err != nil {
			return err
		}
		serial := b.next()
		b.addHistory(from, serial, state.HistoryMoveOut, to, prior)
		b.addHistory(to, serial, state.HistoryMoveIn, from, nil)
		b.setRecord(to, data)
		b.setRecord(from, nil)
		return nil
	}})
}

// PutIntent journals in before a provider call.
func (s *Store) PutIntent(in *state.Intent) error {
	if in == nil {
		return fmt.Errorf("%w: nil intent", state.ErrInvalid)
	}
	if err := checkAddress(in.Address); err != nil {
		return err
	}
	if in.Action == "" {
		return fmt.Errorf("%w: intent for %s has no action", state.ErrInvalid, in.Address)
	}
	rec := *in
	if rec.Started.IsZero() {
		rec.Started = time.Now().UTC()
	}
	if rec.PID == 0 {
		rec.PID = os.Getpid()
	}
	if rec.Resource != nil {
		if err := state.CheckResource(rec.Resource); err != nil {
			return err
		}
	}
	data, err := state.EncodeIntent(&rec)
	if err != nil {
		return fmt.Errorf("%w: intent for %s: %v", state.ErrInvalid, in.Address, err)
	}
	key := s.k.jnl(in.Address)
	return s.submit(&op{stage: func(b *batch) error { b.put(key, data); return nil }})
}

// DeleteIntent clears addr's journal record.
func (s *Store) DeleteIntent(addr string) error {
	if err := checkAddress(addr); err != nil {
		return err
	}
	key := s.k.jnl(addr)
	return s.submit(&op{stage: func(b *batch) error { b.del(key); return nil }})
}

// PutOutputs replaces every stored output.
func (s *Store) PutOutputs(outs map[string]state.Output) error {
	data, err := json.Marshal(outs)
	if err != nil {
		return fmt.Errorf("%w: outputs: %v", state.ErrInvalid, err)
	}
	key := s.k.meta("outputs")
	return s.submit(&op{stage: func(b *batch) error { b.put(key, data); return nil }})
}

// Replace makes the state exactly p. etcd bounds a transaction, so a big
// state goes in several: the first clears the prefix and marks the state
// "being replaced" (meta/replacing), which readers refuse, and the last
// clears the mark. An interrupted push leaves the mark; pushing again
// finishes it.
func (s *Store) Replace(p *state.Portable) error {
	if p == nil || p.Lineage == "" {
		return fmt.Errorf("%w: replace with a snapshot that has no lineage", state.ErrInvalid)
	}
	recs := make([][2]string, 0, len(p.Resources))
	for _, r := range p.Resources {
		if err := state.CheckResource(r); err != nil {
			return err
		}
		rec := *state.CompactValue(r, s.convert)
		if rec.Status == "" {
			rec.Status = state.StatusReady
		}
		data, err := state.EncodeResource(&rec, rec.Address)
		if err != nil {
			return err
		}
		recs = append(recs, [2]string{s.k.res(r.Address), string(data)})
	}
	outs, err := json.Marshal(p.Outputs)
	if err != nil {
		return fmt.Errorf("%w: outputs: %v", state.ErrInvalid, err)
	}
	return s.submit(&op{direct: func() error {
		first := []clientv3.Op{
			clientv3.OpPut(s.k.meta("replacing"), p.Lineage),
			clientv3.OpDelete(s.k.resPrefix(), clientv3.WithPrefix()),
			clientv3.OpDelete(s.k.jnlPrefix(), clientv3.WithPrefix()),
			clientv3.OpDelete(s.k.allHist(), clientv3.WithPrefix()),
			clientv3.OpPut(s.k.meta("lineage"), p.Lineage),
			clientv3.OpPut(s.k.meta("outputs"), string(outs)),
		}
		if err := s.commitOps(first, s.serial); err != nil {
			return err
		}
		var chunk []clientv3.Op
		size := 0
		for _, kv := range recs {
			if len(chunk) >= maxTxnOps || size+len(kv[0])+len(kv[1]) > maxTxnBytes {
				if err := s.commitOps(chunk, s.serial); err != nil {
					return err
				}
				chunk, size = nil, 0
			}
			chunk = append(chunk, clientv3.OpPut(kv[0], kv[1]))
			size += len(kv[0]) + len(kv[1])
		}
		chunk = append(chunk, clientv3.OpDelete(s.k.meta("replacing")),
			clientv3.OpPut(s.k.meta("serial"), strconv.FormatUint(p.Serial, 10)))
		if err := s.commitOps(chunk, s.serial); err != nil {
			return err
		}
		s.serial = p.Serial
		return nil
	}})
}
