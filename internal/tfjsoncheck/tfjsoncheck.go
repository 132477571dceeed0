package tfjsoncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
)

// Plan decodes a plan document (show -json PLANFILE) and checks it.
func Plan(b []byte) (*tfjson.Plan, error) {
	var p tfjson.Plan
	p.UseJSONNumber(true) // numbers beyond float64 (output -json writes them exactly)
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("terraform-json cannot read the plan: %w", err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var errs []error
	if p.TerraformVersion == "" {
		errs = append(errs, errors.New("no terraform_version"))
	}
	if p.Timestamp == "" {
		errs = append(errs, errors.New("no timestamp"))
	}
	if p.PlannedValues == nil || p.PlannedValues.RootModule == nil {
		errs = append(errs, errors.New("no planned_values.root_module"))
	} else {
		errs = append(errs, module(p.PlannedValues.RootModule, "", "planned_values")...)
		errs = append(errs, outputs(p.PlannedValues.Outputs, "planned_values")...)
	}
	if p.PriorState == nil {
		errs = append(errs, errors.New("no prior_state"))
	} else if err := p.PriorState.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("prior_state: %w", err))
	} else if p.PriorState.Values != nil && p.PriorState.Values.RootModule != nil {
		errs = append(errs, module(p.PriorState.Values.RootModule, "", "prior_state")...)
	}
	for i, rc := range p.ResourceChanges {
		errs = append(errs, change(rc, fmt.Sprintf("resource_changes[%d]", i), false)...)
	}
	for i, rc := range p.ResourceDrift {
		errs = append(errs, change(rc, fmt.Sprintf("resource_drift[%d]", i), true)...)
	}
	for name, c := range p.OutputChanges {
		where := "output_changes." + name
		if c == nil {
			errs = append(errs, fmt.Errorf("%s: no change", where))
			continue
		}
		errs = append(errs, actions(c, where)...)
		errs = append(errs, hidden(c.Before, c.BeforeSensitive, where+".before")...)
		errs = append(errs, hidden(c.After, c.AfterSensitive, where+".after")...)
	}
	if p.Config != nil {
		if err := p.Config.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("configuration: %w", err))
		}
		if p.Config.RootModule == nil {
			errs = append(errs, errors.New("configuration has no root_module"))
		}
	}
	return &p, errors.Join(errs...)
}

// State decodes a state document (show -json) and checks it.
func State(b []byte) (*tfjson.State, error) {
	var s tfjson.State
	s.UseJSONNumber(true)
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("terraform-json cannot read the state: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Values == nil {
		return &s, nil // no state yet: Terraform writes the version alone
	}
	if s.Values.RootModule == nil {
		return nil, errors.New("values without root_module")
	}
	errs := module(s.Values.RootModule, "", "values")
	errs = append(errs, outputs(s.Values.Outputs, "values")...)
	return &s, errors.Join(errs...)
}

// Outputs decodes `output -json` (every output) and checks it.
func Outputs(b []byte) (map[string]*tfjson.StateOutput, error) {
	var outs map[string]*tfjson.StateOutput
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // as UseJSONNumber for plans and states
	if err := dec.Decode(&outs); err != nil {
		return nil, fmt.Errorf("terraform-json cannot read the outputs: %w", err)
	}
	errs := outputs(outs, "outputs")
	for n, o := range outs {
		if o.Type == (tfjson.StateOutput{}).Type {
			errs = append(errs, fmt.Errorf("outputs.%s: no type", n))
		}
	}
	return outs, errors.Join(errs...)
}

func outputs(outs map[string]*tfjson.StateOutput, where string) []error {
	var errs []error
	for n, o := range outs {
		if o == nil {
			errs = append(errs, fmt.Errorf("%s.outputs.%s: null", where, n))
			continue
		}
		if o.Sensitive && o.Value != nil {
			errs = append(errs, fmt.Errorf("%s.outputs.%s: a sensitive value is written", where, n))
		}
	}
	return errs
}

func module(m *tfjson.StateModule, parent, where string) []error {
	var errs []error
	if parent != "" || m.Address != "" {
		if !strings.HasPrefix(m.Address, "module.") || (parent != "" && !strings.HasPrefix(m.Address, parent+".module.")) {
			errs = append(errs, fmt.Errorf("%s: module %q is not inside %q", where, m.Address, parent))
		}
	}
	for _, r := range m.Resources {
		w := where + " " + r.Address
		errs = append(errs, resource(r.Address, m.Address, string(r.Mode), r.Type, r.Name, r.ProviderName, r.Index, w)...)
		errs = append(errs, hiddenMask(r.AttributeValues, r.SensitiveValues, w)...)
	}
	for _, c := range m.ChildModules {
		errs = append(errs, module(c, m.Address, where)...)
	}
	return errs
}

func change(rc *tfjson.ResourceChange, where string, drift bool) []error {
	if rc == nil {
		return []error{fmt.Errorf("%s: null", where)}
	}
	where += " " + rc.Address
	errs := resource(rc.Address, rc.ModuleAddress, string(rc.Mode), rc.Type, rc.Name, rc.ProviderName, rc.Index, where)
	if rc.Change == nil {
		return append(errs, fmt.Errorf("%s: no change", where))
	}
	c := rc.Change
	errs = append(errs, actions(c, where)...)
	if !drift {
		switch {
		case c.Actions.Create() && c.Before != nil:
			errs = append(errs, fmt.Errorf("%s: create with a before value", where))
		case c.Actions.Delete() && c.After != nil:
			errs = append(errs, fmt.Errorf("%s: delete with an after value", where))
		case (c.Actions.Update() || c.Actions.Replace() || c.Actions.NoOp()) && (c.Before == nil || c.After == nil):
			errs = append(errs, fmt.Errorf("%s: %v without a before and an after value", where, c.Actions))
		}
	}
	errs = append(errs, hidden(c.Before, c.BeforeSensitive, where+" before")...)
	errs = append(errs, hidden(c.After, c.AfterSensitive, where+" after")...)
	return errs
}

func actions(c *tfjson.Change, where string) []error {
	a := c.Actions
	if a.NoOp() || a.Create() || a.Read() || a.Update() || a.Delete() || a.Replace() {
		return nil
	}
	return []error{fmt.Errorf("%s: actions %v are not the format's", where, a)}
}

// resource checks that the parts of an address agree with it.
func resource(addr, mod, mode, typ, name, provider string, index any, where string) []error {
	var errs []error
	if mode != "managed" && mode != "data" {
		errs = append(errs, fmt.Errorf("%s: mode %q", where, mode))
	}
	if typ == "" || name == "" || provider == "" {
		errs = append(errs, fmt.Errorf("%s: type %q, name %q, provider_name %q", where, typ, name, provider))
	}
	want := typ + "." + name
	if mode == "data" {
		want = "data." + want
	}
	if mod != "" {
		want = mod + "." + want
	}
	switch k := index.(type) {
	case nil:
	case string:
		want += "[" + strconv.Quote(k) + "]"
	case float64:
		want += "[" + strconv.FormatFloat(k, 'f', -1, 64) + "]"
	case json.Number:
		want += "[" + k.String() + "]"
	default:
		errs = append(errs, fmt.Errorf("%s: index %v is neither a string nor a number", where, index))
	}
	if addr != want {
		errs = append(errs, fmt.Errorf("%s: address %q, but its parts make %q", where, addr, want))
	}
	return errs
}

// hidden checks sparkform's rule against a value and its sensitive mask
// given as decoded JSON.
func hidden(val, mask any, where string) []error {
	switch m := mask.(type) {
	case bool:
		if m && val != nil {
			return []error{fmt.Errorf("%s: a sensitive value is written", where)}
		}
	case map[string]any:
		v, _ := val.(map[string]any)
		var errs []error
		for k, sm := range m {
			errs = append(errs, hidden(v[k], sm, where+"."+k)...)
		}
		return errs
	case []any:
		v, _ := val.([]any)
		var errs []error
		for i, sm := range m {
			var e any
			if i < len(v) {
				e = v[i]
			}
			errs = append(errs, hidden(e, sm, fmt.Sprintf("%s[%d]", where, i))...)
		}
		return errs
	}
	return nil
}

func hiddenMask(vals map[string]any, mask json.RawMessage, where string) []error {
	if len(mask) == 0 {
		return nil
	}
	var m any
	if err := json.Unmarshal(mask, &m); err != nil {
		return []error{fmt.Errorf("%s: sensitive_values: %v", where, err)}
	}
	if _, ok := m.(map[string]any); !ok {
		return []error{fmt.Errorf("%s: sensitive_values is not an object", where)}
	}
	return hidden(map[string]any(vals), m, where+" values")
}
