package main

import (
	"fmt"
	"io"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// benchPlan is what bench/run.sh's 10,000-instance configs plan: ten
// sparkform_data blocks of n/10 instances (count), or n/10 instances of a
// module holding ten blocks (module), each created, or destroyed.
func benchPlan(n int, module bool, action plans.Action) *plans.Plan {
	ty := cty.Object(map[string]cty.Type{"id": cty.String, "input": cty.String, "output": cty.String})
	p := &plans.Plan{Mode: plans.NormalMode}
	if action == plans.Delete {
		p.Mode = plans.DestroyMode
	}
	for i := range n / 10 {
		for r := range 10 {
			addr, res := fmt.Sprintf("sparkform_data.r%d[%d]", r, i), fmt.Sprintf("sparkform_data.r%d", r)
			if module {
				addr, res = fmt.Sprintf("module.m[\"k%d\"].sparkform_data.r%d", i, r), fmt.Sprintf("module.m.sparkform_data.r%d", r)
			}
			seed := cty.StringVal(fmt.Sprintf("seed-%d", i))
			known := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal(fmt.Sprintf("%016x", i*10+r)), "input": seed, "output": seed})
			c := &plans.ResourceChange{Addr: addr, Resource: res, Type: "sparkform_data", Provider: "sparkform",
				Node: &sdk.Node{Name: "node.local"}, Action: action}
			if action == plans.Delete {
				c.Before, c.After = known, cty.NullVal(ty)
			} else {
				c.Before = cty.NullVal(ty)
				c.After = cty.ObjectVal(map[string]cty.Value{"id": cty.UnknownVal(cty.String), "input": seed, "output": seed})
			}
			p.Changes = append(p.Changes, c)
		}
	}
	return p
}

// BenchmarkRenderPlan10k: the human plan of 10,000 instances, rendered
// through the buffer meta.renderPlan uses.
func BenchmarkRenderPlan10k(b *testing.B) {
	for _, tc := range []struct {
		name   string
		module bool
		action plans.Action
	}{
		{"count-create", false, plans.Create},
		{"module-create", true, plans.Create},
		{"count-delete", false, plans.Delete},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := benchPlan(10000, tc.module, tc.action)
			m := &meta{stdout: io.Discard}
			b.ReportAllocs()
			for b.Loop() {
				m.renderPlan(p)
			}
		})
	}
}

// TestNameOfScanMatchesParser: the scan nameOf does for module addresses
// reads what the address parser reads, and leaves to the parser what it
// does not certainly read the same way.
func TestNameOfScanMatchesParser(t *testing.T) {
	for _, tc := range []struct {
		addr string
		fast bool
	}{
		{`module.m.sparkform_data.r0`, true},
		{`module.m["k1"].sparkform_data.r0`, true},
		{`module.m[3].gitkit_checkout.kit["spark-01"]`, true},
		{`module.a["x.y"].module.b[0].docker_container.c[12]`, true},
		{`module.m["a b/c:d"].t.n-1`, true},
		{`module.m["$${x}"].t.n`, false},
		{`module.m["\u00e9"].t.n`, false},
		{`module.m["a\"b"].t.n`, false},
		{`module.m[1234567890].t.n`, false},
		{`module.m.data.t.n`, false},
		{`module.m.var.x`, false},
		{`module.m._t.n`, false},
		{`module.m.t`, false},
		{`module.m.t.n.x`, false},
		{`module.m.t.n[`, false},
		{`module.m["k"].t.n["unterminated`, false},
		{`module.m.module.t.n`, false},
	} {
		_, name, ok := addrs.ScanModuleResourceInstance(tc.addr)
		if ok != tc.fast {
			t.Errorf("%s: scanned %v, want %v", tc.addr, ok, tc.fast)
		}
		if !ok {
			continue
		}
		ri, ds := addrs.ParseResourceInstance(tc.addr)
		if ds.HasErrors() {
			t.Errorf("%s: scanned as %q, but the parser refuses it: %s", tc.addr, name, ds.Error())
		} else if ri.Resource.Name != name {
			t.Errorf("%s: scanned %q, parsed %q", tc.addr, name, ri.Resource.Name)
		}
	}
}
