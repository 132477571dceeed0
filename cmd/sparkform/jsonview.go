package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/sparkform/sparkform/cmd/sparkform/internal/jsonui"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/internal/command/jsonplan"
)

// jsonView is the -json stream of a command (see jsonui), with what
// sparkform sends on it composed from the plan and the apply.
type jsonView struct{ *jsonui.Stream }

func newJSONView(w io.Writer) *jsonView { return &jsonView{jsonui.NewStream(w)} }

func (v *jsonView) diagnostics(ds hcl.Diagnostics, files map[string]*hcl.File) {
	for _, d := range dedupe(ds) {
		v.Diagnostic(d, files)
	}
}

// plan writes what a plan found and means to do: drift, every planned
// change, the summary and the output changes, in Terraform's order.
func (v *jsonView) plan(p *plans.Plan) {
	for _, n := range p.Notes {
		v.Log("warn", n)
	}
	for _, x := range jsonplan.Excluded(p) {
		v.Emit("warn", "node_excluded", fmt.Sprintf("%s: left out (-exclude-unreachable): %s", x.Node, x.Reason),
			map[string]any{"excluded": x})
	}
	for _, d := range p.Drift {
		a := "update"
		if d.After.IsNull() {
			a = "delete"
		}
		v.Emit("info", "resource_drift", fmt.Sprintf("%s: Drift detected (%s)", d.Addr, a),
			map[string]any{"change": map[string]any{"resource": jsonui.Resource(d.Addr, "", ""), "action": a}})
	}
	for _, c := range p.Changes {
		if c.Action == plans.NoOp {
			continue
		}
		ch := map[string]any{"resource": jsonui.Resource(c.Addr, c.Provider, c.NodeName()), "action": jsonui.Action(c.Action)}
		if r := jsonui.Reason(c); r != "" {
			ch["reason"] = r
		}
		if c.Reason != "" {
			ch["reason_detail"] = c.Reason
		}
		if c.Action == plans.DeleteThenCreate || c.Action == plans.CreateThenDelete {
			var paths []string
			for _, rp := range c.RequiresReplace {
				paths = append(paths, pathString(rp))
			}
			if paths != nil {
				ch["replace_paths"] = paths
			}
		}
		v.Emit("info", "planned_change", c.Addr+": "+jsonui.PlanVerb[c.Action], map[string]any{"change": ch})
	}
	add, change, destroy := p.Counts()
	v.ChangeSummary("plan", jsonui.PlanSummaryText(add, change, destroy), add, change, destroy)
	if len(p.Outputs) > 0 {
		outs := map[string]any{}
		for _, n := range slices.Sorted(maps.Keys(p.Outputs)) {
			o := p.Outputs[n]
			a := "update"
			switch {
			case o.Before == cty.NilVal || o.Before.IsNull():
				a = "create"
			case o.After == cty.NilVal || o.After.IsNull():
				a = "delete"
			case o.After.IsWhollyKnown() && o.Before.RawEquals(o.After):
				a = "noop"
			}
			outs[n] = map[string]any{"sensitive": o.Sensitive, "action": a}
		}
		v.Emit("info", "outputs", fmt.Sprintf("Outputs: %d", len(outs)), map[string]any{"outputs": outs})
	}
}

// outputs writes output values after an apply.
func (v *jsonView) outputs(vals map[string]cty.Value, sensitive func(string) bool) {
	outs := map[string]any{}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		val := vals[n]
		o := map[string]any{"sensitive": sensitive(n)}
		if ty, err := ctyjson.MarshalType(val.Type()); err == nil {
			o["type"] = json.RawMessage(ty)
		}
		if !sensitive(n) {
			o["value"], _ = jsonValue(val)
		}
		outs[n] = o
	}
	v.Emit("info", "outputs", fmt.Sprintf("Outputs: %d", len(outs)), map[string]any{"outputs": outs})
}
