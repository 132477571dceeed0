// This file holds the bound on concurrent provider calls shared by one
// walk or refresh.

package engine

import (
	"context"
	"sync"
)

// limiter bounds concurrent provider calls across the whole walk.
type limiter chan struct{}

// localParallelism bounds the provider calls in flight of types whose
// calls reach no node (sdk.ResourceSchema.LocalPlan, LocalApply): the
// instances a plugin session's message carries at most (sdk's
// muxMaxItems). Engine.Parallelism bounds work on nodes; held to it, a
// 10,000-instance no-op plan of sparkform_data sent ~3 plan items a
// message, and its apply made one state commit per ~10 intents.
const localParallelism = 256

// localLimiter returns a limiter for calls that reach no node: wider than
// the engine's parallelism, never narrower.
func (e *Engine) localLimiter() limiter {
	return make(limiter, max(e.parallelism, localParallelism))
}

// walkWidth is how many graph vertices a walk keeps in flight: every
// call the node limiter admits, and walkParallelism more (a vertex
// waiting for a slot holds its place, so without them work that reaches
// no node would wait behind it). Not the local limiter's full width: in
// a config of single-instance blocks each vertex is one instance, and a
// 10,000-block apply with 266 in flight took ~25 MiB more peak RSS than
// with 74 for no less CPU (the commits share ~64 intents either way).
func (e *Engine) walkWidth() int {
	return e.parallelism + walkParallelism
}

func (l limiter) do(ctx context.Context, fn func()) error {
	// Checked first: select picks at random when a slot is free too, and
	// nothing new may start once the user has interrupted.
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case l <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l }()
	fn()
	return nil
}

// gate bounds provider calls: a limiter (calls, whatever node) or a
// nodeLimiter (nodes in flight). key is the node a call reaches
// (sdk.Node.Key); a limiter ignores it.
type gate interface {
	run(ctx context.Context, key string, fn func()) error
	// workers is how many callers of forEachParallel may wait on it.
	workers() int
}

var (
	_ gate = limiter(nil)
	_ gate = (*nodeLimiter)(nil)
)

func (l limiter) run(ctx context.Context, _ string, fn func()) error { return l.do(ctx, fn) }
func (l limiter) workers() int                                       { return cap(l) }

// nodeLimiter bounds the nodes that have provider calls in flight: that
// is what -parallelism counts. A call on a node that already has one in
// flight joins it (they share its one connection), up to perNode calls
// on one node; a call on another node waits for one of the slots. Held
// to calls instead, a fleet's refresh (a provider per node per read) and
// walks ran one node's calls in as many waves as other nodes' calls took
// slots: 32 nodes of two providers each read in 7 waves of 10 calls.
type nodeLimiter struct {
	max, perNode int

	mu      sync.Mutex
	busy    map[string]*nodeSlot
	changed chan struct{} // closed (and replaced) when a node enters or leaves
}

// nodeSlot is one node's place in a nodeLimiter.
type nodeSlot struct {
	users int           // callers holding or waiting on calls
	calls chan struct{} // calls in flight on the node
}

// newNodeLimiter admits n nodes at once, each with up to n calls (as
// many as the engine ran on one node before it counted nodes).
func newNodeLimiter(n int) *nodeLimiter {
	return &nodeLimiter{max: n, perNode: n, busy: map[string]*nodeSlot{}, changed: make(chan struct{})}
}

func (l *nodeLimiter) workers() int { return l.max * l.perNode }

func (l *nodeLimiter) run(ctx context.Context, key string, fn func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s, err := l.enter(ctx, key)
	if err != nil {
		return err
	}
	defer l.leave(key, s)
	select {
	case s.calls <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.calls }()
	fn()
	return nil
}

// enter joins key's slot, or takes a free one when the node has none. A
// caller that waits looks again whenever a node enters or leaves, so a
// call on a node that another caller brings in joins it at once instead
// of waiting for a slot of its own.
func (l *nodeLimiter) enter(ctx context.Context, key string) (*nodeSlot, error) {
	for {
		l.mu.Lock()
		if s := l.busy[key]; s != nil {
			s.users++
			l.mu.Unlock()
			return s, nil
		}
		if len(l.busy) < l.max {
			s := &nodeSlot{users: 1, calls: make(chan struct{}, l.perNode)}
			l.busy[key] = s
			l.broadcast()
			l.mu.Unlock()
			return s, nil
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// leave gives key's slot back when its last caller is done.
func (l *nodeLimiter) leave(key string, s *nodeSlot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s.users--; s.users == 0 {
		delete(l.busy, key)
		l.broadcast()
	}
}

// broadcast wakes every waiting caller; l.mu is held.
func (l *nodeLimiter) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// forEachParallel runs fn(i) for i in [0,n) through g (key(i): the node
// fn(i) reaches), returning the first context error. fn must be safe to
// call concurrently.
func forEachParallel(ctx context.Context, g gate, n int, key func(i int) string, fn func(i int)) error {
	if n == 1 {
		return g.run(ctx, key(0), func() { fn(0) })
	}
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	workers := min(g.workers(), n)
	if workers < 1 {
		workers = 1
	}
	next := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				if err := g.run(ctx, key(i), func() { fn(i) }); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}
