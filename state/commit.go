package state

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/sparkform/sparkform/state/internal/groupcommit"
)

var randRead = rand.Read

// maxBatch and maxBatchBytes bound one group commit so a huge queue
// cannot build one transaction of unbounded size: at most maxBatch writes,
// and no write joins a batch that already holds maxBatchBytes of records.
// Results arrive in the walk's order, not their addresses', so each
// commit rewrites most leaf pages whatever its size: a 10,000-instance
// destroy in batches of 1,000 made 8,669 pwrites and 22 fdatasyncs, in
// batches of 4,096 2,704 and 8, and its peak RSS fell by 11-15 MiB (its
// apply: 4,580 and 29 -> 2,716 and 19).
const (
	maxBatch      = 4096
	maxBatchBytes = 16 << 20
)

// maxLinger bounds how long a batch waits for writers that were in the
// previous batch to come back. In an apply they come back after a
// provider call (their next intent or result): at 0.5 ms most missed it,
// and a 10,000-instance apply made 4,300 commits of ~4.6 writes; at 2 ms
// (less than one fsync'd commit here) 3,100 commits, each saving two
// fdatasyncs, about 0.6 CPU s of the apply. A writer that does not come
// back costs the batch this much once.
const maxLinger = 2 * time.Millisecond

// deferLinger bounds how long a batch of deferred Completes alone waits
// for more (gatherDeferred). Their durability is promised only by the
// next waited write, Flush or Close, which end the wait at once.
var deferLinger = 20 * time.Millisecond // a var for tests

// op is one queued write: fn runs inside the batch's transaction. addr is
// set for a deferred Complete (its address, for faultBeforeCommit), size
// is about the bytes of record it writes (maxBatchBytes).
type op struct {
	fn   opFunc
	addr string
	size int
}

// commitCtx is shared by the ops of one batch.
type commitCtx struct {
	serial  uint64
	now     time.Time
	in      *txInterner
	counts  bucketCounts // entries per sealed bucket, as ops change them
	recount bool         // an op rebuilt the buckets (Replace): count them
}

func (c *commitCtx) next() uint64 { c.serial++; return c.serial }

// opError marks an error raised by one op (not by the transaction), so the
// batch can be retried without it.
type opError struct {
	i   int
	err error
}

func (e *opError) Error() string { return e.err.Error() }

// submit queues fn and waits until its batch is durable (committed and
// fsync'd by bbolt) or failed.
func (s *BoltStore) submit(fn opFunc) error {
	if s.readOnly {
		return ErrReadOnly
	}
	return s.loop.Submit(&op{fn: fn})
}

// submitDeferred queues fn without waiting (Complete): the commit loop
// commits the queue in order, so fn is durable once any write queued after
// it returns, or Flush or Close does.
func (s *BoltStore) submitDeferred(addr string, size int, fn opFunc) error {
	if s.readOnly {
		return ErrReadOnly
	}
	return s.loop.SubmitDeferred(&op{fn: fn, addr: addr, size: size}, addr)
}

// deferredError is the first failed deferred write, nil if none failed.
func (s *BoltStore) deferredError() error {
	if s.loop == nil {
		return nil
	}
	return s.loop.DeferredErr()
}

// Flush waits until every write queued before it (Complete's) is durable
// and returns the error of any deferred write that failed since Open.
func (s *BoltStore) Flush() error {
	if s.readOnly {
		return nil
	}
	return s.loop.Flush()
}

// The commit loop keeps the bbolt file open from one batch to the next
// while writes are already queued: opening it per batch (open, flock, read
// meta and freelist, mmap, munmap) cost about as much CPU as the commit
// itself on a 10,000-instance apply. Readers still get in between
// commits, as the package contract says. The handle is let go once the
// queue has stayed empty for idleHold; a reader waiting in flock
// (flockWait) is woken by that release and mostly gets in before the next
// batch polls for the file again (flockPoll). What bounds its wait is
// holdMax: once the file has been taken back within readerGap of each
// release for that long (held, or let go only briefly), it is let go and
// not taken again for readerGap, time enough for a woken reader to be
// scheduled. So a reader waits about holdMax at most, never a whole
// apply. (When a short let-go restarted the holdMax clock, an apply whose
// provider calls lasted about idleHold took the file back within 0.5 ms
// of each release, and polling readers waited up to a second:
// TestReaderDuringApply.)
const (
	holdMax   = 50 * time.Millisecond
	readerGap = 3 * time.Millisecond
	idleHold  = 2 * time.Millisecond
)

// startCommitLoop starts the group commit (package groupcommit): while one
// batch is being fsync'd, new ops queue up, and the next batch takes all
// of them in one transaction. Queued Completes alone wait up to
// deferLinger for more: results that reach no node come back faster than
// a commit; committed as they came, a 10,000-instance apply of
// sparkform_data made ~55 commits of ~180 results, each rewriting the
// bbolt leaves its random addresses fall in.
func (s *BoltStore) startCommitLoop() {
	s.loop = groupcommit.Start(groupcommit.Config[*op]{
		Run:         s.runLoopBatch,
		MaxOps:      maxBatch,
		MaxBytes:    maxBatchBytes,
		Size:        func(o *op) int { return o.size },
		Linger:      maxLinger,
		DeferLinger: deferLinger,
		Idle:        s.releaseHeld,
		IdleAfter:   idleHold,
		Stop:        s.releaseHeld, // Close returns with the file closed
		Closed:      ErrClosed,
	})
}

// releaseHeld lets go of the handle the commit loop keeps open (see
// holdMax); commit loop only.
func (s *BoltStore) releaseHeld() {
	if s.held {
		s.releaseDB()
		s.held, s.releasedAt = false, time.Now()
	}
}

// takeHeld opens the handle for a batch; commit loop only (see holdMax).
func (s *BoltStore) takeHeld() {
	gap := time.Since(s.releasedAt)
	if s.yielding && gap < readerGap {
		time.Sleep(readerGap - gap)
	}
	if s.yielding || gap >= readerGap {
		s.busySince = time.Now()
	}
	s.yielding = false
	// On error commit's own acquire reports it to the batch.
	if _, err := s.acquireDB(); err == nil {
		s.held = true
	}
}

// runLoopBatch is one batch of the commit loop: the file is kept open
// for the next (see holdMax), the batch committed by runBatch.
func (s *BoltStore) runLoopBatch(batch []*op, done func(int, error)) {
	if !s.held {
		s.takeHeld()
	}
	if faultBeforeCommit != nil {
		faultBeforeCommit(deferredAddrs(batch))
	}
	s.runBatch(batch, done)
	if s.held && time.Since(s.busySince) > holdMax {
		s.releaseHeld()
		s.yielding = true
	}
}

// runBatch commits batch in one transaction; an op that fails rolls it
// back, is reported, and the others are committed again without it.
func (s *BoltStore) runBatch(batch []*op, done func(int, error)) {
	idx := make([]int, len(batch)) // batch[j] is the caller's op idx[j]
	for i := range idx {
		idx[i] = i
	}
	for len(batch) > 0 {
		err := guard(s.path, func() error { return s.commit(batch) })
		var oe *opError
		if !errors.As(err, &oe) {
			for _, i := range idx {
				done(i, err)
			}
			return
		}
		// One op failed and rolled the batch back: report it and commit the
		// others again without it.
		done(idx[oe.i], oe.err)
		batch = append(batch[:oe.i:oe.i], batch[oe.i+1:]...)
		idx = append(idx[:oe.i:oe.i], idx[oe.i+1:]...)
	}
}

func (s *BoltStore) commit(batch []*op) error {
	if !s.lock.valid() {
		return fmt.Errorf("%w: %s (broken by force-unlock)", ErrLockLost, s.path)
	}
	db, err := s.acquireDB()
	if err != nil {
		return err
	}
	defer s.releaseDB()
	var txid uint64
	var lineage string
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		c := &commitCtx{serial: binary.BigEndian.Uint64(meta.Get(keySerial)), now: time.Now().UTC(), in: newInterner(tx)}
		c.counts, _ = readCounts(meta) // the open's full check found them
		for _, name := range [][]byte{bucketResources, bucketHistory, bucketInterned} {
			tx.Bucket(name).FillPercent = fillPercent
		}
		start := c.serial
		for i, o := range batch {
			if err := o.fn(tx, c); err != nil {
				return &opError{i: i, err: inFile(s.path, err)}
			}
		}
		if c.serial != start {
			if err := meta.Put(keySerial, u64(c.serial)); err != nil {
				return err
			}
		}
		if c.recount {
			if err := countAll(tx); err != nil {
				return err
			}
		} else {
			c.counts[cntInterned] += c.in.added
			if err := putCounts(meta, c.counts); err != nil {
				return err
			}
		}
		if err := putMetaCheck(tx); err != nil {
			return err
		}
		txid = uint64(tx.ID())
		lineage = string(meta.Get(keyLineage))
		return nil
	})
	if err == nil {
		s.commits.Add(1)
		// Still under the file's flock: a reader sees the record and the
		// commit it names together.
		s.recordCommit(lineage, txid)
	}
	return err
}

// PutResource stores r (creating or replacing its address), records the
// prior value in history and bumps the serial. It returns once durable.
// The store sets UpdatedAt and an empty Status to StatusReady; r itself is
// not modified.
func (s *BoltStore) PutResource(r *Resource) error {
	fn, err := putResourceOp(r)
	if err != nil {
		return err
	}
	return s.submit(fn)
}

type opFunc = func(*bolt.Tx, *commitCtx) error

func putResourceOp(r *Resource) (opFunc, error) {
	if err := checkResource(r); err != nil {
		return nil, err
	}
	rec := *r
	rec.UpdatedAt = time.Now().UTC()
	if rec.Status == "" {
		rec.Status = StatusReady
	}
	key := []byte(r.Address)
	return func(tx *bolt.Tx, c *commitCtx) error {
		// Encoded in the transaction, where refs get their interned ids:
		// copying a few fields, the values come encoded from the engine.
		data, err := appendResource(nil, &rec, rec.Address, c.in)
		if err != nil {
			return err
		}
		b := tx.Bucket(bucketResources)
		prior, err := priorRecord(b, key)
		if err != nil {
			return err
		}
		action := HistoryUpdate
		if prior == nil {
			action = HistoryCreate
			c.counts[cntResources]++
		}
		if err := putHistory(tx, c, r.Address, c.next(), action, "", prior); err != nil {
			return err
		}
		return b.Put(key, seal(key, data))
	}, nil
}

// Complete stores the result of the provider call journaled for addr and
// clears its intent in one commit. result != nil replaces addr's record
// (result.Address must be addr); nil removes addr, and an addr already gone
// is not an error.
//
// It does not wait for the commit (see the package doc): the write is
// queued, and it is durable once any write queued after it (the next
// PutIntent) returns, or Flush or Close does. Until then a crash leaves
// addr's intent in the journal, as a crash during the provider call does.
// An error storing it is returned by the next PutIntent, Flush and Close.
func (s *BoltStore) Complete(addr string, result *Resource) error {
	if err := checkAddress(addr); err != nil {
		return err
	}
	key := []byte(addr)
	var write opFunc
	if result != nil {
		if result.Address != addr {
			return fmt.Errorf("%w: Complete(%s) got a record for %s", ErrInvalid, addr, result.Address)
		}
		fn, err := putResourceOp(result)
		if err != nil {
			return err
		}
		write = fn
	} else {
		del := deleteResourceOp(addr)
		write = func(tx *bolt.Tx, c *commitCtx) error {
			if tx.Bucket(bucketResources).Get(key) == nil {
				return nil
			}
			return del(tx, c)
		}
	}
	return s.submitDeferred(addr, recordSize(result), func(tx *bolt.Tx, c *commitCtx) error {
		if err := write(tx, c); err != nil {
			return err
		}
		return deleteIntent(tx, c, key)
	})
}

func deleteIntent(tx *bolt.Tx, c *commitCtx, key []byte) error {
	j := tx.Bucket(bucketJournal)
	if j.Get(key) == nil {
		return nil
	}
	c.counts[cntJournal]--
	return j.Delete(key)
}

// recordSize is about how many bytes storing r writes (0 for nil, a
// delete), for maxBatchBytes.
func recordSize(r *Resource) int {
	if r == nil {
		return 0
	}
	return len(r.Address) + len(r.Node) + len(r.Value) + len(r.ValueType) + len(r.Private)
}

// DeleteResource removes addr from state (history keeps the record). An
// address not in state is an error wrapping ErrResourceNotFound.
func (s *BoltStore) DeleteResource(addr string) error {
	if err := checkAddress(addr); err != nil {
		return err
	}
	return s.submit(deleteResourceOp(addr))
}

func deleteResourceOp(addr string) opFunc {
	key := []byte(addr)
	return func(tx *bolt.Tx, c *commitCtx) error {
		b := tx.Bucket(bucketResources)
		prior, err := priorRecord(b, key)
		if err != nil {
			return err
		}
		if prior == nil {
			return fmt.Errorf("%w: %s", ErrResourceNotFound, addr)
		}
		if err := putHistory(tx, c, addr, c.next(), HistoryDelete, "", prior); err != nil {
			return err
		}
		c.counts[cntResources]--
		return b.Delete(key)
	}
}

// MoveResource renames an instance (`state mv`): from must exist, to must
// not. Both addresses get a history entry at the same serial.
func (s *BoltStore) MoveResource(from, to string) error {
	if err := checkAddress(from); err != nil {
		return err
	}
	if err := checkAddress(to); err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("%w: cannot move %s onto itself", ErrInvalid, from)
	}
	fk, tk := []byte(from), []byte(to)
	return s.submit(func(tx *bolt.Tx, c *commitCtx) error {
		b := tx.Bucket(bucketResources)
		prior, err := priorRecord(b, fk)
		if err != nil {
			return err
		}
		if prior == nil {
			return fmt.Errorf("%w: %s (nothing to move)", ErrResourceNotFound, from)
		}
		if b.Get(tk) != nil {
			return fmt.Errorf("%w: %s; remove it first or pick another address", ErrResourceExists, to)
		}
		r, err := decodeResource(prior, from, newStrs(tx))
		if err != nil {
			return err
		}
		if err := CheckMove(r, to); err != nil {
			return err
		}
		r.Address, r.UpdatedAt = to, c.now
		data, err := appendResource(nil, r, to, c.in)
		if err != nil {
			return err
		}
		serial := c.next()
		if err := putHistory(tx, c, from, serial, HistoryMoveOut, to, prior); err != nil {
			return err
		}
		if err := putHistory(tx, c, to, serial, HistoryMoveIn, from, nil); err != nil {
			return err
		}
		if err := b.Put(tk, seal(tk, data)); err != nil {
			return err
		}
		return b.Delete(fk)
	})
}

// CheckMove refuses moving r to an address of another resource type: a
// move renames an object; it cannot turn it into another kind (the record
// keeps its type, provider and value, and show would print the old type).
// Every backend's MoveResource calls it.
func CheckMove(r *Resource, to string) error {
	from, t := typeOfAddress(r.Address), typeOfAddress(to)
	if t != from {
		return fmt.Errorf("%w: %s is a %s; %s names a %s. A move only renames an object and cannot change its type: "+
			"to manage it as another type, remove it from state (state rm) and import it as that type", ErrInvalid, r.Address, from, to, t)
	}
	return nil
}

// typeOfAddress is the resource type of an instance address, after any
// module.NAME[KEY] steps (keys are HCL strings and may hold dots and
// brackets, so quoted text is skipped).
func typeOfAddress(addr string) string {
	for strings.HasPrefix(addr, "module.") {
		i := len("module.")
		for i < len(addr) && addr[i] != '.' && addr[i] != '[' {
			i++
		}
		if i < len(addr) && addr[i] == '[' {
			inStr := false
			for ; i < len(addr); i++ {
				c := addr[i]
				if inStr && c == '\\' {
					i++
					continue
				}
				if c == '"' {
					inStr = !inStr
				}
				if !inStr && c == ']' {
					i++
					break
				}
			}
		}
		if i >= len(addr) || addr[i] != '.' {
			return addr
		}
		addr = addr[i+1:]
	}
	t, _, _ := strings.Cut(addr, ".")
	return t
}

// PutIntent journals in before a provider call; it returns once durable,
// and with it every Complete queued before it. It fails, and journals
// nothing, once a queued Complete could not be stored: no provider call
// starts after a result that state does not hold (its dependents' would).
// Started and PID default to now and this process.
func (s *BoltStore) PutIntent(in *Intent) error {
	if in == nil {
		return fmt.Errorf("%w: nil intent", ErrInvalid)
	}
	if err := checkAddress(in.Address); err != nil {
		return err
	}
	if in.Action == "" {
		return fmt.Errorf("%w: intent for %s has no action", ErrInvalid, in.Address)
	}
	rec := *in
	if rec.Started.IsZero() {
		rec.Started = time.Now().UTC()
	}
	if rec.PID == 0 {
		rec.PID = os.Getpid()
	}
	if rec.Resource != nil {
		if err := checkResource(rec.Resource); err != nil {
			return err
		}
	}
	key := []byte(in.Address)
	return s.submit(func(tx *bolt.Tx, c *commitCtx) error {
		// Checked in the transaction: a Complete queued before this intent
		// has failed by now if it failed at all (same or earlier batch).
		if err := s.deferredError(); err != nil {
			return err
		}
		data, err := appendIntent(nil, &rec, c.in)
		if err != nil {
			return err
		}
		j := tx.Bucket(bucketJournal)
		if j.Get(key) == nil {
			c.counts[cntJournal]++
		}
		return j.Put(key, seal(key, data))
	})
}

// DeleteIntent clears the journal record of addr (no error when absent).
func (s *BoltStore) DeleteIntent(addr string) error {
	if err := checkAddress(addr); err != nil {
		return err
	}
	key := []byte(addr)
	return s.submit(func(tx *bolt.Tx, c *commitCtx) error {
		return deleteIntent(tx, c, key)
	})
}

// historyPrefix: addresses hold no NUL (checkAddress), so addr+NUL never
// prefixes another address's keys; the big-endian serial keeps them ordered.
func historyPrefix(addr string) []byte { return append([]byte(addr), 0) }

func putHistory(tx *bolt.Tx, c *commitCtx, addr string, serial uint64, action, peer string, prior []byte) error {
	data := encodeHistory(c.now, action, peer, prior) // copies prior before the key is overwritten
	hb := tx.Bucket(bucketHistory)
	prefix := historyPrefix(addr)
	key := binary.BigEndian.AppendUint64(bytes.Clone(prefix), serial)
	if hb.Get(key) == nil {
		c.counts[cntHistory]++
	}
	if err := hb.Put(key, seal(key, data)); err != nil {
		return err
	}
	// Bound the history: O(HistoryLimit) per write, independent of N.
	var keys [][]byte
	cur := hb.Cursor()
	for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
		keys = append(keys, bytes.Clone(k)) // cloned: deletes below change the pages
	}
	for _, k := range keys[:max(len(keys)-HistoryLimit, 0)] {
		if err := hb.Delete(k); err != nil {
			return err
		}
		c.counts[cntHistory]--
	}
	return nil
}

// priorRecord is the record stored under key in b, unsealed (nil when
// there is none). Writers run on sealed files only (Open upgrades), and a
// record that fails its checksum stops the write: copied into history or
// moved, it would pass for a good one.
func priorRecord(b *bolt.Bucket, key []byte) ([]byte, error) {
	v := b.Get(key)
	if v == nil {
		return nil, nil
	}
	return unseal(key, v)
}
