// This file holds the node check: before a plan reads anything, every
// node it touches is reached once.

package engine

import (
	"context"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/providers/sdk"
)

// NodeChecker reaches one node the way its providers will (host key,
// login, `sudo -n` when it becomes root) and says what to check when it
// cannot. The CLI passes providers/node.Check; the engine itself never
// opens a connection.
type NodeChecker func(ctx context.Context, n sdk.Node) error

// checkNodes reaches every node a plan touches, once each and in
// parallel: the configuration's nodes and the nodes of what is in state.
// Every node is reached, whatever fails first, so one run names every
// unreachable node. By default each failure is one error pointing at the
// node block; with exclude it is one warning instead, and the node is
// returned in left (by sdk.Node.Key) for the plan to leave out. The
// nodes in early (PlanOptions.DialledAhead) are reached first, in their
// order.
func (e *Engine) checkNodes(ctx context.Context, cfgNodes map[string]sdk.Node, insts map[string]*stateObject, early []sdk.Node, exclude bool) (map[string]*plans.ExcludedNode, hcl.Diagnostics) {
	if e.nodeCheck == nil {
		return nil, nil
	}
	nodes := earlyFirst(nodesToReach(cfgNodes, insts), early)
	errs := e.reach(ctx, nodes)
	var diags hcl.Diagnostics
	var left map[string]*plans.ExcludedNode
	if err := ctx.Err(); err != nil {
		return nil, append(diags, tfdiags.FromError("Planning interrupted", err, ""))
	}
	for i, err := range errs {
		if err == nil {
			continue
		}
		d := unreachableDiag(e.module, nodes[i], err, exclude,
			"Nothing was read or changed. Plan reaches every node before it reads anything; -refresh=false plans from state alone.")
		diags = append(diags, d)
		if exclude {
			if left == nil {
				left = map[string]*plans.ExcludedNode{}
			}
			left[nodes[i].Key()] = &plans.ExcludedNode{Node: nodeLabel(nodes[i]), Reason: oneLine(err.Error())}
		}
	}
	return left, diags
}

// reach runs the node check on every node, the engine's parallelism at a
// time and in the order given (earlyFirst's: the nodes dialled ahead are
// the first checked), and returns each node's error (nil: reached).
// Nothing new starts once ctx is done.
func (e *Engine) reach(ctx context.Context, nodes []sdk.Node) []error {
	errs := make([]error, len(nodes))
	next := make(chan int, len(nodes))
	for i := range nodes {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(max(e.parallelism, 1), len(nodes)) {
		wg.Go(func() {
			for i := range next {
				if ctx.Err() != nil {
					return
				}
				errs[i] = e.nodeCheck(ctx, nodes[i])
			}
		})
	}
	wg.Wait()
	return errs
}

// unreachableDiag is the one diagnostic for a node that cannot be
// reached: an error naming the flag that would leave it out, or with
// exclude a warning saying what leaving it out means.
func unreachableDiag(mod *config.Module, n sdk.Node, err error, exclude bool, nothing string) *hcl.Diagnostic {
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot reach " + nodeLabel(n),
		Detail: err.Error() + "\n\n" + nothing + " Every node was tried; each one that cannot be reached is named in its own error. " +
			"To go on without the nodes that cannot be reached, run again with -exclude-unreachable: the plan then leaves them out and names them, and apply changes the other nodes and fails for each node left out."}
	tfdiags.Attach(d, err)
	if exclude {
		d.Severity, d.Summary = hcl.DiagWarning, "Node left out: "+nodeLabel(n)
		d.Detail = err.Error() + "\n\n-exclude-unreachable: its instances are neither read, planned nor changed, and state keeps what it recorded for them. Applying changes the other nodes, then fails with one error for this node."
	}
	if mod != nil {
		if nb := mod.Nodes[nodeBlockName(n.Name)]; nb != nil {
			rng := nb.DeclRange
			d.Subject = &rng
		}
	}
	return d
}

// oneLine is s on one line: a reason a plan file keeps (plans checks
// that it is plain text).
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || unicode.IsControl(r) }), "; ")
}

// nodeBlockName is the block of a node instance name:
// `node.spark["spark-01"]` -> "spark".
func nodeBlockName(name string) string {
	name = strings.TrimPrefix(name, "node.")
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	return name
}

// nodesToReach is every node of the configuration and of state once, in a
// stable order; a local node that does not become root needs no check.
func nodesToReach(cfgNodes map[string]sdk.Node, insts map[string]*stateObject) []sdk.Node {
	byKey := map[string]sdk.Node{}
	add := func(n sdk.Node) {
		if n.Transport == "local" && !n.Become {
			return // nothing to reach
		}
		if _, ok := byKey[n.Key()]; !ok {
			byKey[n.Key()] = n
		}
	}
	for _, n := range cfgNodes {
		add(n)
	}
	for _, in := range insts {
		add(in.Node)
	}
	return sortedNodes(byKey)
}

// earlyFirst is nodes with those of early (by key) moved to the front, in
// early's order; the others keep theirs. A caller that dialled the first
// -parallelism of early ahead thus has them checked before any other
// node, and no more than -parallelism nodes are ever in flight.
func earlyFirst(nodes, early []sdk.Node) []sdk.Node {
	if len(early) == 0 {
		return nodes
	}
	at := make(map[string]int, len(nodes))
	for i, n := range nodes {
		at[n.Key()] = i
	}
	out := make([]sdk.Node, 0, len(nodes))
	moved := make(map[int]bool, len(early))
	for _, n := range early {
		if i, ok := at[n.Key()]; ok && !moved[i] {
			out, moved[i] = append(out, nodes[i]), true
		}
	}
	for i, n := range nodes {
		if !moved[i] {
			out = append(out, n)
		}
	}
	return out
}

// sortedNodes is byKey's nodes in a stable order.
func sortedNodes(byKey map[string]sdk.Node) []sdk.Node {
	nodes := make([]sdk.Node, 0, len(byKey))
	for _, n := range byKey {
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name+nodes[i].Key() < nodes[j].Name+nodes[j].Key() })
	return nodes
}

// NodesFromVariables is every node of mod that the variables alone
// decide (host, port, user... from var and each, as the seed's for_each
// over var.nodes), for a caller that dials them while the providers
// start (providers/node.Pool.Prewarm) instead of after; the caller
// passes those it dialled as PlanOptions.DialledAhead, which the node
// check takes first, so dialling the first -parallelism of them keeps
// the bound on nodes in flight. It is a guess made early, never a
// check: a node block that needs more (a local,
// another node) or does not evaluate is left out, and the plan's node
// check still reaches every node it touches, the same way.
func NodesFromVariables(mod *config.Module, vars map[string]cty.Value) []sdk.Node {
	root := config.RootContext(mod.Dir, vars)
	byKey := map[string]sdk.Node{}
	for name, nb := range mod.Nodes {
		exp, diags := config.Expand(nb.ForEach, nb.Count, root)
		if diags.HasErrors() {
			continue
		}
		for _, k := range exp.Keys {
			nc, d := config.DecodeNode(nb.Config, instanceScope(root, exp, k))
			if d.HasErrors() {
				continue
			}
			n, err := nodeFromValue(config.NodeValue(addrs.NodeBlock{Name: name}.Instance(k).String(), nc))
			if err == nil && n.Transport != "local" {
				byKey[n.Key()] = n
			}
		}
	}
	return sortedNodes(byKey)
}
