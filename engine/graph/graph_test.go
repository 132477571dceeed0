package graph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func build(edges [][2]string, extra ...string) *Graph {
	g := New()
	for _, v := range extra {
		g.Add(v)
	}
	for _, e := range edges {
		g.Connect(e[0], e[1])
	}
	return g
}

func TestCycles(t *testing.T) {
	tests := []struct {
		name  string
		edges [][2]string
		want  []string
	}{
		{"none", [][2]string{{"b", "a"}, {"c", "b"}}, nil},
		{"self", [][2]string{{"a", "a"}}, []string{"a -> a"}},
		{"three", [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}, {"d", "a"}}, []string{"a -> b -> c -> a"}},
		{"two separate", [][2]string{{"x", "y"}, {"y", "x"}, {"a", "b"}, {"b", "a"}}, []string{"a -> b -> a", "x -> y -> x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range build(tt.edges).Cycles() {
				got = append(got, strings.Join(append(c, c[0]), " -> "))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("cycles = %q, want %q", got, tt.want)
			}
			err := build(tt.edges).Validate()
			if (err != nil) != (tt.want != nil) {
				t.Fatalf("Validate() = %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), tt.want[0]) {
				t.Fatalf("error %q does not name the cycle %q", err, tt.want[0])
			}
		})
	}
}

func TestTopoOrder(t *testing.T) {
	g := build([][2]string{{"c", "b"}, {"b", "a"}, {"d", "a"}})
	order, err := g.TopoOrder()
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, v := range order {
		pos[v] = i
	}
	for _, e := range [][2]string{{"c", "b"}, {"b", "a"}, {"d", "a"}} {
		if pos[e[0]] < pos[e[1]] {
			t.Errorf("%s ordered before its dependency %s: %v", e[0], e[1], order)
		}
	}
}

func TestWalkOrderAndFailureIsolation(t *testing.T) {
	// a <- b <- c ; a <- d ; e independent; b fails.
	g := build([][2]string{{"b", "a"}, {"c", "b"}, {"d", "a"}}, "e")
	var mu sync.Mutex
	done := map[string]bool{}
	errs := g.Walk(context.Background(), 4, func(_ context.Context, v string) error {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range g.DependsOn(v) {
			if !done[d] {
				return fmt.Errorf("%s ran before %s", v, d)
			}
		}
		if v == "b" {
			return errors.New("boom")
		}
		done[v] = true
		return nil
	})
	var ran []string
	for v := range done {
		ran = append(ran, v)
	}
	sort.Strings(ran)
	if !reflect.DeepEqual(ran, []string{"a", "d", "e"}) {
		t.Errorf("ran %v, want [a d e]", ran)
	}
	if errs["b"] == nil || errs["b"].Error() != "boom" {
		t.Errorf("b: %v", errs["b"])
	}
	if !errors.Is(errs["c"], ErrUpstreamFailed) {
		t.Errorf("c: %v, want ErrUpstreamFailed", errs["c"])
	}
	if len(errs) != 2 {
		t.Errorf("errors: %v", errs)
	}
}

func TestWalkParallelismBound(t *testing.T) {
	g := New()
	for i := 0; i < 50; i++ {
		g.Add(fmt.Sprint(i))
	}
	var cur, peak int64
	g.Walk(context.Background(), 3, func(context.Context, string) error {
		n := atomic.AddInt64(&cur, 1)
		for {
			p := atomic.LoadInt64(&peak)
			if n <= p || atomic.CompareAndSwapInt64(&peak, p, n) {
				break
			}
		}
		for i := 0; i < 1000; i++ {
			_ = fmt.Sprint(i)
		}
		atomic.AddInt64(&cur, -1)
		return nil
	})
	if peak > 3 || peak < 1 {
		t.Fatalf("peak concurrency %d, want 1..3", peak)
	}
}

func TestWalkCancelStopsScheduling(t *testing.T) {
	g := build([][2]string{{"b", "a"}, {"c", "b"}})
	ctx, cancel := context.WithCancel(context.Background())
	var ran []string
	errs := g.Walk(ctx, 1, func(_ context.Context, v string) error {
		ran = append(ran, v)
		if v == "a" {
			cancel()
		}
		return nil
	})
	if !reflect.DeepEqual(ran, []string{"a"}) {
		t.Fatalf("ran %v after cancel, want only a", ran)
	}
	if !errors.Is(errs["b"], context.Canceled) {
		t.Fatalf("b: %v", errs["b"])
	}
}

func TestWalkCycleIsError(t *testing.T) {
	g := build([][2]string{{"a", "b"}, {"b", "a"}})
	errs := g.Walk(context.Background(), 2, func(context.Context, string) error { t.Fatal("ran"); return nil })
	var ce *CycleError
	if !errors.As(errs["a"], &ce) {
		t.Fatalf("want CycleError, got %v", errs)
	}
}

func chain(n, width int) *Graph {
	g := New()
	for c := 0; c < n/width; c++ {
		for i := 1; i < width; i++ {
			g.Connect(fmt.Sprintf("r%d.%d", c, i), fmt.Sprintf("r%d.%d", c, i-1))
		}
	}
	return g
}

func BenchmarkWalk10k(b *testing.B) {
	g := chain(10000, 10)
	for b.Loop() {
		g.Walk(context.Background(), 10, func(context.Context, string) error { return nil })
	}
}

func BenchmarkBuild10k(b *testing.B) {
	for b.Loop() {
		g := chain(10000, 10)
		if err := g.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWalkBoundedGoroutines: the walk runs its vertices on at most
// parallelism workers, not a goroutine per ready vertex (each of which grew
// its stack anew through evaluation).
func TestWalkBoundedGoroutines(t *testing.T) {
	g := New()
	for i := 0; i < 2000; i++ {
		g.Add(fmt.Sprint(i))
	}
	base := runtime.NumGoroutine()
	var peak atomic.Int64
	g.Walk(context.Background(), 4, func(context.Context, string) error {
		n := int64(runtime.NumGoroutine())
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		return nil
	})
	if got := peak.Load() - int64(base); got > 4 {
		t.Fatalf("walk used %d goroutines beyond the caller's, want at most 4 (parallelism)", got)
	}
}

// TestWalkPanicIsVertexError: a panicking vertex fails alone (its
// dependents are skipped) and the walk's workers go on with the rest.
func TestWalkPanicIsVertexError(t *testing.T) {
	g := build([][2]string{{"b", "a"}, {"c", "b"}}, "d", "e", "f")
	var mu sync.Mutex
	var ran []string
	errs := g.Walk(context.Background(), 1, func(_ context.Context, v string) error {
		mu.Lock()
		ran = append(ran, v)
		mu.Unlock()
		if v == "b" {
			panic("kaput")
		}
		return nil
	})
	sort.Strings(ran)
	if !reflect.DeepEqual(ran, []string{"a", "b", "d", "e", "f"}) {
		t.Errorf("ran %v, want [a b d e f]", ran)
	}
	if errs["b"] == nil || errs["b"].Error() != "panic in b: kaput" {
		t.Errorf("b: %v", errs["b"])
	}
	if !errors.Is(errs["c"], ErrUpstreamFailed) || len(errs) != 2 {
		t.Errorf("errors: %v", errs)
	}
}

// TestWalkCancelWithQueuedVertices: after cancel nothing new starts, even
// with vertices already queued for the busy workers; each vertex not run
// gets ctx.Err() or, below one that did, ErrUpstreamFailed.
func TestWalkCancelWithQueuedVertices(t *testing.T) {
	g := New()
	for i := 0; i < 100; i++ {
		g.Connect(fmt.Sprintf("child%d", i), fmt.Sprintf("v%d", i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int64
	// The first three hold their workers until the third has cancelled:
	// no slot frees before the cancel. (Returning at once, the first could
	// free its slot and a fourth start between the third's start and its
	// cancel, which failed under -race now and then.)
	release := make(chan struct{})
	errs := g.Walk(ctx, 3, func(ctx context.Context, v string) error {
		if started.Add(1) == 3 {
			cancel()
			close(release)
		}
		<-release
		return nil
	})
	if n := started.Load(); n != 3 {
		t.Fatalf("%d vertices started, want 3 (those before the cancel)", n)
	}
	canceled := 0
	for v, err := range errs {
		switch {
		case errors.Is(err, context.Canceled):
			canceled++
		case errors.Is(err, ErrUpstreamFailed):
			if !strings.HasPrefix(v, "child") {
				t.Errorf("%s: %v", v, err)
			}
		default:
			t.Errorf("%s: %v", v, err)
		}
	}
	if len(errs) != 197 || canceled < 97 {
		t.Fatalf("%d errors (%d canceled), want 197 (at least 97 canceled)", len(errs), canceled)
	}
}

// TestWalkDAGRunsEachOnceInOrder walks a random DAG at several
// parallelisms: every vertex runs exactly once, after its dependencies.
func TestWalkDAGRunsEachOnceInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	g := New()
	const n = 3000
	for i := 0; i < n; i++ {
		v := fmt.Sprint(i)
		g.Add(v)
		for k := 0; k < 3 && i > 0; k++ {
			g.Connect(v, fmt.Sprint(rng.IntN(i)))
		}
	}
	for _, par := range []int{1, 2, 7, 64} {
		var mu sync.Mutex
		runs := map[string]int{}
		errs := g.Walk(context.Background(), par, func(_ context.Context, v string) error {
			mu.Lock()
			defer mu.Unlock()
			for _, d := range g.DependsOn(v) {
				if runs[d] != 1 {
					return fmt.Errorf("%s ran before %s", v, d)
				}
			}
			runs[v]++
			return nil
		})
		if len(errs) != 0 || len(runs) != n {
			t.Fatalf("parallelism %d: %d ran, errors %v", par, len(runs), errs)
		}
		for v, c := range runs {
			if c != 1 {
				t.Fatalf("parallelism %d: %s ran %d times", par, v, c)
			}
		}
	}
}

func TestWalkEmpty(t *testing.T) {
	if errs := New().Walk(context.Background(), 4, nil); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}

// TestIndex: a vertex's index is the one Add gave it, in insertion order.
func TestIndex(t *testing.T) {
	g := New()
	if i := g.Add("a"); i != 0 {
		t.Fatalf("Add(a) = %d, want 0", i)
	}
	g.Connect("b", "c") // adds b, then c
	for want, v := range []string{"a", "b", "c"} {
		if i, ok := g.Index(v); !ok || i != want {
			t.Errorf("Index(%s) = %d, %v; want %d, true", v, i, ok, want)
		}
	}
	if _, ok := g.Index("d"); ok {
		t.Error("Index of a vertex never added")
	}
}
