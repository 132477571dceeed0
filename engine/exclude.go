// This file holds -exclude-unreachable: the nodes a plan leaves out
// because they cannot be reached, and what it does not do on them.

package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// leftNodes are the nodes a plan leaves out, by sdk.Node.Key, and the
// instances on them it met. A nil *leftNodes leaves nothing out.
type leftNodes struct {
	byKey map[string]*plans.ExcludedNode

	mu        sync.Mutex
	instances map[string]map[string]bool // node key -> addresses
}

// of is the left-out node n is, or nil.
func (l *leftNodes) of(n sdk.Node) *plans.ExcludedNode {
	if l == nil {
		return nil
	}
	return l.byKey[n.Key()]
}

// skip reports whether addr, on n, is left out, and if so notes it.
func (l *leftNodes) skip(n sdk.Node, addr string) bool {
	if l.of(n) == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.instances == nil {
		l.instances = map[string]map[string]bool{}
	}
	k := n.Key()
	if l.instances[k] == nil {
		l.instances[k] = map[string]bool{}
	}
	l.instances[k][addr] = true
	return true
}

// split is objs less those on nodes left out (kept, noted).
func (l *leftNodes) split(objs map[string]*stateObject) (reachable, kept map[string]*stateObject) {
	if l == nil {
		return objs, nil
	}
	reachable, kept = map[string]*stateObject{}, map[string]*stateObject{}
	for a, in := range objs {
		if l.skip(in.Node, a) {
			kept[a] = in
		} else {
			reachable[a] = in
		}
	}
	return reachable, kept
}

// record puts the nodes left out into p, each with every instance on it
// that the plan met or state holds.
func (l *leftNodes) record(p *plans.Plan, prior map[string]*stateObject) {
	if l == nil {
		return
	}
	for a, in := range prior {
		l.skip(in.Node, a)
	}
	p.Excluded = p.Excluded[:0]
	for k, x := range l.byKey {
		cp := *x
		cp.Instances = nil
		for a := range l.instances[k] {
			cp.Instances = append(cp.Instances, a)
		}
		sort.Strings(cp.Instances)
		p.Excluded = append(p.Excluded, cp)
	}
	p.Sort()
}

// excludedErrors are apply's errors for the nodes p left out: one each,
// after the rest has been applied, so that an apply that left a node out
// never reads as complete.
func excludedErrors(p *plans.Plan) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, x := range p.Excluded {
		what := "no instance of it was in the plan"
		if n := len(x.Instances); n > 0 {
			shown := x.Instances
			if len(shown) > 5 {
				shown = shown[:5]
			}
			what = fmt.Sprintf("its %d %s (%s%s) %s neither read nor changed, and state keeps what it recorded for them",
				n, map[bool]string{true: "instance", false: "instances"}[n == 1], strings.Join(shown, ", "),
				map[bool]string{true: ", ...", false: ""}[n > len(shown)], map[bool]string{true: "was", false: "were"}[n == 1])
		}
		diags = append(diags, errDiag("Node left out: "+x.Node,
			fmt.Sprintf("%s could not be reached (%s), so it was left out (-exclude-unreachable): %s. The other nodes were applied. Run apply again once it can be reached.",
				x.Node, x.Reason, what)))
	}
	return diags
}

// checkPlanNodes reaches, before a saved plan's first change, every node
// its changes and drift are on: time has passed since the plan. A node
// that cannot be reached now fails the apply before anything changes,
// one error per node; or, for a plan made (or applied) with
// -exclude-unreachable, its changes and drift are taken out of p and
// the node joins p.Excluded (one warning now, one error at the end)
// while the rest is applied.
func (e *Engine) checkPlanNodes(ctx context.Context, p *plans.Plan, objs map[string]*stateObject) hcl.Diagnostics {
	if e.nodeCheck == nil {
		return nil
	}
	byKey := map[string]sdk.Node{}
	add := func(n *sdk.Node) {
		if n != nil && n.Name != "" && (n.Transport != "local" || n.Become) {
			byKey[n.Key()] = *n
		}
	}
	for _, c := range p.Changes {
		add(c.Node)
		add(c.PriorNode)
	}
	for _, d := range p.Drift {
		if in := objs[d.Addr]; in != nil {
			add(&in.Node)
		}
	}
	nodes := sortedNodes(byKey)
	errs := e.reach(ctx, nodes)
	if err := ctx.Err(); err != nil {
		return hcl.Diagnostics{errDiag("Apply interrupted", err.Error())}
	}
	var diags hcl.Diagnostics
	dead := map[string]*plans.ExcludedNode{}
	for i, err := range errs {
		if err == nil {
			continue
		}
		diags = append(diags, unreachableDiag(e.module, nodes[i], err, p.ExcludeUnreachable,
			"Nothing was changed on any node: a saved plan reaches the nodes it changes before its first change."))
		dead[nodes[i].Key()] = &plans.ExcludedNode{Node: nodeLabel(nodes[i]), Reason: oneLine(err.Error())}
	}
	if len(dead) == 0 || diags.HasErrors() {
		return diags
	}
	on := func(n *sdk.Node) *plans.ExcludedNode {
		if n == nil {
			return nil
		}
		return dead[n.Key()]
	}
	changes := p.Changes[:0]
	for _, c := range p.Changes {
		x := on(c.Node)
		if x == nil {
			x = on(c.PriorNode)
		}
		if x == nil {
			changes = append(changes, c)
			continue
		}
		x.Instances = append(x.Instances, c.Addr)
	}
	p.Changes = changes
	drift := p.Drift[:0]
	for _, d := range p.Drift {
		if in := objs[d.Addr]; in != nil {
			if x := on(&in.Node); x != nil {
				x.Instances = append(x.Instances, d.Addr)
				continue
			}
		}
		drift = append(drift, d)
	}
	p.Drift = drift
	for _, x := range dead {
		sort.Strings(x.Instances)
		x.Instances = slices.Compact(x.Instances)
		p.Excluded = append(p.Excluded, *x)
	}
	p.Sort()
	return diags
}
