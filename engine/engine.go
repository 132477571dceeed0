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

	"github.com/sparkform/sparkform/engine/addrs"
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

// Options is everything an Engine is built from (see New). The zero value
// of each field is documented: an Engine from Options{Providers: p} can
// validate a configuration-less module and nothing else.
type Options struct {
	// Module is the flattened configuration (config.Flatten). Nil: there is
	// no configuration, as for status and logs, which read only state; Plan,
	// Validate, Import and GraphDOT need one.
	Module *config.Module
	// Providers is the plugin host that starts providers and gives their
	// schemas. It is required: every phase but StateNodes uses it.
	Providers Providers
	// Store is the state. Nil: no state is open yet, so only Validate and
	// GraphDOT can run; the CLI validates first and gives the store it then
	// opens (and locks) with SetStore before Plan, Apply, Import, Status or
	// Logs. Bad configuration thus never creates or locks a state.
	Store Store
	// Hooks receive progress events (refresh, apply, notes). Nil: NoHooks,
	// nothing is reported.
	Hooks Hooks
	// Parallelism bounds concurrent provider operations. Zero or less: 10,
	// Terraform's default.
	Parallelism int
	// NodeCheck is how a plan reaches each node before it reads anything
	// (see checkNodes): host key, login, sudo -n for become. Nil: plans go
	// without that check (each provider call then fails on its own).
	NodeCheck NodeChecker
}

// defaultParallelism is the bound on provider operations when
// Options.Parallelism is not positive.
const defaultParallelism = 10

// Engine plans and applies one configuration against one state. Build it
// with New; its options do not change afterwards but for the store
// (SetStore).
type Engine struct {
	module      *config.Module
	providers   Providers
	store       Store
	hooks       Hooks
	parallelism int
	nodeCheck   NodeChecker

	// opts is what New was given, for Options.
	opts Options

	// graph is the configuration graph of module, built by the first
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

// New returns an Engine built from o (see Options for each field's
// default).
func New(o Options) *Engine {
	e := &Engine{module: o.Module, providers: o.Providers, store: o.Store, hooks: o.Hooks,
		parallelism: o.Parallelism, nodeCheck: o.NodeCheck, opts: o}
	if e.hooks == nil {
		e.hooks = NoHooks{}
	}
	if e.parallelism < 1 {
		e.parallelism = defaultParallelism
	}
	return e
}

// Options returns what the engine was built with (its Store as SetStore
// last set it); zero fields are returned as given, not as defaulted.
func (e *Engine) Options() Options {
	o := e.opts
	o.Store = e.store
	return o
}

// SetStore gives the engine its state once the caller has opened it:
// validation reads no state, so a CLI validates the configuration (and the
// configuration graph it builds is kept for the plan) before it opens and
// locks the state. Call it before Plan, Apply, Import, Status or Logs,
// never during one.
func (e *Engine) SetStore(st Store) { e.store = st }

// PlanOptions are the knobs of one plan.
type PlanOptions struct {
	// Mode is the kind of plan. Empty: plans.NormalMode.
	Mode plans.Mode
	// Variables are the root module's input values, as resolved by the
	// caller (config.ResolveVariables); a plan stores them. Nil: none.
	Variables map[string]cty.Value
	// SkipRefresh plans from state as stored: no node is reached and
	// nothing is read (-refresh=false). False: nodes are checked and
	// refreshed first.
	SkipRefresh bool
	// Targets limit the plan to these resources, instances or modules (and
	// what they depend on). Empty: the whole configuration.
	Targets []addrs.Target
	// Replace forces replacement of these instances. Empty: none.
	Replace []addrs.ResourceInstance
	// ExcludeUnreachable leaves out, instead of failing the plan, every
	// node that cannot be reached: plans.Plan.Excluded names each with
	// the instances it neither read nor planned, and Apply fails for each
	// after converging the rest (-exclude-unreachable). False: an
	// unreachable node fails the plan, each named once.
	ExcludeUnreachable bool
	// DialledAhead are the nodes the caller has started dialling
	// (NodesFromVariables' first -parallelism): the node check takes them
	// first, in this order, so no more than Parallelism nodes are ever in
	// flight. Nil: the check's own order.
	DialledAhead []sdk.Node
}

// schemaFor returns the schema of a resource type, starting its provider
// on first use.
func (e *Engine) schemaFor(ctx context.Context, typeName string) (*sdk.ResourceSchema, error) {
	pname := sdk.ProviderNameOf(typeName)
	s, err := e.providers.Schema(ctx, pname)
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
	p, err := e.providers.Provider(ctx, name)
	if err != nil {
		return nil, hcl.Diagnostics{cannotStart(name, err)}
	}
	return p, nil
}
