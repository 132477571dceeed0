// This file holds the Engine itself: what it is given (the module, the
// providers, the state store, hooks) and the small services every phase
// uses (provider start, schemas).

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

	// graph is the configuration graph of Module, built by the first
	// phase that needs it and shared by the next ones (validate, plan and
	// apply of one run build the same graph; at 10,000 blocks each build
	// was ~45 MB of garbage). See buildConfigGraph.
	graphMu sync.Mutex
	graph   *builtGraph

	// values are the instance values the last loadState decoded, by
	// address, with the bytes they came from: apply reads the records
	// its plan read a moment before, and a record whose bytes did not
	// change decodes to the same (immutable) value. See loadState.
	valuesMu sync.Mutex
	values   map[string]*decodedValue

	// types lets the values this engine keeps share their types.
	types typeShare
}

// builtGraph is a configuration graph and the module it was built from.
type builtGraph struct {
	mod   *config.Module
	cg    *configGraph
	diags hcl.Diagnostics
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
	// ExcludeUnreachable leaves out, instead of failing the plan, every
	// node that cannot be reached: plans.Plan.Excluded names each with
	// the instances it neither read nor planned, and Apply fails for each
	// after converging the rest (-exclude-unreachable).
	ExcludeUnreachable bool
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

// provider starts (or returns the running) provider name.
func (e *Engine) provider(ctx context.Context, name string) (sdk.Provider, hcl.Diagnostics) {
	p, err := e.Providers.Provider(ctx, name)
	if err != nil {
		return nil, hcl.Diagnostics{cannotStart(name, err)}
	}
	return p, nil
}
