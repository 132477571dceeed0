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

// forEachParallel runs fn(i) for i in [0,n) through lim, returning the
// first context error. fn must be safe to call concurrently.
func forEachParallel(ctx context.Context, lim limiter, n int, fn func(i int)) error {
	if n == 1 {
		return lim.do(ctx, func() { fn(0) })
	}
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	workers := cap(lim)
	if workers > n {
		workers = n
	}
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
				if err := lim.do(ctx, func() { fn(i) }); err != nil {
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
