package groupcommit

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Config is what a Loop is built from. Run is required; every other zero
// value is documented.
type Config[T any] struct {
	// Run commits one batch, in order: it calls done(i, err) exactly once
	// for each of ops before it returns (err nil: ops[i] is durable).
	Run func(ops []T, done func(i int, err error))
	// MaxOps bounds a batch. Zero: 1,000.
	MaxOps int
	// MaxBytes: no operation joins a batch that already holds this many
	// bytes (as Size counts them). Zero: no bound.
	MaxBytes int
	// Size is about the bytes an operation writes. Nil: 0.
	Size func(T) int
	// Linger is how long a batch waits for writers that waited in the
	// previous batch to come back (in an apply, after their next provider
	// call). Zero: it does not wait.
	Linger time.Duration
	// DeferLinger is how long a batch of deferred operations alone waits
	// for more. Zero: it does not wait.
	DeferLinger time.Duration
	// Idle, when set, is called once the queue has stayed empty for
	// IdleAfter after a batch (a backend lets go of a file handle kept
	// open between batches).
	Idle      func()
	IdleAfter time.Duration
	// Stop, when set, is called when the loop ends, after the last batch.
	Stop func()
	// Closed is returned by Submit and SubmitDeferred after Close. Nil:
	// ErrClosed.
	Closed error
	// QueueLen is the queue's buffer. Zero: 1,024.
	QueueLen int
}

// ErrClosed is Config.Closed's default.
var ErrClosed = errors.New("groupcommit: closed")

// item is one queued operation. done is nil for a deferred one (no one
// waits: its error goes to the Loop's deferred error); marker items carry
// no operation (Flush).
type item[T any] struct {
	op     T
	marker bool
	done   chan error
	label  string // a deferred operation's, for its error
}

// Loop is one running group commit (Start).
type Loop[T any] struct {
	cfg Config[T]

	qmu    sync.RWMutex
	closed bool
	queue  chan *item[T]
	ended  chan struct{}

	commits     atomic.Uint64 // batches run
	waiting     atomic.Int64  // writers blocked in Submit
	lastWaiting atomic.Int64  // waiting, sampled after the last batch
	pending     atomic.Int64  // deferred operations queued, not yet done

	errMu          sync.Mutex
	deferredErr    error
	deferredFailed int
}

// Start starts the loop's goroutine.
func Start[T any](cfg Config[T]) *Loop[T] {
	if cfg.MaxOps <= 0 {
		cfg.MaxOps = 1000
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = 1024
	}
	if cfg.Closed == nil {
		cfg.Closed = ErrClosed
	}
	l := &Loop[T]{cfg: cfg, queue: make(chan *item[T], cfg.QueueLen), ended: make(chan struct{})}
	go l.run()
	return l
}

// Submit queues op and waits until its batch is committed or failed.
func (l *Loop[T]) Submit(op T) error {
	it := &item[T]{op: op, done: make(chan error, 1)}
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	if err := l.enqueue(it); err != nil {
		return err
	}
	return <-it.done
}

// SubmitDeferred queues op without waiting. Its error, if it fails, is
// kept as "storing the result of LABEL: ..." for DeferredErr, Flush and
// the caller's Close.
func (l *Loop[T]) SubmitDeferred(op T, label string) error {
	l.pending.Add(1)
	if err := l.enqueue(&item[T]{op: op, label: label}); err != nil {
		l.pending.Add(-1)
		return err
	}
	return nil
}

// Pending reports whether deferred operations are queued and not done.
func (l *Loop[T]) Pending() bool { return l.pending.Load() > 0 }

// Commits is how many batches the loop ran.
func (l *Loop[T]) Commits() uint64 { return l.commits.Load() }

// Closed reports whether Close was called.
func (l *Loop[T]) Closed() bool {
	l.qmu.RLock()
	defer l.qmu.RUnlock()
	return l.closed
}

func (l *Loop[T]) enqueue(it *item[T]) error {
	l.qmu.RLock()
	defer l.qmu.RUnlock()
	if l.closed {
		return l.cfg.Closed
	}
	l.queue <- it
	return nil
}

// Flush waits until every operation queued before it is done and returns
// the first deferred error (DeferredErr).
func (l *Loop[T]) Flush() error {
	if l.Pending() {
		// A marker behind them: done when everything before it is.
		it := &item[T]{marker: true, done: make(chan error, 1)}
		if err := l.enqueue(it); err != nil {
			if !errors.Is(err, l.cfg.Closed) {
				return errors.Join(l.DeferredErr(), err)
			}
		} else {
			<-it.done
		}
	}
	return l.DeferredErr()
}

// DeferredErr is the first deferred operation that failed (with how many
// more did), nil if none did.
func (l *Loop[T]) DeferredErr() error {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	if l.deferredFailed > 1 {
		return fmt.Errorf("%w (and %d more results)", l.deferredErr, l.deferredFailed-1)
	}
	return l.deferredErr
}

// Close stops taking operations, waits until the loop has run every one
// queued and Stop has returned. It reports whether this call closed the
// loop (false: it was closed already).
func (l *Loop[T]) Close() bool {
	l.qmu.Lock()
	if l.closed {
		l.qmu.Unlock()
		<-l.ended
		return false
	}
	l.closed = true
	close(l.queue)
	l.qmu.Unlock()
	<-l.ended
	return true
}

// finish reports it's outcome: to its waiter, or into the deferred error.
func (l *Loop[T]) finish(it *item[T], err error) {
	if it.done != nil {
		it.done <- err
		return
	}
	if err != nil {
		l.errMu.Lock()
		if l.deferredErr == nil {
			l.deferredErr = fmt.Errorf("storing the result of %s: %w", it.label, err)
		}
		l.deferredFailed++
		l.errMu.Unlock()
	}
	l.pending.Add(-1)
}

// batch is the items of one group commit.
type batch[T any] struct {
	items  []*item[T]
	bytes  int
	waited int // items someone waits for
}

func (l *Loop[T]) add(b *batch[T], it *item[T]) {
	b.items = append(b.items, it)
	if !it.marker && l.cfg.Size != nil {
		b.bytes += l.cfg.Size(it.op)
	}
	if it.done != nil {
		b.waited++
	}
}

func (l *Loop[T]) full(b *batch[T]) bool {
	return len(b.items) >= l.cfg.MaxOps || (l.cfg.MaxBytes > 0 && b.bytes >= l.cfg.MaxBytes)
}

func (l *Loop[T]) run() {
	defer close(l.ended)
	if l.cfg.Stop != nil {
		defer l.cfg.Stop() // before ended is closed
	}
	var idle *time.Timer
	if l.cfg.Idle != nil {
		idle = time.NewTimer(l.cfg.IdleAfter)
		defer idle.Stop()
	}
	busy := false // a batch ran since the last Idle
	for {
		var first *item[T]
		ok := true
		if busy && idle != nil {
			idle.Reset(l.cfg.IdleAfter)
			select {
			case first, ok = <-l.queue:
			case <-idle.C:
				l.cfg.Idle()
				busy = false
				first, ok = <-l.queue
			}
		} else {
			first, ok = <-l.queue
		}
		if !ok {
			return
		}
		b := &batch[T]{}
		l.add(b, first)
	fill:
		for !l.full(b) {
			select {
			case it, ok := <-l.queue:
				if !ok {
					break fill
				}
				l.add(b, it)
			default:
				break fill
			}
		}
		// Deferred operations alone (no one waits for them) wait for more.
		if b.waited == 0 && l.cfg.DeferLinger > 0 {
			l.gather(b, l.cfg.DeferLinger, func() bool { return b.waited > 0 })
		}
		// Writers released by the previous batch re-submit within
		// microseconds; without this wait they would miss the batch that
		// starts at once and two half-size batches would alternate. Only
		// writers that wait count.
		if want := int(l.lastWaiting.Load()); l.cfg.Linger > 0 && b.waited < want {
			l.gather(b, l.cfg.Linger, func() bool { return b.waited >= want })
		}
		l.runBatch(b)
		busy = true
	}
}

// gather adds queued items to b until it is full, enough is true, the
// queue closes or d has passed.
func (l *Loop[T]) gather(b *batch[T], d time.Duration, enough func() bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for !l.full(b) && !enough() {
		select {
		case it, ok := <-l.queue:
			if !ok {
				return
			}
			l.add(b, it)
		case <-timer.C:
			return
		}
	}
}

// runBatch hands b's operations to Run and their outcomes to their
// writers; markers are done once everything before them is.
func (l *Loop[T]) runBatch(b *batch[T]) {
	ops := make([]T, 0, len(b.items))
	idx := make([]*item[T], 0, len(b.items))
	var markers []*item[T]
	for _, it := range b.items {
		if it.marker {
			markers = append(markers, it)
			continue
		}
		ops = append(ops, it.op)
		idx = append(idx, it)
	}
	if len(ops) > 0 {
		reported := make([]bool, len(ops))
		l.cfg.Run(ops, func(i int, err error) {
			if reported[i] {
				panic(fmt.Sprintf("groupcommit: operation %d reported twice", i))
			}
			reported[i] = true
			l.finish(idx[i], err)
		})
		for i, r := range reported {
			if !r {
				l.finish(idx[i], errors.New("groupcommit: Run did not report this operation"))
			}
		}
		l.commits.Add(1)
	}
	// Everyone blocked in Submit now (this batch and the queue) is the
	// concurrency the next batch can expect.
	l.lastWaiting.Store(l.waiting.Load())
	for _, m := range markers {
		m.done <- nil
	}
}
