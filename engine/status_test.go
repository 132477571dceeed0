package engine

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestAddressUnder(t *testing.T) {
	for _, c := range []struct {
		addr, target string
		want         bool
	}{
		{`docker_container.serve["a"]`, `docker_container.serve["a"]`, true},
		{`docker_container.serve["a"]`, `docker_container.serve`, true},
		{`docker_container.serve`, `docker_container.serve`, true},
		{`docker_container.server`, `docker_container.serve`, false},
		{`docker_container.serve["ab"]`, `docker_container.serve["a"]`, false},
		{`module.recipe.docker_container.serve["a"]`, `module.recipe`, true},
		{`module.recipe["x"].docker_container.serve["a"]`, `module.recipe`, true},
		{`module.recipe["x"].docker_container.serve["a"]`, `module.recipe["x"]`, true},
		{`module.recipe["y"].docker_container.serve["a"]`, `module.recipe["x"]`, false},
		{`module.recipe2.docker_container.serve`, `module.recipe`, false},
		{`module.recipe.module.ray.docker_container.head`, `module.recipe`, true},
		{`docker_container.serve`, ``, false},
	} {
		if got := addressUnder(c.addr, c.target); got != c.want {
			t.Errorf("addressUnder(%s, %s) = %v; want %v", c.addr, c.target, got, c.want)
		}
	}
}

func TestRelativeAddr(t *testing.T) {
	for _, c := range []struct{ addr, target, want string }{
		{`module.recipe.docker_container.serve["a"]`, `module.recipe`, `docker_container.serve["a"]`},
		{`module.recipe["x"].docker_container.ray_head["a"]`, `module.recipe`, `docker_container.ray_head["a"]`},
		{`module.recipe["x"].docker_container.ray_head["a"]`, `module.recipe["x"]`, `docker_container.ray_head["a"]`},
		{`docker_container.serve["a"]`, `docker_container.serve`, `docker_container.serve["a"]`},
	} {
		if got := relativeAddr(c.addr, c.target); got != c.want {
			t.Errorf("relativeAddr(%s, %s) = %s; want %s", c.addr, c.target, got, c.want)
		}
	}
}

func TestShortNodeNames(t *testing.T) {
	got := shortNodeNames([]string{`node.spark["spark-01"]`, `node.spark["spark-02"]`, `node.head`, ``, `node.a["x"]`, `node.b["x"]`})
	want := map[string]string{
		`node.spark["spark-01"]`: "spark-01", `node.spark["spark-02"]`: "spark-02", `node.head`: "head", ``: "(no node)",
		// Two nodes with one key keep their full names.
		`node.a["x"]`: `node.a["x"]`, `node.b["x"]`: `node.b["x"]`,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label of %q = %q; want %q", k, got[k], v)
		}
	}
}

// TestStatusVerdicts: status after an apply with the test provider over
// gRPC (a plugin with no live facts: "status not available", which is
// not down) is healthy; an object changed on the node is drift (drifted);
// one removed is gone (down). The state is not changed by any of it.
func TestStatusVerdicts(t *testing.T) {
	b := newBed(t)
	r := b.cfg("chain_a_d")
	r.converge()
	ctx := context.Background()
	status := func() (*StatusReport, map[string]*InstanceStatus) {
		t.Helper()
		rep, diags := r.e.Status(ctx)
		if diags.HasErrors() {
			t.Fatal(diagString(diags))
		}
		by := map[string]*InstanceStatus{}
		for _, n := range rep.Nodes {
			for _, in := range n.Instances {
				by[in.Addr] = in
			}
		}
		return rep, by
	}
	rep, by := status()
	if rep.Verdict != VerdictHealthy || len(by) != 2 {
		t.Fatalf("verdict %s, %d instances; want healthy, 2", rep.Verdict, len(by))
	}
	if rep.Stats.Calls != 1 || rep.StatusCalls != 1 {
		t.Errorf("%d reads and %d status calls for one provider on one node; want 1 and 1", rep.Stats.Calls, rep.StatusCalls)
	}
	if a := by["sftest_thing.a"]; a.Drift != DriftNone || a.Available || a.Health != "" {
		t.Errorf("a: %+v", a)
	}
	if n := rep.Nodes[0]; n.Name != "node.local" || n.Label != "local" || n.Error != "" {
		t.Errorf("node %+v", n)
	}

	writeObj(t, b.tp, b.attr("sftest_thing.a", "id"), "changed by hand")
	rep, by = status()
	if rep.Verdict != VerdictDrifted || by["sftest_thing.a"].Drift != DriftDrifted || by["sftest_thing.d"].Drift != DriftNone {
		t.Errorf("after a change by hand: verdict %s, a %s, d %s", rep.Verdict, by["sftest_thing.a"].Drift, by["sftest_thing.d"].Drift)
	}

	if err := os.Remove(b.tp.objPath(b.attr("sftest_thing.d", "id"))); err != nil {
		t.Fatal(err)
	}
	rep, by = status()
	if rep.Verdict != VerdictDown || by["sftest_thing.d"].Drift != DriftGone {
		t.Errorf("after a removal: verdict %s, d %s", rep.Verdict, by["sftest_thing.d"].Drift)
	}
	// Status changes nothing: state still has both as applied.
	if got := b.attr("sftest_thing.a", "value"); got != "v1" {
		t.Errorf("state's a.value = %q after status; want v1", got)
	}
	if b.record("sftest_thing.d") == nil {
		t.Error("status removed d from state")
	}

	// Logs of what has no container is a clear error.
	diags := r.e.Logs(ctx, "sftest_thing.a", LogsOptions{Tail: -1}, func(LogLine) { t.Error("a line from a thing") })
	if !diags.HasErrors() || !strings.Contains(diagString(diags), `"sftest_thing.a" has no container, so it has no logs: it names 1 instance(s) of sftest_thing`) {
		t.Errorf("logs of a thing: %s", diagString(diags))
	}
	diags = r.e.Logs(ctx, "module.none", LogsOptions{Tail: -1}, func(LogLine) {})
	if !diags.HasErrors() || !strings.Contains(diagString(diags), `nothing in state matches "module.none"`) {
		t.Errorf("logs of nothing: %s", diagString(diags))
	}
}
