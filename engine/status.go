// This file holds status: what really runs on the nodes now. Every object
// in state is refreshed (drift, in one word) and its provider is asked for
// live facts (sdk.StatusReader): a container's state, health, restarts,
// memory, a probe's answer. The facts are never part of a value, so they
// never show as drift in a plan.

package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Drift words (InstanceStatus.Drift).
const (
	DriftNone    = "none"    // the node has what state says
	DriftDrifted = "drifted" // it differs: a plan would change it
	DriftGone    = "gone"    // it is not there any more
	DriftUnknown = "unknown" // it could not be read
)

// Verdicts (StatusReport.Verdict), worst last.
const (
	VerdictHealthy = "healthy" // everything runs as state says
	VerdictDrifted = "drifted" // everything runs, but something differs from state
	VerdictDown    = "down"    // something does not run, is gone, unhealthy, or unreachable
)

// StatusReport is what `sparkform status` shows: per node, per instance.
type StatusReport struct {
	Nodes []*NodeStatus
	// Verdict is the whole in one word: VerdictHealthy, VerdictDrifted
	// or VerdictDown.
	Verdict string
	// Stats counts the refresh reads (one per provider per node); Status
	// the ReadStatus calls (the same).
	Stats       RefreshStats
	StatusCalls int
	Elapsed     time.Duration
}

// NodeStatus is one node's part of a StatusReport.
type NodeStatus struct {
	// Name is the node's address in config (empty: instances with no node).
	Name string
	// Label is the short name lines and tables show (the for_each key).
	Label string
	Host  string
	// Error, when set, says the node could not be reached or read.
	Error     string
	Instances []*InstanceStatus
}

// InstanceStatus is one instance's status.
type InstanceStatus struct {
	Addr string
	Type string
	// Drift is DriftNone, DriftDrifted, DriftGone or DriftUnknown.
	Drift string
	// Health is the provider's word; empty when it has none (Available
	// false) or could not tell.
	Health  sdk.Health
	Summary string
	Facts   []sdk.Fact
	// Available says the provider reports status for the type (an older
	// plugin, or a type with no live facts, does not).
	Available bool
	Tainted   bool
	// Errors are what went wrong reading it.
	Errors []string
}

// Down says the instance makes the verdict VerdictDown: it is gone, could
// not be read, or its provider says down or degraded.
func (in *InstanceStatus) Down() bool {
	return in.Drift == DriftGone || in.Drift == DriftUnknown || in.Health == sdk.HealthDown || in.Health == sdk.HealthDegraded
}

// Drifted says the instance, when not Down, makes the verdict
// VerdictDrifted: it differs from state, or state marks it tainted.
func (in *InstanceStatus) Drifted() bool { return in.Drift == DriftDrifted || in.Tainted }

// Status reads what runs now: one refresh read and one ReadStatus call per
// provider per node, the nodes in parallel, over the run's one connection
// per node. It needs no configuration: state says what should be there
// and where. Diagnostics are for what stops the whole report (state
// unreadable); what goes wrong on a node is in its NodeStatus.
func (e *Engine) Status(ctx context.Context) (*StatusReport, hcl.Diagnostics) {
	start := time.Now()
	objs, diags := e.loadState()
	if diags.HasErrors() {
		return nil, diags
	}
	rep := &StatusReport{Verdict: VerdictHealthy}
	byNode := map[string]*NodeStatus{}
	groups := readGroups(objs)
	var mu sync.Mutex
	var wg sync.WaitGroup
	lim := make(limiter, e.parallelism)
	for _, g := range groups {
		ns := byNode[g.node.Name]
		if ns == nil {
			ns = &NodeStatus{Name: g.node.Name, Host: g.node.Host}
			byNode[g.node.Name] = ns
			rep.Nodes = append(rep.Nodes, ns)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = lim.do(ctx, func() {
				ins, nodeErr, stats, calls := e.statusGroup(ctx, g, objs)
				mu.Lock()
				defer mu.Unlock()
				ns.Instances = append(ns.Instances, ins...)
				if nodeErr != "" && ns.Error == "" {
					ns.Error = nodeErr
				}
				rep.Stats.Calls += stats.Calls
				rep.Stats.RoundTrips += stats.RoundTrips
				rep.Stats.Instances += stats.Instances
				rep.StatusCalls += calls
			})
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, hcl.Diagnostics{tfdiags.FromError("Status interrupted", err, "")}
	}
	// By name; what lives on no node (sparkform_data) last.
	sort.Slice(rep.Nodes, func(i, j int) bool {
		a, b := rep.Nodes[i].Name, rep.Nodes[j].Name
		if (a == "") != (b == "") {
			return b == ""
		}
		return a < b
	})
	labels := nodeLabels(rep.Nodes)
	for _, ns := range rep.Nodes {
		ns.Label = labels[ns.Name]
		sort.Slice(ns.Instances, func(i, j int) bool { return ns.Instances[i].Addr < ns.Instances[j].Addr })
		if ns.Error != "" {
			rep.Verdict = VerdictDown
		}
		for _, in := range ns.Instances {
			switch {
			case in.Down():
				rep.Verdict = VerdictDown
			case in.Drifted() && rep.Verdict == VerdictHealthy:
				rep.Verdict = VerdictDrifted
			}
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// statusGroup refreshes one (provider, node) group and asks its provider
// for their status. It returns the node's error when the node itself
// could not be read.
func (e *Engine) statusGroup(ctx context.Context, g *readGroup, objs map[string]*stateObject) ([]*InstanceStatus, string, RefreshStats, int) {
	stats := RefreshStats{Calls: 1, Instances: len(g.addrs)}
	res, rd, trips := e.read(ctx, g, objs)
	stats.RoundTrips = trips
	out := make([]*InstanceStatus, len(g.addrs))
	nodeErr := ""
	if res == nil && rd.HasErrors() {
		nodeErr = diagText(rd)
	}
	errsOf := map[string][]string{}
	for _, d := range rd {
		if d.Severity == hcl.DiagError {
			// An instance's diagnostic ends with its address (sdkDiags);
			// a batch error is the node's.
			for _, addr := range g.addrs {
				if strings.HasSuffix(d.Detail, "("+addr+")") {
					errsOf[addr] = append(errsOf[addr], diagText(hcl.Diagnostics{d}))
				}
			}
		}
	}
	items := make([]sdk.StatusItem, len(g.addrs))
	for i, addr := range g.addrs {
		before := objs[addr]
		in := &InstanceStatus{Addr: addr, Type: before.Type, Tainted: before.Tainted, Errors: errsOf[addr]}
		items[i] = sdk.StatusItem{TypeName: before.Type, Address: addr, State: before.Value, Private: before.Private}
		after, ok := res[addr]
		switch {
		case !ok:
			in.Drift = DriftUnknown
		case after == nil:
			in.Drift = DriftGone
			items[i].Observed, items[i].ObservedKnown = nullOf(before.Value), true
		default:
			in.Drift = DriftNone
			if after != before && !sdk.ValuesEqual(before.Value, after.Value) {
				in.Drift = DriftDrifted
			}
			items[i].Observed, items[i].ObservedKnown = after.Value, true
		}
		out[i] = in
	}
	if nodeErr != "" {
		return out, nodeErr, stats, 0
	}
	p, err := e.providers.Provider(ctx, g.provider)
	if err != nil {
		return out, err.Error(), stats, 0
	}
	sr, ok := p.(sdk.StatusReader)
	if !ok {
		return out, "", stats, 0
	}
	resp := sr.ReadStatus(ctx, sdk.StatusRequest{Node: g.node, Items: items})
	if len(resp.Results) != len(items) {
		msg := resp.Diagnostics.Err()
		if msg == nil {
			msg = fmt.Errorf("provider %s returned %d status results for %d instances", g.provider, len(resp.Results), len(items))
		}
		for _, in := range out {
			in.Errors = append(in.Errors, "status: "+msg.Error())
		}
		return out, "", stats, 1
	}
	for i, r := range resp.Results {
		in := out[i]
		if r.Unavailable {
			continue
		}
		in.Available = true
		in.Health, in.Summary, in.Facts = r.Health, r.Summary, r.Facts
		if len(r.Diagnostics) > 0 {
			// A provider's message may repeat a value: hide the sensitive ones.
			o := objs[in.Addr]
			for _, d := range redact(sdkDiags(r.Diagnostics, "", nil, nil), secretStrings(o.SensitiveAttrs, o.Value)) {
				in.Errors = append(in.Errors, diagText(hcl.Diagnostics{d}))
			}
		}
	}
	return out, "", stats, 1
}

// diagText is diagnostics as one line each.
func diagText(ds hcl.Diagnostics) string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(d.Summary)
		if d.Detail != "" {
			b.WriteString(": " + d.Detail)
		}
	}
	return b.String()
}

// nodeLabels gives each node a short label: its for_each key
// (`node.spark["spark-01"]` -> spark-01) or block name (`node.n` -> n),
// unless two nodes would share one, then its full name.
func nodeLabels(nodes []*NodeStatus) map[string]string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	return shortNodeNames(names)
}

func shortNodeNames(names []string) map[string]string {
	short := func(n string) string {
		if n == "" {
			return "(no node)"
		}
		s := strings.TrimPrefix(n, "node.")
		if i := strings.IndexByte(s, '['); i >= 0 {
			k := strings.TrimSuffix(s[i+1:], "]")
			return strings.Trim(k, `"`)
		}
		return s
	}
	count := map[string]int{}
	for _, n := range names {
		count[short(n)]++
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		if s := short(n); count[s] == 1 {
			out[n] = s
		} else {
			out[n] = n
		}
	}
	return out
}

// StateNodes are the distinct nodes the instances in state live on (those
// with one), by name: what Status and Logs reach. A caller may start
// dialling them while the providers start.
func (e *Engine) StateNodes() ([]sdk.Node, hcl.Diagnostics) {
	objs, diags := e.loadState()
	if diags.HasErrors() {
		return nil, diags
	}
	seen := map[string]bool{}
	var out []sdk.Node
	for _, in := range objs {
		if in.Node.Name == "" && in.Node.Host == "" && in.Node.Transport != "local" {
			continue
		}
		if k := in.Node.Key(); !seen[k] {
			seen[k] = true
			out = append(out, in.Node)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
