package jsonstate

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/internal/command/jsonvalue"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// FormatVersion is the version of the state document: Terraform's state
// representation 1.0, which it still writes.
const FormatVersion = "1.0"

// ManagedMode is the mode of every sparkform resource: sparkform has no
// data blocks (a node_command or sparkform_data resource reads facts).
const ManagedMode = "managed"

// State is the document.
type State struct {
	FormatVersion    string  `json:"format_version"`
	TerraformVersion string  `json:"terraform_version"`
	Values           *Values `json:"values,omitempty"`
	Sparkform        *Extras `json:"sparkform,omitempty"`
}

// Extras are sparkform's facts about the state, under "sparkform".
type Extras struct {
	Lineage string `json:"lineage"`
	Serial  uint64 `json:"serial"`
}

// Values are the outputs and the module tree with its resources.
type Values struct {
	Outputs    map[string]Output `json:"outputs,omitempty"`
	RootModule Module            `json:"root_module"`
}

// Output is one output value: its type always, its value unless it is
// sensitive (sparkform never writes a sensitive value; Terraform does).
type Output struct {
	Sensitive bool            `json:"sensitive"`
	Value     any             `json:"value,omitempty"`
	Type      json.RawMessage `json:"type,omitempty"`
}

// Module is one module instance: its resources and the module instances
// it calls. The root module has no address.
type Module struct {
	Resources    []Resource `json:"resources,omitempty"`
	Address      string     `json:"address,omitempty"`
	ChildModules []Module   `json:"child_modules,omitempty"`
}

// Resource is one resource instance (or a deposed object of one).
type Resource struct {
	Address         string   `json:"address"`
	Mode            string   `json:"mode"`
	Type            string   `json:"type"`
	Name            string   `json:"name"`
	Index           any      `json:"index,omitempty"`
	ProviderName    string   `json:"provider_name"`
	SchemaVersion   uint64   `json:"schema_version"`
	AttributeValues any      `json:"values,omitempty"`
	SensitiveValues any      `json:"sensitive_values,omitempty"`
	DependsOn       []string `json:"depends_on,omitempty"`
	Tainted         bool     `json:"tainted,omitempty"`
	DeposedKey      string   `json:"deposed_key,omitempty"`
	// Sparkform holds the node the instance lives on.
	Sparkform *ResourceExtras `json:"sparkform,omitempty"`

	module string // the module instance address, for Root
}

// ResourceExtras are sparkform's facts about one instance.
type ResourceExtras struct {
	Node string `json:"node,omitempty"`
}

// DeposedKey is the deposed_key of the one object sparkform keeps for a
// create_before_destroy replacement (ADDR#deposed in state): Terraform
// names each deposed object by a random key; sparkform has one at most.
const DeposedKey = "00000000"

// Addr is an instance address split as the format writes it.
type Addr struct {
	// Address is the instance address without a deposed suffix.
	Address string
	// Module is the module instance address ("" in the root).
	Module string
	Type   string
	Name   string
	// Index is the instance key: a string (for_each), a number (count)
	// or nil.
	Index any
	// Deposed is set for a deposed object (ADDR#deposed).
	Deposed bool
}

// ParseAddr splits an instance address as state and plans write it.
func ParseAddr(s string) (Addr, error) {
	a := Addr{}
	if strings.HasSuffix(s, plans.DeposedSuffix) {
		a.Deposed, s = true, strings.TrimSuffix(s, plans.DeposedSuffix)
	}
	ri, ds := addrs.ParseResourceInstance(s)
	if ds.HasErrors() {
		return a, fmt.Errorf("%q is not a resource instance address", s)
	}
	a.Address, a.Module, a.Type, a.Name = s, ri.Resource.Module, ri.Resource.Type, ri.Resource.Name
	switch k := ri.Key.(type) {
	case addrs.StringKey:
		a.Index = string(k)
	case addrs.IntKey:
		a.Index = int(k)
	}
	return a, nil
}

// moduleChain is the addresses of a module instance and its ancestors,
// outermost first: module.a["x"].module.b gives module.a["x"] and
// module.a["x"].module.b.
func moduleChain(mod string) ([]string, error) {
	trav, ds := hclsyntax.ParseTraversalAbs([]byte(mod), "", hcl.InitialPos)
	if ds.HasErrors() {
		return nil, fmt.Errorf("%q is not a module address", mod)
	}
	var path addrs.ModuleInstance
	var out []string
	for i := 0; i < len(trav); {
		if name := stepName(trav[i]); name != "module" || i+1 >= len(trav) {
			return nil, fmt.Errorf("%q is not a module address", mod)
		}
		call, ok := trav[i+1].(hcl.TraverseAttr)
		if !ok {
			return nil, fmt.Errorf("%q is not a module address", mod)
		}
		i += 2
		var key addrs.InstanceKey = addrs.NoKey
		if i < len(trav) {
			if ix, ok := trav[i].(hcl.TraverseIndex); ok {
				k, err := addrs.KeyFromValue(ix.Key)
				if err != nil {
					return nil, fmt.Errorf("%q: %v", mod, err)
				}
				key = k
				i++
			}
		}
		path = path.Child(call.Name, key)
		out = append(out, path.String())
	}
	return out, nil
}

func stepName(t hcl.Traverser) string {
	switch t := t.(type) {
	case hcl.TraverseRoot:
		return t.Name
	case hcl.TraverseAttr:
		return t.Name
	}
	return ""
}

// NewResource is the format's resource for an instance with value v
// (sensitive at paths) that provider serves.
func NewResource(a Addr, provider string, schemaVersion int64, v cty.Value, paths []string) Resource {
	r := Resource{Address: a.Address, Mode: ManagedMode, Type: a.Type, Name: a.Name, Index: a.Index,
		ProviderName: ProviderName(provider, a.Type), module: a.Module}
	if schemaVersion > 0 {
		r.SchemaVersion = uint64(schemaVersion)
	}
	if a.Deposed {
		r.DeposedKey = DeposedKey
	}
	if v != cty.NilVal {
		var unk any
		r.AttributeValues, unk, r.SensitiveValues = jsonvalue.Sensitive(omitUnknowns(v), paths)
		_ = unk
	}
	if r.AttributeValues == nil {
		r.AttributeValues = map[string]any{}
	}
	if r.SensitiveValues == nil || r.SensitiveValues == false {
		r.SensitiveValues = map[string]any{}
	}
	return r
}

// ProviderName is the provider_name of a resource: the provider's name
// as sparkform knows it (docker, gitkit, ...), or the one its type
// implies. Terraform writes a registry address
// (registry.terraform.io/hashicorp/aws); sparkform's providers are built
// in and have none.
func ProviderName(provider, typ string) string {
	if provider != "" {
		return provider
	}
	return sdk.ProviderNameOf(typ)
}

// omitUnknowns drops the unknown attributes of an object (planned_values
// leaves them out, as Terraform does: after_unknown lists them).
func omitUnknowns(v cty.Value) cty.Value {
	if v.IsWhollyKnown() || !v.IsKnown() {
		return v
	}
	out, _ := cty.Transform(v, func(p cty.Path, v cty.Value) (cty.Value, error) {
		if !v.IsKnown() {
			return cty.NullVal(v.Type()), nil
		}
		return v, nil
	})
	return out
}

// Root arranges resources into the module tree: each in the module
// instance its address names, every module instance under its caller,
// resources and modules in address order.
func Root(rs []Resource) Module {
	type node struct {
		m        *Module
		children map[string]*node
	}
	root := &node{m: &Module{}, children: map[string]*node{}}
	chains := map[string][]string{} // a plan's instances are in a few module instances
	for _, r := range rs {
		n := root
		if r.module != "" {
			chain, ok := chains[r.module]
			if !ok {
				var err error
				if chain, err = moduleChain(r.module); err != nil {
					chain = []string{r.module}
				}
				chains[r.module] = chain
			}
			for _, addr := range chain {
				c := n.children[addr]
				if c == nil {
					c = &node{m: &Module{Address: addr}, children: map[string]*node{}}
					n.children[addr] = c
				}
				n = c
			}
		}
		n.m.Resources = append(n.m.Resources, r)
	}
	var build func(n *node) Module
	build = func(n *node) Module {
		m := *n.m
		sort.SliceStable(m.Resources, func(i, j int) bool {
			a, b := m.Resources[i], m.Resources[j]
			if a.Address != b.Address {
				return a.Address < b.Address
			}
			return a.DeposedKey < b.DeposedKey
		})
		for _, k := range slices.Sorted(maps.Keys(n.children)) {
			m.ChildModules = append(m.ChildModules, build(n.children[k]))
		}
		return m
	}
	return build(root)
}

// FromState is the document of a stored state: its records and outputs.
func FromState(meta state.Meta, recs []*state.Resource, outs map[string]state.Output, version string) (*State, error) {
	rs := make([]Resource, 0, len(recs))
	for _, rec := range recs {
		a, err := ParseAddr(rec.Address)
		if err != nil {
			return nil, err
		}
		v, err := engine.ResourceValue(rec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rec.Address, err)
		}
		r := NewResource(a, rec.Provider, rec.SchemaVersion, v, rec.SensitiveAttrs)
		r.DependsOn = rec.Dependencies
		r.Tainted = rec.Status == state.StatusTainted
		var n sdk.Node
		if len(rec.Node) > 0 {
			_ = json.Unmarshal(rec.Node, &n)
		}
		if n.Name != "" {
			r.Sparkform = &ResourceExtras{Node: n.Name}
		}
		rs = append(rs, r)
	}
	o, err := Outputs(outs)
	if err != nil {
		return nil, err
	}
	return &State{
		FormatVersion: FormatVersion, TerraformVersion: version,
		Values:    &Values{Outputs: o, RootModule: Root(rs)},
		Sparkform: &Extras{Lineage: meta.Lineage, Serial: meta.Serial},
	}, nil
}

// Empty is the document of a directory with no state yet, as Terraform
// writes it: a format version and no values.
func Empty(version string) *State {
	return &State{FormatVersion: FormatVersion, TerraformVersion: version}
}

// Outputs is the outputs of a state, as `output -json` and the state
// document write them: sensitive, type and value (none when sensitive).
func Outputs(outs map[string]state.Output) (map[string]Output, error) {
	res := make(map[string]Output, len(outs))
	for name, o := range outs {
		v, err := engine.DecodeValue(o.Value)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", name, err)
		}
		res[name] = NewOutput(v, o.Sensitive)
	}
	return res, nil
}

// NewOutput is one output: its type, and its value unless sensitive.
func NewOutput(v cty.Value, sensitive bool) Output {
	o := Output{Sensitive: sensitive}
	v, _ = v.UnmarkDeep()
	if ty, err := ctyjson.MarshalType(v.Type()); err == nil {
		o.Type = ty
	}
	if !sensitive {
		o.Value, _ = jsonvalue.Value(v)
	}
	return o
}
