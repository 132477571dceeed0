package jsonplan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/internal/command/jsonconfig"
	"github.com/sparkform/sparkform/internal/command/jsonstate"
	"github.com/sparkform/sparkform/internal/command/jsonvalue"
	"github.com/sparkform/sparkform/providers/sdk"
)

// FormatVersion is the version of the plan document: Terraform's plan
// representation 1.2 (the fields of 1.2 that sparkform can fill; see
// docs/cli.md for the rest).
const FormatVersion = "1.2"

// Plan is the document.
type Plan struct {
	FormatVersion    string              `json:"format_version"`
	TerraformVersion string              `json:"terraform_version"`
	Variables        map[string]Variable `json:"variables,omitempty"`
	PlannedValues    jsonstate.Values    `json:"planned_values"`
	ResourceDrift    []ResourceChange    `json:"resource_drift,omitempty"`
	ResourceChanges  []ResourceChange    `json:"resource_changes"`
	OutputChanges    map[string]Change   `json:"output_changes,omitempty"`
	PriorState       *jsonstate.State    `json:"prior_state,omitempty"`
	Configuration    *jsonconfig.Config  `json:"configuration,omitempty"`
	Timestamp        string              `json:"timestamp"`
	Errored          bool                `json:"errored"`
	Sparkform        Extras              `json:"sparkform"`
}

// Variable is one input variable's value; none when it is sensitive.
type Variable struct {
	Value any `json:"value,omitempty"`
}

// Extras are sparkform's facts about the plan, under "sparkform".
type Extras struct {
	Lineage string         `json:"lineage"`
	Serial  uint64         `json:"serial"`
	Mode    string         `json:"mode"`
	Summary map[string]int `json:"summary"`
	Notes   []string       `json:"notes,omitempty"`
	Targets []string       `json:"targets,omitempty"`
	Replace []string       `json:"replace,omitempty"`
	// SensitiveVariables names the variables whose value is left out.
	SensitiveVariables []string `json:"sensitive_variables,omitempty"`
	// ExcludedNodes are the nodes the plan leaves out
	// (-exclude-unreachable): nothing on them was read or planned.
	ExcludedNodes []ExcludedNode `json:"excluded_nodes,omitempty"`
}

// ExcludedNode is one node a plan leaves out, why, and the instances on it.
type ExcludedNode struct {
	Node      string   `json:"node"`
	Reason    string   `json:"reason"`
	Instances []string `json:"instances"`
}

// Excluded is the plan's left-out nodes in document form.
func Excluded(p *plans.Plan) []ExcludedNode {
	var out []ExcludedNode
	for _, x := range p.Excluded {
		out = append(out, ExcludedNode{Node: x.Node, Reason: x.Reason, Instances: append([]string{}, x.Instances...)})
	}
	return out
}

// ResourceChange is the planned change (or the drift) of one instance.
type ResourceChange struct {
	Address         string `json:"address"`
	PreviousAddress string `json:"previous_address,omitempty"`
	ModuleAddress   string `json:"module_address,omitempty"`
	Mode            string `json:"mode"`
	Type            string `json:"type"`
	Name            string `json:"name"`
	Index           any    `json:"index,omitempty"`
	ProviderName    string `json:"provider_name"`
	Deposed         string `json:"deposed,omitempty"`
	Change          Change `json:"change"`
	ActionReason    string `json:"action_reason,omitempty"`
	// Sparkform holds the node and the reason in words.
	Sparkform *ChangeExtras `json:"sparkform,omitempty"`
}

// ChangeExtras are sparkform's facts about one change.
type ChangeExtras struct {
	Node      string   `json:"node,omitempty"`
	PriorNode string   `json:"prior_node,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Notes     []string `json:"notes,omitempty"`
}

// Change is the format's change object, of a resource or an output.
type Change struct {
	Actions         []string `json:"actions"`
	Before          any      `json:"before"`
	After           any      `json:"after"`
	AfterUnknown    any      `json:"after_unknown"`
	BeforeSensitive any      `json:"before_sensitive"`
	AfterSensitive  any      `json:"after_sensitive"`
	ReplacePaths    [][]any  `json:"replace_paths,omitempty"`
}

// Options are what the plan file does not hold.
type Options struct {
	// Version is written as terraform_version: the sparkform version.
	Version string
	// Config is the configuration document, nil when the configuration
	// the plan was made from is not at hand.
	Config *jsonconfig.Config
	// SensitiveVariable reports whether a root variable is declared
	// sensitive. Nil: every variable is taken as sensitive (no value is
	// written), the safe reading when the configuration is not at hand.
	SensitiveVariable func(name string) bool
}

// Actions is the format's actions list of a.
func Actions(a plans.Action) []string {
	switch a {
	case plans.DeleteThenCreate:
		return []string{"delete", "create"}
	case plans.CreateThenDelete:
		return []string{"create", "delete"}
	}
	return []string{string(a)}
}

// ActionReason is the format's action_reason of a change, from the
// reason the engine gives in words ("" where the format has none).
func ActionReason(c *plans.ResourceChange, index any) string {
	r := c.Reason
	switch {
	case c.Action.IsReplace() && strings.HasPrefix(r, "tainted"):
		return "replace_because_tainted"
	case c.Action.IsReplace() && strings.HasPrefix(r, "replacement requested"):
		return "replace_by_request"
	case c.Action.IsReplace():
		// A changed attribute that forces replacement, or a move to
		// another node: the object cannot be updated in place.
		return "replace_because_cannot_update"
	case c.Action == plans.Delete && strings.HasPrefix(r, "no longer in the configuration"):
		return "delete_because_no_resource_config"
	case c.Action == plans.Delete && strings.HasPrefix(r, "its key is no longer produced"):
		if _, ok := index.(int); ok {
			return "delete_because_count_index"
		}
		return "delete_because_each_key"
	}
	return ""
}

// Marshal is the document of p.
func Marshal(p *plans.Plan, opts Options) (*Plan, error) {
	out := &Plan{
		FormatVersion: FormatVersion, TerraformVersion: opts.Version,
		ResourceChanges: []ResourceChange{}, Configuration: opts.Config,
		Timestamp: p.Created.UTC().Format(time.RFC3339),
	}
	add, change, destroy := p.Counts()
	out.Sparkform = Extras{Lineage: p.Lineage, Serial: p.Serial, Mode: string(p.Mode), Notes: p.Notes,
		Targets: p.Targets, Replace: p.Replace, ExcludedNodes: Excluded(p),
		Summary: map[string]int{"add": add, "change": change, "destroy": destroy}}

	// Variables.
	if len(p.Variables) > 0 {
		out.Variables = map[string]Variable{}
		for _, n := range slices.Sorted(maps.Keys(p.Variables)) {
			if opts.SensitiveVariable == nil || opts.SensitiveVariable(n) {
				out.Variables[n] = Variable{}
				out.Sparkform.SensitiveVariables = append(out.Sparkform.SensitiveVariables, n)
				continue
			}
			v, _ := jsonvalue.Value(p.Variables[n])
			out.Variables[n] = Variable{Value: v}
		}
	}

	// Each address is parsed once: drift and moves name the changes'.
	addrs := make(map[string]jsonstate.Addr, len(p.Changes))
	parse := func(s string) (jsonstate.Addr, error) {
		if a, ok := addrs[s]; ok {
			return a, nil
		}
		a, err := jsonstate.ParseAddr(s)
		if err == nil {
			addrs[s] = a
		}
		return a, err
	}
	prev := map[string]string{}
	for _, mv := range p.Moves {
		prev[mv.To] = mv.From
	}
	var planned, prior []jsonstate.Resource
	for _, c := range p.Changes {
		a, err := parse(c.Addr)
		if err != nil {
			return nil, fmt.Errorf("change of %s: %w", c.Addr, err)
		}
		rc := newChange(a, c.Provider, c.Type)
		rc.PreviousAddress = prev[c.Addr]
		before, _, bs := jsonvalue.Sensitive(c.Before, c.BeforeSensitive())
		after, unk, as := jsonvalue.Sensitive(c.After, c.SensitiveAttrs)
		rc.Change = Change{Actions: Actions(c.Action), Before: before, After: after,
			AfterUnknown: objectMask(unk), BeforeSensitive: bs, AfterSensitive: as}
		for _, rp := range c.RequiresReplace {
			rc.Change.ReplacePaths = append(rc.Change.ReplacePaths, jsonvalue.Path(rp))
		}
		rc.ActionReason = ActionReason(c, a.Index)
		ex := ChangeExtras{Node: c.NodeName(), Reason: c.Reason, Notes: c.Notes}
		if c.PriorNode != nil && c.PriorNode.Name != ex.Node {
			ex.PriorNode = c.PriorNode.Name
		}
		if ex.Node != "" || ex.PriorNode != "" || ex.Reason != "" || len(ex.Notes) > 0 {
			rc.Sparkform = &ex
		}
		out.ResourceChanges = append(out.ResourceChanges, rc)

		if c.Action != plans.Delete && !isNull(c.After) {
			r := jsonstate.NewResource(a, c.Provider, c.SchemaVersion, c.After, c.SensitiveAttrs)
			r.DependsOn = c.Dependencies
			planned = append(planned, r)
		}
		if !isNull(c.Before) {
			// The prior object: under its old address when a moved block
			// moves it (state holds it there until apply).
			pa := a
			if from := prev[c.Addr]; from != "" {
				if fa, err := parse(from); err == nil {
					pa = fa
				}
			}
			r := jsonstate.NewResource(pa, c.Provider, c.SchemaVersion, c.Before, c.BeforeSensitive())
			r.DependsOn = c.Dependencies
			prior = append(prior, r)
		}
	}
	changes := make(map[string]*plans.ResourceChange, len(p.Changes))
	for _, c := range p.Changes {
		changes[c.Addr] = c
	}
	for _, d := range p.Drift {
		a, err := parse(d.Addr)
		if err != nil {
			return nil, fmt.Errorf("drift of %s: %w", d.Addr, err)
		}
		sens, provider := d.SensitiveAttrs, ""
		if c := changes[d.Addr]; c != nil {
			sens, provider = append(slices.Clip(sens), c.BeforeSensitive()...), c.Provider
		}
		rc := newChange(a, provider, d.Type)
		before, _, bs := jsonvalue.Sensitive(d.Before, sens)
		after, unk, as := jsonvalue.Sensitive(d.After, sens)
		act := "update"
		if isNull(d.After) {
			act = "delete"
		}
		rc.Change = Change{Actions: []string{act}, Before: before, After: after, AfterUnknown: objectMask(unk),
			BeforeSensitive: bs, AfterSensitive: as}
		out.ResourceDrift = append(out.ResourceDrift, rc)
	}

	// Outputs.
	plannedOuts, priorOuts := map[string]jsonstate.Output{}, map[string]jsonstate.Output{}
	if len(p.Outputs) > 0 {
		out.OutputChanges = map[string]Change{}
	}
	for _, n := range slices.Sorted(maps.Keys(p.Outputs)) {
		o := p.Outputs[n]
		out.OutputChanges[n] = OutputChange(o)
		if !isNull(o.After) {
			po := jsonstate.Output{Sensitive: o.Sensitive}
			if o.After.IsWhollyKnown() {
				po = jsonstate.NewOutput(o.After, o.Sensitive)
			}
			plannedOuts[n] = po
		}
		if !isNull(o.Before) {
			priorOuts[n] = jsonstate.NewOutput(o.Before, o.Sensitive)
		}
	}
	out.PlannedValues = jsonstate.Values{Outputs: nilIfEmpty(plannedOuts), RootModule: jsonstate.Root(planned)}
	out.PriorState = &jsonstate.State{FormatVersion: jsonstate.FormatVersion, TerraformVersion: opts.Version,
		Values: &jsonstate.Values{Outputs: nilIfEmpty(priorOuts), RootModule: jsonstate.Root(prior)}}
	return out, nil
}

// OutputChange is the format's change of one output: create when it had
// no value, delete when it has none after, no-op when the value stays,
// update otherwise. A sensitive output's values are not written.
func OutputChange(o *plans.OutputChange) Change {
	act := "update"
	switch {
	case isNull(o.Before) && isNull(o.After):
		act = "no-op"
	case isNull(o.Before):
		act = "create"
	case isNull(o.After):
		act = "delete"
	case o.After.IsWhollyKnown() && sdk.ValuesEqual(o.Before, o.After):
		act = "no-op"
	}
	var before, after, unk any = nil, nil, false
	if !isNull(o.Before) {
		before, _ = jsonvalue.Value(o.Before)
	}
	if !isNull(o.After) {
		after, unk = jsonvalue.Value(o.After)
	}
	var bs, as any = false, false
	if o.Sensitive {
		before, after, bs, as = nil, nil, true, true
	}
	return Change{Actions: []string{act}, Before: before, After: after, AfterUnknown: unk,
		BeforeSensitive: bs, AfterSensitive: as}
}

func newChange(a jsonstate.Addr, provider, typ string) ResourceChange {
	rc := ResourceChange{Address: a.Address, ModuleAddress: a.Module, Mode: jsonstate.ManagedMode,
		Type: a.Type, Name: a.Name, Index: a.Index, ProviderName: jsonstate.ProviderName(provider, typ)}
	if a.Deposed {
		rc.Deposed = jsonstate.DeposedKey
	}
	return rc
}

// objectMask is a resource's after_unknown: an object, {} when nothing
// is unknown (as Terraform writes it).
func objectMask(unk any) any {
	if unk == false {
		return map[string]any{}
	}
	return unk
}

func isNull(v cty.Value) bool { return v == cty.NilVal || (v.IsKnown() && v.IsNull()) }

func nilIfEmpty(m map[string]jsonstate.Output) map[string]jsonstate.Output {
	if len(m) == 0 {
		return nil
	}
	return m
}
