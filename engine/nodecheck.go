// This file holds the node check: before a plan reads anything, every
// node it touches is reached once.

package engine

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
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
// Each failure is one diagnostic pointing at the node block.
func (e *Engine) checkNodes(ctx context.Context, cfgNodes map[string]sdk.Node, insts map[string]*stateObject) hcl.Diagnostics {
	if e.nodeCheck == nil {
		return nil
	}
	nodes := nodesToReach(cfgNodes, insts)
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	lim := make(limiter, e.parallelism)
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = lim.do(ctx, func() { errs[i] = e.nodeCheck(ctx, n) })
		}()
	}
	wg.Wait()
	var diags hcl.Diagnostics
	for i, err := range errs {
		if err == nil {
			continue
		}
		d := tfdiags.FromError("Cannot reach "+nodeLabel(nodes[i]), err,
			"\n\nNothing was read or changed. Plan reaches every node before it reads anything; -refresh=false plans from state alone.")
		if nb := e.module.Nodes[nodeBlockName(nodes[i].Name)]; nb != nil {
			rng := nb.DeclRange
			d.Subject = &rng
		}
		diags = append(diags, d)
	}
	if err := ctx.Err(); err != nil {
		diags = append(diags, tfdiags.FromError("Planning interrupted", err, ""))
	}
	return diags
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
// start (providers/node.Pool.Prewarm) instead of after. It is a guess
// made early, never a check: a node block that needs more (a local,
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
