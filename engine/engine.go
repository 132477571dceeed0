package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Providers is what the engine needs of the plugin host (*plugin.Host):
// providers start lazily, on first use.
type Providers interface {
	Provider(ctx context.Context, name string) (sdk.Provider, error)
	Schema(ctx context.Context, name string) (*sdk.Schema, error)
}

// Engine plans and applies one configuration against one state.
type Engine struct {
	Module    *config.Module
	Providers Providers
	Store     Store
	Hooks     Hooks
	// Parallelism bounds concurrent provider operations (default 10).
	Parallelism int
	// NodeCheck, when set, is how a plan reaches each node first (see
	// checkNodes); nil plans without that check.
	NodeCheck NodeChecker
}

// PlanOptions are the knobs of one plan.
type PlanOptions struct {
	Mode        plans.Mode
	Variables   map[string]cty.Value
	SkipRefresh bool
	// Targets limit the plan to these resources or instances (and what
	// they depend on).
	Targets []string
	// Replace forces replacement of these instances.
	Replace []string
}

func (e *Engine) hooks() Hooks {
	if e.Hooks == nil {
		return NoHooks{}
	}
	return e.Hooks
}

func (e *Engine) parallelism() int {
	if e.Parallelism < 1 {
		return 10
	}
	return e.Parallelism
}

// schemaFor returns the schema of a resource type, starting its provider
// on first use.
func (e *Engine) schemaFor(ctx context.Context, typeName string) (*sdk.ResourceSchema, error) {
	pname := sdk.ProviderNameOf(typeName)
	s, err := e.Providers.Schema(ctx, pname)
	if err != nil {
		return nil, err
	}
	rs, ok := s.ResourceTypes[typeName]
	if !ok {
		var names []string
		for n := range s.ResourceTypes {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("provider %q has no resource type %q (it has: %s)", pname, typeName, strings.Join(names, ", "))
	}
	return rs, nil
}

// loadState reads every instance in state.
func (e *Engine) loadState() (map[string]*instance, hcl.Diagnostics) {
	recs, err := e.Store.Resources()
	if err != nil {
		return nil, hcl.Diagnostics{errDiag("Cannot read state", err.Error())}
	}
	out := make(map[string]*instance, len(recs))
	for _, r := range recs {
		in, err := instanceFromRecord(r)
		if err != nil {
			return nil, hcl.Diagnostics{errDiag("Corrupt state record", err.Error())}
		}
		out[in.Addr] = in
	}
	return out, nil
}

func errDiag(summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail}
}

// sdkDiags converts provider diagnostics into hcl ones, pointing at the
// attribute they name when the body has it.
func sdkDiags(ds sdk.Diagnostics, addr string, body hcl.Body, rng *hcl.Range) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range ds {
		sev := hcl.DiagError
		if d.Severity == sdk.Warning {
			sev = hcl.DiagWarning
		}
		hd := &hcl.Diagnostic{Severity: sev, Summary: d.Summary, Detail: d.Detail}
		if addr != "" {
			hd.Detail = strings.TrimSpace(hd.Detail + "\n\n(" + addr + ")")
		}
		if body != nil && len(d.Path) > 0 {
			hd.Subject = config.AttributeRange(body, d.Path)
		}
		if hd.Subject == nil && rng != nil {
			r := *rng
			hd.Subject = &r
		}
		out = append(out, hd)
	}
	return out
}

// limiter bounds concurrent provider calls across the whole walk.
type limiter chan struct{}

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
