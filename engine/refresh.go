// This file holds refresh: every object in state is read back from its
// node, batched as one ReadResources call per (provider, node), and
// compared with what state says (drift).

package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// RefreshStats counts what one refresh cost.
type RefreshStats struct {
	// Calls is the number of ReadResources calls (one per provider per node).
	Calls int
	// RoundTrips is the number of remote round trips providers reported.
	RoundTrips int
	Instances  int
}

// readGroup is the objects of one provider on one node: one batched read.
type readGroup struct {
	provider string
	node     sdk.Node
	addrs    []string
}

// readGroups groups objs by (provider, node), in a stable order.
func readGroups(objs map[string]*stateObject) []*readGroup {
	byKey := map[string]*readGroup{}
	for addr, in := range objs {
		k := in.Provider + "\x00" + in.Node.Key()
		g := byKey[k]
		if g == nil {
			g = &readGroup{provider: in.Provider, node: in.Node}
			byKey[k] = g
		}
		g.addrs = append(g.addrs, addr)
	}
	keys := make([]string, 0, len(byKey))
	for k, g := range byKey {
		sort.Strings(g.addrs)
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*readGroup, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out
}

// refresh observes every object in objs, batched: one ReadResources call
// per (provider, node), the calls running in parallel. It returns the
// refreshed objects (gone ones removed) and the drift it found.
func (e *Engine) refresh(ctx context.Context, objs map[string]*stateObject) (map[string]*stateObject, []*plans.Drift, RefreshStats, hcl.Diagnostics) {
	out := make(map[string]*stateObject, len(objs))
	var drift []*plans.Drift
	var diags hcl.Diagnostics
	var stats RefreshStats
	var mu sync.Mutex
	var wg sync.WaitGroup
	lim := newNodeLimiter(e.parallelism) // nodes in flight, each with its providers' reads
	for _, g := range readGroups(objs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = lim.run(ctx, g.node.Key(), func() {
				res, rd, trips := e.read(ctx, g, objs)
				mu.Lock()
				defer mu.Unlock()
				stats.Calls++
				stats.RoundTrips += trips
				stats.Instances += len(g.addrs)
				diags = append(diags, rd...)
				drift = append(drift, mergeRead(g.addrs, objs, res, out)...)
			})
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		diags = append(diags, tfdiags.FromError("Refresh interrupted", err, ""))
	}
	sort.Slice(drift, func(i, j int) bool { return drift[i].Addr < drift[j].Addr })
	return out, drift, stats, diags
}

// mergeRead puts what one read found for addrs into out and returns the
// drift: an address missing from res could not be read and keeps what
// state says; a nil result is gone.
func mergeRead(addrs []string, objs, res, out map[string]*stateObject) []*plans.Drift {
	var drift []*plans.Drift
	for _, addr := range addrs {
		before := objs[addr]
		after, ok := res[addr]
		switch {
		case !ok:
			out[addr] = before
		case after == nil:
			drift = append(drift, &plans.Drift{Addr: addr, Type: before.Type, Before: before.Value, After: nullOf(before.Value), SensitiveAttrs: before.SensitiveAttrs})
		case after == before: // the provider found it unchanged (readResults)
			out[addr] = before
		default:
			out[addr] = after
			if !sdk.ValuesEqual(before.Value, after.Value) {
				drift = append(drift, &plans.Drift{Addr: addr, Type: before.Type, Before: before.Value, After: after.Value, SensitiveAttrs: before.SensitiveAttrs})
			}
		}
	}
	return drift
}

// read makes one batched ReadResources call. The result maps an address
// to its refreshed object (nil: gone); addresses missing from the map could
// not be read.
func (e *Engine) read(ctx context.Context, g *readGroup, objs map[string]*stateObject) (map[string]*stateObject, hcl.Diagnostics, int) {
	h := e.hooks
	h.PreRefresh(g.provider, g.node.Name, len(g.addrs))
	ih, _ := h.(InstanceRefreshHooks)
	if ih != nil {
		for _, addr := range g.addrs {
			ih.PreRefreshInstance(addr, objs[addr].Value, objs[addr].SensitiveAttrs)
		}
	}
	start := time.Now()
	p, err := e.providers.Provider(ctx, g.provider)
	if err != nil {
		h.PostRefresh(g.provider, g.node.Name, len(g.addrs), time.Since(start), 0, err)
		return nil, hcl.Diagnostics{cannotStart(g.provider, err)}, 0
	}
	req := sdk.ReadRequest{Node: g.node, Resources: make([]sdk.ReadItem, len(g.addrs))}
	for i, addr := range g.addrs {
		in := objs[addr]
		req.Resources[i] = sdk.ReadItem{TypeName: in.Type, Address: addr, Prior: in.Value, PriorStored: in.sdkStored(), Private: in.Private}
	}
	resp := p.ReadResources(ctx, req)
	if resp.Diagnostics.HasErrors() || len(resp.Results) != len(g.addrs) {
		err := resp.Diagnostics.Err()
		if err == nil {
			err = fmt.Errorf("provider %s returned %d results for %d instances", g.provider, len(resp.Results), len(g.addrs))
		}
		// A message about the whole batch may repeat any instance's value.
		if secrets := groupSecrets(g.addrs, objs); len(secrets) > 0 {
			err = errors.New(redactString(err.Error(), secrets))
		}
		h.PostRefresh(g.provider, g.node.Name, len(g.addrs), time.Since(start), resp.RoundTrips, err)
		return nil, hcl.Diagnostics{tfdiags.FromError(fmt.Sprintf("Cannot refresh %d instance(s) of provider %s on %s", len(g.addrs), g.provider, nodeLabel(g.node)), err, "")}, resp.RoundTrips
	}
	out, diags, herr := readResults(g.addrs, objs, resp)
	if ih != nil {
		for _, addr := range g.addrs {
			if after, read := out[addr]; read && after != nil {
				ih.PostRefreshInstance(addr, after.Value, after.SensitiveAttrs)
			} else if read {
				ih.PostRefreshInstance(addr, cty.NilVal, nil) // gone
			}
		}
	}
	h.PostRefresh(g.provider, g.node.Name, len(g.addrs), time.Since(start), resp.RoundTrips, herr)
	return out, diags, resp.RoundTrips
}

// readResults turns a read's results into refreshed objects; the error is
// the first instance's failure, for the hooks.
func readResults(addrs []string, objs map[string]*stateObject, resp sdk.ReadResponse) (map[string]*stateObject, hcl.Diagnostics, error) {
	diags := sdkDiags(filterWarnings(resp.Diagnostics), "", nil, nil)
	if len(diags) > 0 {
		diags = redact(diags, groupSecrets(addrs, objs))
	}
	out := make(map[string]*stateObject, len(addrs))
	var first error
	for i, addr := range addrs {
		r := resp.Results[i]
		rd := sdkDiags(r.Diagnostics, addr, nil, nil)
		if o := objs[addr]; len(rd) > 0 && o != nil {
			rd = redact(rd, secretStrings(o.SensitiveAttrs, o.Value))
		}
		diags = append(diags, rd...)
		switch {
		case r.Diagnostics.HasErrors():
			if first == nil {
				first = r.Diagnostics.Err()
			}
		case r.NewState.IsNull():
			out[addr] = nil
		case r.Unchanged && bytes.Equal(r.Private, objs[addr].Private):
			// NewState is the prior sent, which is the object's value:
			// keep the object, and its stored bytes.
			out[addr] = objs[addr]
		default:
			cp := *objs[addr]
			cp.Value, cp.Private, cp.stored = r.NewState, r.Private, nil
			out[addr] = &cp
		}
	}
	return out, diags, first
}

// refreshForPlan refreshes what a plan starts from: every object, or with
// -refresh=false only those an interrupted apply left uncertain (merged
// back into the rest).
func (e *Engine) refreshForPlan(ctx context.Context, objs map[string]*stateObject, recovered map[string]*state.Intent, skip bool) (map[string]*stateObject, []*plans.Drift, hcl.Diagnostics) {
	if skip && len(recovered) == 0 {
		return objs, nil, nil
	}
	toRead := objs
	if skip {
		toRead = map[string]*stateObject{}
		for a := range recovered {
			// An intent with no record anywhere has nothing to read.
			if in, ok := objs[a]; ok {
				toRead[a] = in
			}
		}
	}
	refreshed, drift, _, diags := e.refresh(ctx, toRead)
	if diags.HasErrors() || !skip {
		return refreshed, drift, diags
	}
	merged := make(map[string]*stateObject, len(objs))
	for a, in := range objs {
		merged[a] = in
	}
	for a := range toRead {
		if in, ok := refreshed[a]; ok {
			merged[a] = in
		} else {
			delete(merged, a)
		}
	}
	return merged, drift, diags
}

// groupSecrets are the sensitive strings of every object of a read batch,
// longest first: what a message about the whole batch must not repeat.
func groupSecrets(addrs []string, objs map[string]*stateObject) []string {
	var out []string
	for _, addr := range addrs {
		if o := objs[addr]; o != nil {
			out = append(out, secretStrings(o.SensitiveAttrs, o.Value)...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}
