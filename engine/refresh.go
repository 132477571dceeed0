package engine

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// RefreshStats counts what one refresh cost.
type RefreshStats struct {
	// Calls is the number of ReadResources calls (one per provider per node).
	Calls int
	// RoundTrips is the number of remote round trips providers reported.
	RoundTrips int
	Instances  int
}

// refresh observes every instance in insts, batched: one ReadResources
// call per (provider, node), the calls running in parallel. It returns the
// refreshed instances (gone ones removed) and the drift it found.
func (e *Engine) refresh(ctx context.Context, insts map[string]*instance) (map[string]*instance, []*plans.Drift, RefreshStats, hcl.Diagnostics) {
	type group struct {
		provider string
		node     sdk.Node
		addrs    []string
	}
	groups := map[string]*group{}
	for addr, in := range insts {
		k := in.Provider + "\x00" + in.Node.Key()
		g := groups[k]
		if g == nil {
			g = &group{provider: in.Provider, node: in.Node}
			groups[k] = g
		}
		g.addrs = append(g.addrs, addr)
	}
	keys := make([]string, 0, len(groups))
	for k, g := range groups {
		sort.Strings(g.addrs)
		keys = append(keys, k)
	}
	sort.Strings(keys)

	out := make(map[string]*instance, len(insts))
	var drift []*plans.Drift
	var diags hcl.Diagnostics
	var stats RefreshStats
	var mu sync.Mutex
	var wg sync.WaitGroup
	lim := make(limiter, e.parallelism())
	for _, k := range keys {
		g := groups[k]
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = lim.do(ctx, func() {
				res, rd, trips := e.readGroup(ctx, g.provider, g.node, g.addrs, insts)
				mu.Lock()
				defer mu.Unlock()
				stats.Calls++
				stats.RoundTrips += trips
				stats.Instances += len(g.addrs)
				diags = append(diags, rd...)
				for _, addr := range g.addrs {
					before := insts[addr]
					after, ok := res[addr]
					if !ok { // read failed: keep what state says
						out[addr] = before
						continue
					}
					if after != nil {
						out[addr] = after
					}
					if after == nil {
						drift = append(drift, &plans.Drift{Addr: addr, Type: before.Type, Before: before.Value, After: nullOf(before.Value)})
					} else if !sdk.ValuesEqual(before.Value, after.Value) {
						drift = append(drift, &plans.Drift{Addr: addr, Type: before.Type, Before: before.Value, After: after.Value})
					}
				}
			})
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		diags = append(diags, errDiag("Refresh interrupted", err.Error()))
	}
	sort.Slice(drift, func(i, j int) bool { return drift[i].Addr < drift[j].Addr })
	return out, drift, stats, diags
}

// readGroup makes one batched ReadResources call. The result maps an
// address to its refreshed instance (nil: gone); addresses missing from the
// map could not be read.
func (e *Engine) readGroup(ctx context.Context, provider string, node sdk.Node, addrs []string, insts map[string]*instance) (map[string]*instance, hcl.Diagnostics, int) {
	h := e.hooks()
	h.PreRefresh(provider, node.Name, len(addrs))
	start := time.Now()
	p, err := e.Providers.Provider(ctx, provider)
	if err != nil {
		h.PostRefresh(provider, node.Name, len(addrs), time.Since(start), 0, err)
		return nil, hcl.Diagnostics{errDiag("Cannot start provider "+provider, err.Error())}, 0
	}
	req := sdk.ReadRequest{Node: node, Resources: make([]sdk.ReadItem, len(addrs))}
	for i, addr := range addrs {
		in := insts[addr]
		req.Resources[i] = sdk.ReadItem{TypeName: in.Type, Address: addr, Prior: in.Value, Private: in.Private}
	}
	resp := p.ReadResources(ctx, req)
	var diags hcl.Diagnostics
	if resp.Diagnostics.HasErrors() || len(resp.Results) != len(addrs) {
		err := resp.Diagnostics.Err()
		if err == nil {
			err = fmt.Errorf("provider %s returned %d results for %d instances", provider, len(resp.Results), len(addrs))
		}
		h.PostRefresh(provider, node.Name, len(addrs), time.Since(start), resp.RoundTrips, err)
		diags = append(diags, errDiag(fmt.Sprintf("Cannot refresh %d instance(s) of provider %s on %s", len(addrs), provider, nodeLabel(node)), err.Error()))
		return nil, diags, resp.RoundTrips
	}
	diags = append(diags, sdkDiags(filterWarnings(resp.Diagnostics), "", nil, nil)...)
	out := make(map[string]*instance, len(addrs))
	var errs []error
	for i, addr := range addrs {
		r := resp.Results[i]
		if r.Diagnostics.HasErrors() {
			diags = append(diags, sdkDiags(r.Diagnostics, addr, nil, nil)...)
			errs = append(errs, r.Diagnostics.Err())
			continue
		}
		diags = append(diags, sdkDiags(r.Diagnostics, addr, nil, nil)...)
		if r.NewState.IsNull() {
			out[addr] = nil
			continue
		}
		cp := *insts[addr]
		cp.Value = r.NewState
		cp.Private = r.Private
		out[addr] = &cp
	}
	var herr error
	if len(errs) > 0 {
		herr = errs[0]
	}
	h.PostRefresh(provider, node.Name, len(addrs), time.Since(start), resp.RoundTrips, herr)
	return out, diags, resp.RoundTrips
}

func filterWarnings(ds sdk.Diagnostics) sdk.Diagnostics {
	var out sdk.Diagnostics
	for _, d := range ds {
		if d.Severity == sdk.Warning {
			out = append(out, d)
		}
	}
	return out
}

func nodeLabel(n sdk.Node) string {
	if n.Name != "" {
		return n.Name
	}
	if n.Transport == "local" {
		return "the local node"
	}
	return fmt.Sprintf("%s@%s:%d", n.User, n.Host, n.Port)
}
