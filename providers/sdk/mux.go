package sdk

import (
	"context"
	"errors"
	"io"
	"runtime"
	"sync"
)

// Plans and applies travel over sessions: one bidirectional stream per
// provider and kind of call, opened on first use and kept for the life of
// the connection. Every call is an item with an id; the plugin runs each
// item as it arrives, concurrently, and answers with its id the moment it
// has an answer. Neither side waits to fill a batch: a message carries
// what is ready when the previous message has been handed to the
// transport (group commit), so concurrent calls share messages and a
// lone call goes at once. A call therefore costs no stream set-up, no
// headers and no handler goroutine of gRPC's; what is left per instance is
// its values' encoding and one goroutine in the plugin.

// Bounds on one message of a session: a batch never exceeds them unless
// a single item does (MaxMessageSize is the hard limit).
const (
	muxMaxItems = 256
	muxMaxBytes = 16 << 20
)

// muxItem is one call's request or event, with the call's id.
type muxItem[T any] struct {
	id uint64
	v  T
}

// muxStream is one open session as the client sees it.
type muxStream[Q, E any] interface {
	send(items []muxItem[Q], cancels []uint64) error
	// recv returns the events of the next message.
	recv() ([]muxItem[E], error)
}

// clientMux carries calls of one kind (requests Q, events E) over a
// session, opening a new one when the last has failed.
type clientMux[Q, E any] struct {
	open  func(ctx context.Context) (muxStream[Q, E], error)
	final func(E) bool // the event ends its call
	size  func(Q) int  // roughly, the bytes of a request

	mu   sync.Mutex
	next uint64
	cur  *muxSession[Q, E]
}

type muxSession[Q, E any] struct {
	m       *clientMux[Q, E]
	stream  muxStream[Q, E]
	cancel  context.CancelFunc
	dead    bool
	calls   map[uint64]*muxCall[E]
	queue   []muxItem[Q]
	cancels []uint64
	sending bool
}

// muxCall is one call waiting for its events.
type muxCall[E any] struct {
	mu   sync.Mutex
	evs  []E
	err  error
	done bool
	wake chan struct{}
}

func (c *muxCall[E]) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *muxCall[E]) push(evs []E, final bool) {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return
	}
	c.evs = append(c.evs, evs...)
	c.done = final
	c.mu.Unlock()
	c.signal()
}

func (c *muxCall[E]) fail(err error) {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return
	}
	c.err, c.done = err, true
	c.mu.Unlock()
	c.signal()
}

func (c *muxCall[E]) take() ([]E, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	evs := c.evs
	c.evs = nil
	return evs, c.done, c.err
}

// session returns the open session, opening one if need be. Called with
// m.mu held; ctx bounds only the opening.
func (m *clientMux[Q, E]) session(ctx context.Context) (*muxSession[Q, E], error) {
	if m.cur != nil {
		return m.cur, nil
	}
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel) // a caller that gives up stops the opening
	st, err := m.open(sctx)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			err = context.Cause(ctx)
		}
		return nil, err
	}
	s := &muxSession[Q, E]{m: m, stream: st, cancel: cancel, calls: map[uint64]*muxCall[E]{}}
	m.cur = s
	go s.read()
	return s, nil
}

// call sends req and hands each of its events to on, in order, in the
// caller's goroutine, until the final one. A transport failure or ctx
// ending first returns an error; ctx ending also cancels the call in the
// plugin.
func (m *clientMux[Q, E]) call(ctx context.Context, req Q, on func(E)) error {
	c := &muxCall[E]{wake: make(chan struct{}, 1)}
	m.mu.Lock()
	s, err := m.session(ctx)
	if err != nil {
		m.mu.Unlock()
		return err
	}
	m.next++
	id := m.next
	s.calls[id] = c
	s.queue = append(s.queue, muxItem[Q]{id, req})
	lead := s.lead()
	m.mu.Unlock()
	if lead {
		s.flush()
	}
	for {
		select {
		case <-c.wake:
		case <-ctx.Done():
			m.mu.Lock()
			if _, waiting := s.calls[id]; waiting {
				delete(s.calls, id)
				lead := false
				if !s.dead {
					s.cancels = append(s.cancels, id)
					lead = s.lead()
				}
				m.mu.Unlock()
				if lead {
					s.flush()
				}
				return context.Cause(ctx)
			}
			m.mu.Unlock()
			// Its last event is in (or the session failed): deliver it.
			for {
				evs, done, err := c.take()
				for _, ev := range evs {
					on(ev)
				}
				if done {
					return err
				}
				<-c.wake
			}
		}
		evs, done, err := c.take()
		for _, ev := range evs {
			on(ev)
		}
		if done {
			return err
		}
	}
}

// lead reports whether the caller is to send what is queued (nobody is
// sending), and marks the session as being sent on. m.mu held.
func (s *muxSession[Q, E]) lead() bool {
	if s.sending {
		return false
	}
	s.sending = true
	return true
}

// flush sends what is queued, in messages of what has gathered meanwhile,
// until the queue is empty.
func (s *muxSession[Q, E]) flush() {
	m := s.m
	runtime.Gosched() // let calls that are ready join this message
	m.mu.Lock()
	for len(s.queue) > 0 || len(s.cancels) > 0 {
		n, bytes := 0, 0
		for n < len(s.queue) && n < muxMaxItems {
			bytes += m.size(s.queue[n].v)
			if n > 0 && bytes > muxMaxBytes {
				break
			}
			n++
		}
		items, cancels := s.queue[:n:n], s.cancels
		s.queue, s.cancels = s.queue[n:], nil
		if len(s.queue) == 0 {
			s.queue = nil
		}
		m.mu.Unlock()
		err := s.stream.send(items, cancels)
		m.mu.Lock()
		if err != nil && errors.Is(err, io.EOF) {
			// The stream is gone; the reader gets its real status (a
			// killed plugin, say) and fails every call with it. New calls
			// go to a new session.
			s.retire()
		} else if err != nil {
			// The message was refused (too large, say), which also ends
			// the stream: these calls fail with that reason, the reader
			// fails the rest.
			s.retire()
			var failed []*muxCall[E]
			for _, it := range items {
				if c := s.calls[it.id]; c != nil {
					delete(s.calls, it.id)
					failed = append(failed, c)
				}
			}
			m.mu.Unlock()
			for _, c := range failed {
				c.fail(err)
			}
			m.mu.Lock()
		}
	}
	s.sending = false
	m.mu.Unlock()
}

// retire stops new calls from joining s. m.mu held.
func (s *muxSession[Q, E]) retire() {
	if s.m.cur == s {
		s.m.cur = nil
	}
}

// read delivers events to their calls until the stream fails, then fails
// every call still waiting.
func (s *muxSession[Q, E]) read() {
	m := s.m
	var byCall []E
	for {
		evs, err := s.stream.recv()
		if err != nil {
			m.mu.Lock()
			s.retire()
			s.dead = true
			calls := s.calls
			s.calls = map[uint64]*muxCall[E]{}
			s.queue, s.cancels = nil, nil
			m.mu.Unlock()
			s.cancel()
			if errors.Is(err, io.EOF) {
				err = errors.New("the plugin ended the session")
			}
			for _, c := range calls {
				c.fail(err)
			}
			return
		}
		// Events of one call are delivered together, in order.
		for i := 0; i < len(evs); {
			id := evs[i].id
			byCall = byCall[:0]
			final := false
			j := i
			for ; j < len(evs) && evs[j].id == id; j++ {
				byCall = append(byCall, evs[j].v)
				final = final || m.final(evs[j].v)
			}
			i = j
			m.mu.Lock()
			c := s.calls[id]
			if final {
				delete(s.calls, id)
			}
			m.mu.Unlock()
			if c != nil {
				c.push(append([]E(nil), byCall...), final)
			}
		}
	}
}

// serverMux serves one session in the plugin: handle runs each item in a
// goroutine of its own, with a context that the session's end or the
// item's cancel message cancels; emit sends an event as soon as the
// session's sender is free.
type serverMux[Q, E any] struct {
	recv   func() ([]muxItem[Q], []uint64, error)
	send   func([]muxItem[E]) error
	handle func(ctx context.Context, req Q, emit func(E))
	size   func(E) int

	mu      sync.Mutex
	queue   []muxItem[E]
	sending bool
}

// serve runs the session until the engine closes it (the items in flight
// finish and are answered) or it breaks (they are cancelled).
func (m *serverMux[Q, E]) serve(ctx context.Context) error {
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	var mu sync.Mutex
	cancels := map[uint64]context.CancelFunc{}
	var wg sync.WaitGroup
	work := make(chan func())
	done := make(chan struct{})
	defer close(done)
	worker := func(job func()) {
		for {
			job()
			wg.Done()
			select {
			case job = <-work:
			case <-done:
				return
			}
		}
	}
	for {
		items, cc, err := m.recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				cancelAll()
			}
			wg.Wait()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		mu.Lock()
		for _, id := range cc {
			if c := cancels[id]; c != nil {
				c()
			}
		}
		for _, it := range items {
			ictx, cancel := context.WithCancel(ctx)
			cancels[it.id] = cancel
			job := func() {
				defer func() {
					mu.Lock()
					delete(cancels, it.id)
					mu.Unlock()
					cancel()
				}()
				m.handle(ictx, it.v, func(ev E) { m.emit(it.id, ev) })
			}
			// An idle worker takes the item; when none is idle, a new one
			// starts with it: every item runs at once, and workers keep
			// the stacks they grew (a new goroutine per item spent a
			// tenth of the plugin's time growing its stack).
			wg.Add(1)
			select {
			case work <- job:
			default:
				go worker(job)
			}
		}
		mu.Unlock()
	}
}

// emit queues an event and, when no one is sending, sends what is queued
// until the queue is empty. A failed send means the engine is gone; the
// session's context says so to the items still running.
func (m *serverMux[Q, E]) emit(id uint64, ev E) {
	m.mu.Lock()
	m.queue = append(m.queue, muxItem[E]{id, ev})
	if m.sending {
		m.mu.Unlock()
		return
	}
	m.sending = true
	m.mu.Unlock()
	runtime.Gosched() // let results that are ready join this message
	m.mu.Lock()
	for len(m.queue) > 0 {
		n, bytes := 0, 0
		for n < len(m.queue) && n < muxMaxItems {
			bytes += m.size(m.queue[n].v)
			if n > 0 && bytes > muxMaxBytes {
				break
			}
			n++
		}
		out := m.queue[:n:n]
		m.queue = m.queue[n:]
		if len(m.queue) == 0 {
			m.queue = nil
		}
		m.mu.Unlock()
		_ = m.send(out)
		m.mu.Lock()
	}
	m.sending = false
	m.mu.Unlock()
}
