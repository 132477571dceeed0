package engine

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkFleetRead is a fleet's refresh as the limiter schedules it:
// 32 nodes, two providers' reads on each (64 calls), each call a 5 ms
// wait, the latency of one remote round trip on a node with CPUs of its
// own (not this machine's). "calls" holds -parallelism 10 to calls (the
// engine before issue 32: 7 waves), "nodes" to nodes in flight (each
// node's two reads together: 4 waves).
func BenchmarkFleetRead(b *testing.B) {
	const nodes, perNode, par = 32, 2, 10
	key := func(i int) string { return "node" + strconv.Itoa(i%nodes) }
	read := func(int) { time.Sleep(5 * time.Millisecond) }
	for _, tc := range []struct {
		name string
		g    func() gate
	}{
		{"calls", func() gate { return make(limiter, par) }},
		{"nodes", func() gate { return newNodeLimiter(par) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				if err := forEachParallel(context.Background(), tc.g(), nodes*perNode, key, read); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
