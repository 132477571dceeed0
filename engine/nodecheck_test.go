package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestNodesFromVariables: the nodes the variables alone decide are the
// ones the plan's node check reaches (same names and connection keys);
// a node that needs a local or another node, a local node and one whose
// arguments do not evaluate are left out, without an error.
func TestNodesFromVariables(t *testing.T) {
	dir := t.TempDir()
	src := `
variable "nodes" {}
locals { jump_user = "ops" }
node "spark" {
  for_each    = var.nodes
  host        = each.value.host
  port        = each.value.port
  user        = "kilork"
  become      = true
  known_hosts = "/etc/ssh/known"
}
node "single" {
  host = "10.0.0.9"
}
node "here" {
  transport = "local"
}
node "via_local" {
  host = "10.0.0.8"
  user = local.jump_user
}
node "bad_port" {
  host = "10.0.0.7"
  port = "not a number"
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.sf.hcl"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	mod, diags := config.LoadDir(dir)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	vars := map[string]cty.Value{"nodes": cty.ObjectVal(map[string]cty.Value{
		"a": cty.ObjectVal(map[string]cty.Value{"host": cty.StringVal("10.0.0.1"), "port": cty.NumberIntVal(2201)}),
		"b": cty.ObjectVal(map[string]cty.Value{"host": cty.StringVal("10.0.0.2"), "port": cty.NumberIntVal(22)}),
	})}
	got := NodesFromVariables(mod, vars)
	var names []string
	for _, n := range got {
		names = append(names, n.Name)
	}
	want := []string{`node.single`, `node.spark["a"]`, `node.spark["b"]`}
	if !slices.Equal(names, want) {
		t.Fatalf("nodes %q, want %q", names, want)
	}

	// The very nodes (connection keys) the plan's evaluation makes.
	e := New(Options{Module: mod, Providers: newBed(t).provs})
	cg, ev, d := e.planConfig(t.Context(), PlanOptions{Variables: vars})
	if cg == nil || ev == nil {
		t.Fatalf("planConfig: %v", d)
	}
	cfg := ev.nodeInstances()
	for _, n := range got {
		if c, ok := cfg[n.Name]; !ok || c.Key() != n.Key() {
			t.Errorf("%s: key %q, the plan's is %q", n.Name, n.Key(), c.Key())
		}
	}
	if g := cfg[`node.spark["a"]`]; g.Port != 2201 || !g.Become || g.User != "kilork" {
		t.Errorf("node.spark[a] = %+v", g)
	}
}

// TestReachOrderAndBound: the node check takes the nodes in the order
// given (the order NodesFromVariables gives the nodes dialled ahead), at
// most parallelism at once, and starts nothing once interrupted.
func TestReachOrderAndBound(t *testing.T) {
	var nodes []sdk.Node
	for i := range 7 {
		nodes = append(nodes, sdk.Node{Name: fmt.Sprintf(`node.n["%d"]`, i), Host: fmt.Sprintf("10.0.0.%d", i+1)})
	}
	for _, par := range []int{1, 2, 3, 10} {
		t.Run(fmt.Sprintf("parallelism %d", par), func(t *testing.T) {
			var mu sync.Mutex
			var started []string
			inFlight, most := 0, 0
			e := &Engine{parallelism: par, nodeCheck: func(_ context.Context, n sdk.Node) error {
				mu.Lock()
				started = append(started, n.Name)
				inFlight++
				most = max(most, inFlight)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond) // long enough for the others to pile up
				mu.Lock()
				inFlight--
				mu.Unlock()
				if n.Name == nodes[4].Name {
					return errors.New("refused")
				}
				return nil
			}}
			errs := e.reach(context.Background(), nodes)
			if want := min(par, len(nodes)); most != want {
				t.Errorf("%d nodes in flight at most; want %d", most, want)
			}
			// Each starts once a slot is free, so within a window of
			// parallelism of its place in the given order.
			for i, name := range started {
				j := slices.IndexFunc(nodes, func(n sdk.Node) bool { return n.Name == name })
				if j < 0 || j > i+par-1 || j < i-par+1 {
					t.Errorf("check %d was %s (place %d in the order); want within %d of %d", i, name, j, par, i)
				}
			}
			for i, err := range errs {
				if (err != nil) != (i == 4) {
					t.Errorf("errs[%d] = %v", i, err)
				}
			}
		})
	}
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int32
		e := &Engine{parallelism: 2, nodeCheck: func(context.Context, sdk.Node) error {
			if calls.Add(1) == 2 {
				cancel()
			}
			return nil
		}}
		e.reach(ctx, nodes)
		if n := calls.Load(); n > 3 {
			t.Errorf("%d checks ran; want none started after the interrupt (at most the 2 in flight and 1 racing it)", n)
		}
	})
}

// TestEarlyFirst: the nodes dialled ahead (those the variables decide)
// are checked first, in their order; the rest keep theirs, and a node
// dialled ahead that the plan does not reach is not added.
func TestEarlyFirst(t *testing.T) {
	node := func(name string) sdk.Node { return sdk.Node{Name: name, Host: name + ".lan"} }
	names := func(ns []sdk.Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	all := []sdk.Node{node("a"), node("b"), node("c"), node("d"), node("e")}
	cases := []struct {
		early []sdk.Node
		want  []string
	}{
		{nil, []string{"a", "b", "c", "d", "e"}},
		{[]sdk.Node{node("c"), node("e")}, []string{"c", "e", "a", "b", "d"}},
		{[]sdk.Node{node("b"), node("zz"), node("b")}, []string{"b", "a", "c", "d", "e"}},
		{all, []string{"a", "b", "c", "d", "e"}},
	}
	for _, c := range cases {
		if got := names(earlyFirst(all, c.early)); !slices.Equal(got, c.want) {
			t.Errorf("earlyFirst(%v) = %v; want %v", names(c.early), got, c.want)
		}
	}
}

// TestPlanChecksDialledAheadFirst: the nodes the caller dialled ahead
// (PlanOptions.DialledAhead) are the first the plan's node check
// reaches, in that order, the others after them.
func TestPlanChecksDialledAheadFirst(t *testing.T) {
	b := newBed(t)
	r := b.cfg("nodeorder")
	r.e.parallelism = 1
	var mu sync.Mutex
	var order []string
	r.e.nodeCheck = func(_ context.Context, n sdk.Node) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, n.Host)
		return nil
	}
	vars := map[string]cty.Value{"hosts": cty.TupleVal([]cty.Value{cty.StringVal("10.0.0.1"), cty.StringVal("10.0.0.2"), cty.StringVal("10.0.0.3")})}
	all := NodesFromVariables(r.e.module, vars) // as the CLI finds them
	if len(all) != 3 {
		t.Fatalf("NodesFromVariables: %d nodes; want 3", len(all))
	}
	ahead := []sdk.Node{all[2], all[1]}
	r.plan(PlanOptions{Variables: vars, DialledAhead: ahead})
	if want := []string{"10.0.0.3", "10.0.0.2", "10.0.0.1"}; !slices.Equal(order, want) {
		t.Errorf("node check order %v; want %v (the nodes dialled ahead first)", order, want)
	}
}
