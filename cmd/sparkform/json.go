package main

import (
	"encoding/json"
	"io"
	"slices"
	"sort"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/config"
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

// jsonSensitive is jsonValue of v with the places paths name (sensitive
// paths, config.SensitivePaths) and any marked place replaced by null, and
// Terraform's sensitive mask of v: true where a value was hidden, an object
// (or array) of the masks of the parts that hold one, false elsewhere. A
// top-level object's mask is always an object. sparkform never writes a
// sensitive value in a JSON document, unlike Terraform.
func jsonSensitive(v cty.Value, paths []string) (val, unknown, mask any) {
	if v != cty.NilVal && len(paths) > 0 {
		v = engine.MarkSensitive(v, paths)
	}
	if v == cty.NilVal || !v.ContainsMarked() {
		val, unknown = jsonValue(v)
		if v != cty.NilVal && v.IsKnown() && !v.IsNull() && v.Type().IsObjectType() {
			return val, unknown, map[string]any{}
		}
		return val, unknown, false
	}
	val, unknown, mask = jsonMarked(v)
	if mask == false && v.IsKnown() && !v.IsNull() && v.Type().IsObjectType() {
		mask = map[string]any{}
	}
	return val, unknown, mask
}

// jsonMarked is jsonSensitive's walk of a marked value.
func jsonMarked(v cty.Value) (any, any, any) {
	if v.HasMark(config.SensitiveMark) {
		return nil, !v.IsKnown(), true
	}
	v, _ = v.Unmark()
	if !v.ContainsMarked() {
		j, u := jsonValue(v)
		return j, u, false
	}
	if !v.IsKnown() || v.IsNull() {
		j, u := jsonValue(v)
		return j, u, false
	}
	ty := v.Type()
	switch {
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		out, unk, sens := []any{}, []any{}, []any{}
		anyUnk, anySens := false, false
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			j, u, m := jsonMarked(e)
			out, unk, sens = append(out, j), append(unk, u), append(sens, m)
			anyUnk = anyUnk || u != false
			anySens = anySens || m != false
		}
		var ru, rm any = false, false
		if anyUnk {
			ru = unk
		}
		if anySens {
			rm = sens
		}
		return out, ru, rm
	case ty.IsMapType() || ty.IsObjectType():
		out, unk, sens := map[string]any{}, map[string]any{}, map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			j, u, m := jsonMarked(e)
			out[k.AsString()] = j
			if u != false {
				unk[k.AsString()] = u
			}
			if m != false {
				sens[k.AsString()] = m
			}
		}
		var ru, rm any = false, false
		if len(unk) > 0 {
			ru = unk
		}
		if len(sens) > 0 {
			rm = sens
		}
		return out, ru, rm
	}
	j, u := jsonValue(v)
	return j, u, false
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
	// The sensitive masks (jsonSensitive): where before and after hold a
	// value that is not shown.
	BeforeSensitive any      `json:"before_sensitive"`
	AfterSensitive  any      `json:"after_sensitive"`
	Replace         []string `json:"replace_paths,omitempty"`
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
	// Excluded are the nodes the plan leaves out (-exclude-unreachable).
	Excluded []jsonExcluded `json:"excluded_nodes,omitempty"`
	Summary  map[string]int `json:"summary"`
	Refresh  *jsonRefresh   `json:"refresh,omitempty"`
}

// jsonExcluded is one node a plan leaves out.
type jsonExcluded struct {
	Node      string   `json:"node"`
	Reason    string   `json:"reason"`
	Instances []string `json:"instances"`
}

func jsonExcludedNodes(p *plans.Plan) []jsonExcluded {
	var out []jsonExcluded
	for _, x := range p.Excluded {
		out = append(out, jsonExcluded{Node: x.Node, Reason: x.Reason, Instances: append([]string{}, x.Instances...)})
	}
	return out
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
		Changes: []jsonChange{}, Drift: []jsonChange{}, Outputs: map[string]jsonChange{}, Notes: p.Notes, Refresh: refresh, Excluded: jsonExcludedNodes(p)}
	add, change, destroy := p.Counts()
	out.Summary = map[string]int{"add": add, "change": change, "destroy": destroy}
	for _, c := range p.Changes {
		before, _, bs := jsonSensitive(c.Before, c.BeforeSensitive())
		after, unk, as := jsonSensitive(c.After, c.SensitiveAttrs)
		jc := jsonChange{Address: c.Addr, Type: c.Type, Provider: c.Provider, Node: c.NodeName(),
			Actions: actionsOf(c.Action), Reason: c.Reason, Before: before, After: after, BeforeSensitive: bs, AfterSensitive: as}
		if unk != false {
			jc.Unknown = unk
		}
		for _, rp := range c.RequiresReplace {
			jc.Replace = append(jc.Replace, pathString(rp))
		}
		out.Changes = append(out.Changes, jc)
	}
	for _, d := range p.Drift {
		sens := d.SensitiveAttrs
		if c := p.Change(d.Addr); c != nil {
			sens = append(slices.Clip(sens), c.BeforeSensitive()...)
		}
		before, _, bs := jsonSensitive(d.Before, sens)
		after, _, as := jsonSensitive(d.After, sens)
		a := "update"
		if d.After.IsNull() {
			a = "delete"
		}
		out.Drift = append(out.Drift, jsonChange{Address: d.Addr, Type: d.Type, Actions: []string{a}, Before: before, After: after, BeforeSensitive: bs, AfterSensitive: as})
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
		var bs, as any = false, false
		if o.Sensitive {
			before, after, bs, as = nil, nil, true, true
		}
		jc := jsonChange{Address: "output." + n, Before: before, After: after, Actions: []string{"update"}, BeforeSensitive: bs, AfterSensitive: as}
		if unk != false {
			jc.Unknown = unk
		}
		out.Outputs[n] = jc
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
