package engine

import (
	"context"
	"sync"
	"testing"

	"github.com/sparkform/sparkform/providers/sdk"
)

// countingProvider counts ReadResources calls and the instances in each,
// per node, on top of a real gRPC provider.
type countingProvider struct {
	sdk.Provider
	mu    sync.Mutex
	calls map[string]int // node key -> ReadResources calls
	items map[string]int // node key -> instances read
}

func (c *countingProvider) ReadResources(ctx context.Context, req sdk.ReadRequest) sdk.ReadResponse {
	c.mu.Lock()
	c.calls[req.Node.Key()]++
	c.items[req.Node.Key()] += len(req.Resources)
	c.mu.Unlock()
	return c.Provider.ReadResources(ctx, req)
}

func (c *countingProvider) reset() {
	c.mu.Lock()
	c.calls, c.items = map[string]int{}, map[string]int{}
	c.mu.Unlock()
}

// TestRefreshCostIndependentOfN: refresh is one ReadResources call per
// provider per node, carrying every instance of that provider on that
// node, whether the configuration has 10 or 500 instances per resource.
func TestRefreshCostIndependentOfN(t *testing.T) {
	b := newBed(t)
	counters := map[string]*countingProvider{}
	for name, p := range b.provs.provs {
		c := &countingProvider{Provider: p}
		c.reset()
		counters[name] = c
		b.provs.provs[name] = c
	}
	for _, n := range []string{"10", "500"} {
		r := b.cfg("scale", "n="+n)
		r.apply(r.plan(PlanOptions{}))
		for _, c := range counters {
			c.reset()
		}
		p := r.plan(PlanOptions{})
		if p.HasChanges() {
			t.Fatalf("n=%s: plan after apply has changes: %v", n, actions(p))
		}
		want := map[string]int{"sparkform": 2, "sftest": 2} // 1 call per provider per node
		perNode := atoi(t, n)                               // one resource of each provider per node
		for name, c := range counters {
			if len(c.calls) != 2 {
				t.Errorf("n=%s: provider %s was read on %d nodes, want 2: %v", n, name, len(c.calls), c.calls)
			}
			total := 0
			for node, calls := range c.calls {
				total += calls
				if calls != 1 {
					t.Errorf("n=%s: provider %s: %d ReadResources calls for node %s, want 1", n, name, calls, node)
				}
				if c.items[node] != perNode {
					t.Errorf("n=%s: provider %s: node %s read %d instances, want all %d in its one call", n, name, node, c.items[node], perNode)
				}
			}
			if total != want[name] {
				t.Errorf("n=%s: provider %s: %d ReadResources calls in all, want %d (providers x nodes)", n, name, total, want[name])
			}
		}
	}
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
