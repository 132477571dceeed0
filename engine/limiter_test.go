package engine

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// -parallelism counts nodes in flight: with 2, calls on at most 2 nodes
// run at once, each node with up to 2 calls (a second call on a node
// joins it), and every call runs.
func TestNodeLimiterBoundsNodesInFlight(t *testing.T) {
	const par, nodes, perNode = 2, 6, 3
	lim := newNodeLimiter(par)
	var mu sync.Mutex
	inflight := map[string]int{}
	calls, maxCalls, maxNodes, maxOnNode, ran := 0, 0, 0, 0, 0
	release := make(chan struct{})
	key := func(i int) string { return "node" + strconv.Itoa(i/perNode) }
	done := make(chan error, 1)
	go func() {
		done <- forEachParallel(context.Background(), lim, nodes*perNode, key, func(i int) {
			k := key(i)
			mu.Lock()
			inflight[k]++
			calls++
			maxCalls = max(maxCalls, calls)
			maxNodes = max(maxNodes, len(inflight))
			maxOnNode = max(maxOnNode, inflight[k])
			mu.Unlock()
			<-release
			mu.Lock()
			if inflight[k]--; inflight[k] == 0 {
				delete(inflight, k)
			}
			calls--
			ran++
			mu.Unlock()
		})
	}()
	// The first workers hold node0 (two calls, the third waits) and node1.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		c := calls
		mu.Unlock()
		if c == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls in flight never reached 3 (got %d): a second call on a node does not join it", c)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ran != nodes*perNode {
		t.Errorf("%d calls ran, want %d", ran, nodes*perNode)
	}
	if maxNodes > par {
		t.Errorf("%d nodes had calls in flight at once, -parallelism is %d", maxNodes, par)
	}
	if maxOnNode > par {
		t.Errorf("%d calls in flight on one node, want at most %d", maxOnNode, par)
	}
	if maxCalls <= par {
		t.Errorf("at most %d calls in flight: nodes in flight were counted as calls", maxCalls)
	}
}

// A cancelled context lets no new call start, and a waiting caller
// leaves without taking a slot.
func TestNodeLimiterCancelled(t *testing.T) {
	lim := newNodeLimiter(1)
	hold := make(chan struct{})
	started := make(chan struct{})
	go func() { _ = lim.run(context.Background(), "a", func() { close(started); <-hold }) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- lim.run(ctx, "b", func() { t.Error("ran on a second node with -parallelism 1") }) }()
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("a cancelled wait returned no error")
	}
	close(hold)
	if err := lim.run(context.Background(), "b", func() {}); err != nil {
		t.Fatal(err)
	}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if len(lim.busy) != 0 {
		t.Errorf("slots left taken: %v", lim.busy)
	}
}
