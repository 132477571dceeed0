package graph

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// ErrUpstreamFailed is the result of a vertex skipped because something it
// depends on failed.
var ErrUpstreamFailed = errors.New("skipped: a dependency failed")

// Graph is a set of vertices and dependency edges. It is not safe for
// concurrent mutation; Walk may be called once the graph is built.
type Graph struct {
	index map[string]int
	names []string
	deps  [][]int // deps[i]: vertices i depends on
	users [][]int // users[i]: vertices that depend on i
}

// New returns an empty graph.
func New() *Graph { return NewSized(0) }

// NewSized returns an empty graph with room for n vertices, so that
// building one of known size does not grow its tables.
func NewSized(n int) *Graph {
	return &Graph{index: make(map[string]int, n), names: make([]string, 0, n), deps: make([][]int, 0, n),
		users: make([][]int, 0, n)}
}

// Add adds v (no-op when present) and returns its index.
func (g *Graph) Add(v string) int {
	if i, ok := g.index[v]; ok {
		return i
	}
	i := len(g.names)
	g.index[v] = i
	g.names = append(g.names, v)
	g.deps = append(g.deps, nil)
	g.users = append(g.users, nil)
	return i
}

// Index is v's index (Add's), and whether v is a vertex.
func (g *Graph) Index(v string) (int, bool) { i, ok := g.index[v]; return i, ok }

// Has reports whether v is a vertex.
func (g *Graph) Has(v string) bool { _, ok := g.index[v]; return ok }

// Len is the number of vertices.
func (g *Graph) Len() int { return len(g.names) }

// Vertices returns every vertex in insertion order.
func (g *Graph) Vertices() []string { return append([]string(nil), g.names...) }

// Connect records that v depends on dep (both are added when missing).
// Duplicate edges are ignored.
func (g *Graph) Connect(v, dep string) {
	a, b := g.Add(v), g.Add(dep)
	if g.hasEdge(a, b) {
		return
	}
	g.deps[a] = append(g.deps[a], b)
	g.users[b] = append(g.users[b], a)
}

// hasEdge reports whether a depends on b. It scans the shorter of a's
// dependencies and b's users: most vertices have a few of one of them
// (a block vertex gathering thousands of instances is each instance's
// only user), and a map of every edge kept two words per edge for the
// whole walk.
func (g *Graph) hasEdge(a, b int) bool {
	if len(g.deps[a]) <= len(g.users[b]) {
		for _, d := range g.deps[a] {
			if d == b {
				return true
			}
		}
		return false
	}
	for _, u := range g.users[b] {
		if u == a {
			return true
		}
	}
	return false
}

// DependsOn returns what v depends on directly, sorted.
func (g *Graph) DependsOn(v string) []string {
	i, ok := g.index[v]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(g.deps[i]))
	for _, d := range g.deps[i] {
		out = append(out, g.names[d])
	}
	sort.Strings(out)
	return out
}

// Dependents returns what depends on v directly, sorted.
func (g *Graph) Dependents(v string) []string {
	i, ok := g.index[v]
	if !ok {
		return nil
	}
	out := make([]string, 0, len(g.users[i]))
	for _, d := range g.users[i] {
		out = append(out, g.names[d])
	}
	sort.Strings(out)
	return out
}

// Cycles returns every cycle (strongly connected component of more than one
// vertex, or a vertex that depends on itself), each as the vertices in
// dependency order starting from the smallest name. Tarjan, iterative.
func (g *Graph) Cycles() [][]string {
	n := len(g.names)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var out [][]string
	next := 0
	type frame struct{ v, edge int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.edge < len(g.deps[f.v]) {
				w := g.deps[f.v][f.edge]
				f.edge++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] && index[w] < low[f.v] {
					low[f.v] = index[w]
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				if low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] != index[v] {
				continue
			}
			var comp []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			self := false
			if len(comp) == 1 {
				self = g.hasEdge(v, v)
			}
			if len(comp) > 1 || self {
				out = append(out, g.cyclePath(comp))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// cyclePath orders a strongly connected component as one walk along its
// edges, starting at its smallest name, so the message reads as a cycle.
func (g *Graph) cyclePath(comp []int) []string {
	in := make(map[int]bool, len(comp))
	start := comp[0]
	for _, c := range comp {
		in[c] = true
		if g.names[c] < g.names[start] {
			start = c
		}
	}
	path := []string{g.names[start]}
	seen := map[int]bool{start: true}
	cur := start
	for {
		nextV := -1
		for _, d := range g.deps[cur] {
			if in[d] && !seen[d] {
				nextV = d
				break
			}
		}
		if nextV < 0 {
			break
		}
		seen[nextV] = true
		path = append(path, g.names[nextV])
		cur = nextV
	}
	return path
}

// CycleError describes the cycles of a graph.
type CycleError struct{ Cycles [][]string }

func (e *CycleError) Error() string {
	var parts []string
	for _, c := range e.Cycles {
		parts = append(parts, strings.Join(append(append([]string(nil), c...), c[0]), " -> "))
	}
	return "dependency cycle: " + strings.Join(parts, "; ")
}

// Validate returns a *CycleError when the graph has a cycle.
func (g *Graph) Validate() error {
	if cs := g.Cycles(); len(cs) > 0 {
		return &CycleError{Cycles: cs}
	}
	return nil
}

// TopoOrder returns the vertices so that each comes after what it depends
// on; ties keep insertion order.
func (g *Graph) TopoOrder() ([]string, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	pending := make([]int, len(g.names))
	var ready []int
	for i := range g.names {
		pending[i] = len(g.deps[i])
		if pending[i] == 0 {
			ready = append(ready, i)
		}
	}
	out := make([]string, 0, len(g.names))
	for len(ready) > 0 {
		v := ready[0]
		ready = ready[1:]
		out = append(out, g.names[v])
		for _, u := range g.users[v] {
			pending[u]--
			if pending[u] == 0 {
				ready = append(ready, u)
			}
		}
	}
	return out, nil
}

// WalkFunc does the work of one vertex.
type WalkFunc func(ctx context.Context, v string) error

// Walk runs fn for every vertex, at most parallelism at once, each after all
// it depends on succeeded. A failed vertex's dependents are not run and get
// ErrUpstreamFailed; once ctx is done no new vertex starts (they get
// ctx.Err()). It returns the error of every vertex that did not succeed.
//
// At most parallelism long-lived workers take ready vertices in the order
// they became ready. A goroutine per vertex started with a small stack and
// grew it again through expression evaluation for every vertex (10 % of an
// apply's CPU at 10,000 instances); a worker keeps its grown stack.
func (g *Graph) Walk(ctx context.Context, parallelism int, fn WalkFunc) map[string]error {
	if err := g.Validate(); err != nil {
		errs := map[string]error{}
		for _, v := range g.names {
			errs[v] = err
		}
		return errs
	}
	if parallelism < 1 {
		parallelism = 1
	}
	n := len(g.names)
	if n == 0 {
		return map[string]error{}
	}
	w := &walker{g: g, pending: make([]int, n), failed: make([]bool, n), errs: map[string]error{},
		ready: make([]int, 0, n), left: n}
	w.cond.L = &w.mu
	for i := 0; i < n; i++ {
		w.pending[i] = len(g.deps[i])
		if w.pending[i] == 0 {
			w.ready = append(w.ready, i)
		}
	}
	workers := min(parallelism, n)
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			w.work(ctx, fn)
		}()
	}
	wg.Wait()
	return w.errs
}

// walker is the state of one Walk, guarded by mu.
type walker struct {
	g       *Graph
	mu      sync.Mutex
	cond    sync.Cond // signalled when ready grows or left reaches 0
	pending []int     // pending[i]: dependencies of i not yet finished
	failed  []bool
	errs    map[string]error
	ready   []int // every vertex made ready, in order; next is the head
	next    int
	left    int // vertices not finished
}

// work runs ready vertices until every vertex has finished.
func (w *walker) work(ctx context.Context, fn WalkFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for w.next == len(w.ready) && w.left > 0 {
			w.cond.Wait()
		}
		if w.left == 0 {
			return
		}
		i := w.ready[w.next]
		w.next++
		w.mu.Unlock()
		// Checked before each vertex: nothing new starts once ctx is done.
		err := ctx.Err()
		if err == nil {
			err = safeCall(ctx, fn, w.g.names[i])
		}
		w.mu.Lock()
		w.finish(i, err)
	}
}

// finish marks i done and readies its users; called with mu held.
func (w *walker) finish(i int, err error) {
	g := w.g
	w.left--
	if err != nil {
		w.errs[g.names[i]] = err
		w.failed[i] = true
	}
	for _, u := range g.users[i] {
		if w.failed[i] {
			w.failed[u] = true
		}
		w.pending[u]--
		if w.pending[u] == 0 {
			if w.failed[u] {
				if _, ok := w.errs[g.names[u]]; !ok {
					w.errs[g.names[u]] = ErrUpstreamFailed
				}
				w.finish(u, nil)
				continue
			}
			w.ready = append(w.ready, u)
			w.cond.Signal()
		}
	}
	if w.left == 0 {
		w.cond.Broadcast()
	}
}

func safeCall(ctx context.Context, fn WalkFunc, v string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in %s: %v", v, r)
		}
	}()
	return fn(ctx, v)
}
