package engine

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/internal/heaptest"
)

// TestWalkGraphVertices: a static block of one unkeyed instance is one
// vertex of the walk graph (it was two: the block's, gathering an
// instance vertex of the same address), and a keyed block is its vertex
// plus one per instance.
func TestWalkGraphVertices(t *testing.T) {
	for _, tc := range []struct {
		shape                  string
		n, vertices, instances int
	}{
		{"blocks", 100, 100 + 1, 100},     // 100 blocks, node.local
		{"count", 100, 10 + 100 + 1, 100}, // 10 blocks of 10, node.local
	} {
		t.Run(tc.shape, func(t *testing.T) {
			e, cg := staticGraph(t, tc.shape, tc.n)
			all := func(vertex) bool { return true }
			wg := cg.walkGraph(e.module, all, func(string) bool { return true })
			if got := wg.g.Len(); got != tc.vertices {
				t.Errorf("%d vertices, want %d", got, tc.vertices)
			}
			if got := len(wg.instances); got != tc.instances {
				t.Errorf("%d instances walked, want %d", got, tc.instances)
			}
		})
	}
}

// TestWalkGraphBytesPerVertex: what a walk graph of single-instance
// blocks takes per vertex. It kept a map from name to typed vertex beside
// the graph's own map from name to index (~150 B per vertex, 1.5 MB of a
// 10,000-block apply's live heap at its start); the typed vertices are a
// slice by index now.
func TestWalkGraphBytesPerVertex(t *testing.T) {
	e, cg := staticGraph(t, "blocks", 4000)
	all := func(vertex) bool { return true }
	wg := cg.walkGraph(e.module, all, func(string) bool { return true })
	vertices := wg.g.Len()
	per := heaptest.Held(vertices, func() { wg = nil })
	runtime.KeepAlive(cg)
	t.Logf("a walk graph takes %d B per vertex", per)
	// go1.26, amd64: 635 B with the map by name, 487 B with the slice.
	if per > 560 {
		t.Errorf("a walk graph takes %d B per vertex, want <= 560 (no map by name beside the graph's)", per)
	}
}

// TestDestroyStepsOneVertexPerSingleResource: a resource with one destroy
// step has no destroyall vertex; what waits for its deletes waits for the
// step itself. A resource with more keeps one.
func TestDestroyStepsOneVertexPerSingleResource(t *testing.T) {
	del := func(addr, res string, deps ...string) *plans.ResourceChange {
		return &plans.ResourceChange{Addr: addr, Resource: res, Type: "sparkform_data", Action: plans.Delete, Dependencies: deps}
	}
	ap := &applier{plan: &plans.Plan{Changes: []*plans.ResourceChange{
		del("sparkform_data.a", "sparkform_data.a"),
		del("sparkform_data.b[0]", "sparkform_data.b", "sparkform_data.a"),
		del("sparkform_data.b[1]", "sparkform_data.b", "sparkform_data.a"),
		del("sparkform_data.c", "sparkform_data.c", "sparkform_data.a"),
	}}}
	g := &walkGraph{vgraph: newVGraph(), instances: map[string]*instanceVertex{}}
	ap.addDestroySteps(g)
	if g.has(destroyAllV("sparkform_data.a")) || g.has(destroyAllV("sparkform_data.c")) {
		t.Errorf("a single-instance resource got a destroyall vertex: %v", g.g.Vertices())
	}
	if !g.has(destroyAllV("sparkform_data.b")) {
		t.Errorf("sparkform_data.b (2 deletes) has no destroyall vertex: %v", g.g.Vertices())
	}
	// a goes after what used it: c's step and b's destroyall.
	got := map[string]bool{}
	for _, d := range g.dependsOn(destroyV("sparkform_data.a")) {
		got[d.String()] = true
	}
	if len(got) != 2 || !got["destroy sparkform_data.c"] || !got["destroyall sparkform_data.b"] {
		t.Errorf("destroy of a waits for %v, want destroy sparkform_data.c and destroyall sparkform_data.b", got)
	}
	if got := g.g.Len(); got != 5 {
		t.Errorf("%d vertices, want 5 (4 destroys, 1 destroyall): %v", got, g.g.Vertices())
	}
}

// BenchmarkShapeLiveHeap reports the heap a plan of N creates keeps live
// while its result is held (the configuration, graphs, evaluator values
// and plan), per instance: the part of peak RSS that grows with N. Read it
// with -benchtime=1x.
func BenchmarkShapeLiveHeap(b *testing.B) {
	eachShape(b, func(b *testing.B, shape string, n int) {
		sr := newShapeRun(b, shape, n)
		var live uint64
		i := 0
		for b.Loop() {
			e, done := sr.engine(b, fmt.Sprint("live", i))
			i++
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			p := shapePlan(b, e)
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(p)
			live = after.HeapAlloc - before.HeapAlloc
			done()
		}
		b.ReportMetric(float64(live)/float64(n), "live-B/instance")
	})
}

// TestWalkGraphBuildAllocations: building the walk graph of the count
// shape takes a bounded number of allocations per instance; an instance's
// vertex name is built once for all its edges (each edge built it again).
func TestWalkGraphBuildAllocations(t *testing.T) {
	const n = 1000
	e, cg := staticGraph(t, "count", n)
	all := func(vertex) bool { return true }
	allInstances := func(string) bool { return true }
	per := testing.AllocsPerRun(5, func() { cg.walkGraph(e.module, all, allInstances) }) / n
	t.Logf("walkGraph: %.2f allocations per instance", per)
	if per > 11 {
		t.Errorf("building the walk graph allocates %.2f objects per instance, want <= 11 (it was 12.7 with an instance's name built per edge)", per)
	}
}
