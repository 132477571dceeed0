package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
	"github.com/sparkform/sparkform/state"
)

// Engine phase benchmarks on the bench/ shape: N sparkform_data instances
// in chains of 10 (10 blocks, count = N/10, block i takes block i-1's id)
// on a local node, with the real provider over gRPC and a real bbolt state.
// bench/run.sh measures the same shape end to end through the CLI.

// chainConfig is the bench/run.sh configuration for n instances.
func chainConfig(n int) string {
	var sb strings.Builder
	sb.WriteString("node \"local\" {\n  transport = \"local\"\n}\n")
	fmt.Fprintf(&sb, "resource \"sparkform_data\" \"r0\" {\n  count = %d\n  node  = node.local\n  input = \"seed-${count.index}\"\n}\n", n/10)
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&sb, "resource \"sparkform_data\" \"r%d\" {\n  count = %d\n  node  = node.local\n  input = sparkform_data.r%d[count.index].id\n}\n", i, n/10, i-1)
	}
	return sb.String()
}

type chainBench struct {
	dir   string
	mod   *config.Module
	provs *gRPCProviders
}

func newChainBench(b *testing.B, n int) *chainBench {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sf.hcl"), []byte(chainConfig(n)), 0o644); err != nil {
		b.Fatal(err)
	}
	mod, diags := config.LoadDir(dir)
	if diags.HasErrors() {
		b.Fatal(diagString(diags))
	}
	return &chainBench{dir: dir, mod: mod, provs: &gRPCProviders{schemas: map[string]*sdk.Schema{},
		provs: map[string]sdk.Provider{builtin.Name: sdktest.GRPC(b, builtin.New())}}}
}

// engine opens a fresh (or the existing) state at name.
func (cb *chainBench) engine(b *testing.B, name string) (*Engine, func()) {
	b.Helper()
	st, err := state.Open(filepath.Join(cb.dir, name, "state.db"), state.Options{Command: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return New(Options{Module: cb.mod, Providers: cb.provs, Store: st}), func() { _ = st.Close() }
}

func mustPlan(b *testing.B, e *Engine, opts PlanOptions) *plans.Plan {
	b.Helper()
	p, diags := e.Plan(context.Background(), opts)
	if diags.HasErrors() {
		b.Fatal(diagString(diags))
	}
	return p
}

func mustApply(b *testing.B, e *Engine, p *plans.Plan) {
	b.Helper()
	if _, diags := e.Apply(context.Background(), p); diags.HasErrors() {
		b.Fatal(diagString(diags))
	}
}

var benchSizes = []int{1000, 10000}

// BenchmarkLoad: parsing and decoding the configuration files.
func BenchmarkLoad(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cb := newChainBench(b, n)
			b.ResetTimer()
			for b.Loop() {
				if _, diags := config.LoadDir(cb.dir); diags.HasErrors() {
					b.Fatal(diagString(diags))
				}
			}
		})
	}
}

// BenchmarkGraphBuild: references -> the configuration graph (schemas are
// cached after the first iteration, as in one run).
func BenchmarkGraphBuild(b *testing.B) {
	cb := newChainBench(b, 1000)
	e := New(Options{Module: cb.mod, Providers: cb.provs})
	for b.Loop() {
		if _, diags := e.newConfigGraph(context.Background()); diags.HasErrors() {
			b.Fatal(diagString(diags))
		}
	}
}

// BenchmarkPlanCreate: planning N creates from empty state.
func BenchmarkPlanCreate(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cb := newChainBench(b, n)
			e, done := cb.engine(b, "empty")
			defer done()
			b.ResetTimer()
			for b.Loop() {
				mustPlan(b, e, PlanOptions{})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/instance")
		})
	}
}

// BenchmarkPlanNoOp: refresh + plan of N applied instances (no changes).
func BenchmarkPlanNoOp(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cb := newChainBench(b, n)
			e, done := cb.engine(b, "applied")
			defer done()
			mustApply(b, e, mustPlan(b, e, PlanOptions{}))
			b.ResetTimer()
			for b.Loop() {
				if p := mustPlan(b, e, PlanOptions{}); p.HasChanges() {
					b.Fatal("plan after apply has changes")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/instance")
		})
	}
}

// BenchmarkApply: applying a plan of N creates into an empty state (the
// plan is made outside the timer; each iteration gets a fresh state).
func BenchmarkApply(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cb := newChainBench(b, n)
			i := 0
			for b.Loop() {
				b.StopTimer()
				e, done := cb.engine(b, fmt.Sprint("apply", i))
				i++
				p := mustPlan(b, e, PlanOptions{})
				b.StartTimer()
				mustApply(b, e, p)
				b.StopTimer()
				done()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/instance")
		})
	}
}
