package main

import (
	"encoding/json"
	"io"
	"sort"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
)

// jsonValue turns a cty value into plain JSON data; unknowns become null
// and are listed separately, as Terraform's after_unknown does.
func jsonValue(v cty.Value) (any, any) {
	if v == cty.NilVal || !v.IsKnown() {
		return nil, true
	}
	if v.IsNull() {
		return nil, false
	}
	v, _ = v.UnmarkDeep()
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString(), false
	case ty == cty.Bool:
		return v.True(), false
	case ty == cty.Number:
		// The shortest decimal that reads back as the same number, as
		// OpenTofu writes it: exact digits for big whole numbers, no
		// exponent for small fractions (0.0000001, not 1e-07).
		return json.Number(v.AsBigFloat().Text('f', -1)), false
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		var out []any
		var unk []any
		anyUnk := false
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			j, u := jsonValue(e)
			out = append(out, j)
			unk = append(unk, u)
			if u != false {
				anyUnk = true
			}
		}
		if out == nil {
			out = []any{}
		}
		if !anyUnk {
			return out, false
		}
		return out, unk
	case ty.IsMapType() || ty.IsObjectType():
		out := map[string]any{}
		unk := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			j, u := jsonValue(e)
			out[k.AsString()] = j
			if u != false {
				unk[k.AsString()] = u
			}
		}
		if len(unk) == 0 {
			return out, false
		}
		return out, unk
	}
	return nil, false
}

type jsonChange struct {
	Address  string   `json:"address"`
	Type     string   `json:"type"`
	Provider string   `json:"provider"`
	Node     string   `json:"node,omitempty"`
	Actions  []string `json:"actions"`
	Reason   string   `json:"reason,omitempty"`
	Before   any      `json:"before"`
	After    any      `json:"after"`
	Unknown  any      `json:"after_unknown,omitempty"`
	Replace  []string `json:"replace_paths,omitempty"`
}

type jsonPlan struct {
	FormatVersion string                `json:"format_version"`
	Mode          string                `json:"mode"`
	Lineage       string                `json:"lineage"`
	Serial        uint64                `json:"serial"`
	Changes       []jsonChange          `json:"resource_changes"`
	Drift         []jsonChange          `json:"resource_drift"`
	Outputs       map[string]jsonChange `json:"output_changes"`
	Notes         []string              `json:"notes,omitempty"`
	Summary       map[string]int        `json:"summary"`
	Refresh       *jsonRefresh          `json:"refresh,omitempty"`
}

type jsonRefresh struct {
	ReadResourcesCalls int                         `json:"read_resources_calls"`
	RemoteRoundTrips   int                         `json:"remote_round_trips"`
	RPCs               map[string]map[string]int64 `json:"rpcs,omitempty"`
}

func actionsOf(a plans.Action) []string {
	switch a {
	case plans.DeleteThenCreate:
		return []string{"delete", "create"}
	case plans.CreateThenDelete:
		return []string{"create", "delete"}
	}
	return []string{string(a)}
}

func pathString(p cty.Path) string {
	s := ""
	for _, st := range p {
		switch st := st.(type) {
		case cty.GetAttrStep:
			if s != "" {
				s += "."
			}
			s += st.Name
		case cty.IndexStep:
			j, _ := jsonValue(st.Key)
			b, _ := json.Marshal(j)
			s += "[" + string(b) + "]"
		}
	}
	return s
}

func writePlanJSON(w io.Writer, p *plans.Plan, refresh *jsonRefresh) error {
	out := jsonPlan{FormatVersion: "1.0", Mode: string(p.Mode), Lineage: p.Lineage, Serial: p.Serial,
		Changes: []jsonChange{}, Drift: []jsonChange{}, Outputs: map[string]jsonChange{}, Notes: p.Notes, Refresh: refresh}
	add, change, destroy := p.Counts()
	out.Summary = map[string]int{"add": add, "change": change, "destroy": destroy}
	for _, c := range p.Changes {
		before, _ := jsonValue(c.Before)
		after, unk := jsonValue(c.After)
		jc := jsonChange{Address: c.Addr, Type: c.Type, Provider: c.Provider, Node: c.NodeName(),
			Actions: actionsOf(c.Action), Reason: c.Reason, Before: before, After: after}
		if unk != false {
			jc.Unknown = unk
		}
		for _, rp := range c.RequiresReplace {
			jc.Replace = append(jc.Replace, pathString(rp))
		}
		out.Changes = append(out.Changes, jc)
	}
	for _, d := range p.Drift {
		before, _ := jsonValue(d.Before)
		after, _ := jsonValue(d.After)
		a := "update"
		if d.After.IsNull() {
			a = "delete"
		}
		out.Drift = append(out.Drift, jsonChange{Address: d.Addr, Type: d.Type, Actions: []string{a}, Before: before, After: after})
	}
	names := make([]string, 0, len(p.Outputs))
	for n := range p.Outputs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		o := p.Outputs[n]
		before, _ := jsonValue(o.Before)
		after, unk := jsonValue(o.After)
		if o.Sensitive {
			before, after = "(sensitive value)", "(sensitive value)"
		}
		jc := jsonChange{Address: "output." + n, Before: before, After: after, Actions: []string{"update"}}
		if unk != false {
			jc.Unknown = unk
		}
		out.Outputs[n] = jc
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
