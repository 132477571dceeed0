package jsonconfig

import (
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/internal/command/jsonvalue"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Config is the configuration document.
type Config struct {
	ProviderConfig map[string]ProviderConfig `json:"provider_config,omitempty"`
	RootModule     Module                    `json:"root_module"`
}

// ProviderConfig names one provider the configuration uses. sparkform's
// providers are built in and take no configuration block.
type ProviderConfig struct {
	Name          string `json:"name"`
	FullName      string `json:"full_name,omitempty"`
	ModuleAddress string `json:"module_address,omitempty"`
}

// Module is one module's configuration.
type Module struct {
	Outputs     map[string]Output     `json:"outputs,omitempty"`
	Resources   []Resource            `json:"resources,omitempty"`
	ModuleCalls map[string]ModuleCall `json:"module_calls,omitempty"`
	Variables   map[string]Variable   `json:"variables,omitempty"`
}

// Output is an output block.
type Output struct {
	Sensitive   bool        `json:"sensitive,omitempty"`
	Expression  *Expression `json:"expression,omitempty"`
	Description string      `json:"description,omitempty"`
}

// Variable is a variable block.
type Variable struct {
	Default     any    `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
	Sensitive   bool   `json:"sensitive,omitempty"`
}

// Resource is a resource block.
type Resource struct {
	Address           string                `json:"address"`
	Mode              string                `json:"mode"`
	Type              string                `json:"type"`
	Name              string                `json:"name"`
	ProviderConfigKey string                `json:"provider_config_key"`
	Expressions       map[string]Expression `json:"expressions,omitempty"`
	SchemaVersion     uint64                `json:"schema_version"`
	CountExpression   *Expression           `json:"count_expression,omitempty"`
	ForEachExpression *Expression           `json:"for_each_expression,omitempty"`
	DependsOn         []string              `json:"depends_on,omitempty"`
}

// ModuleCall is a module block and the module it calls.
type ModuleCall struct {
	Source            string                `json:"source"`
	Expressions       map[string]Expression `json:"expressions,omitempty"`
	CountExpression   *Expression           `json:"count_expression,omitempty"`
	ForEachExpression *Expression           `json:"for_each_expression,omitempty"`
	Module            Module                `json:"module"`
	DependsOn         []string              `json:"depends_on,omitempty"`
}

// Expression is what an expression refers to. A nested block is written
// as a list of objects of expressions, one per block (Terraform's form).
type Expression struct {
	References []string `json:"references,omitempty"`
}

// Marshal is the document of mod, the root module as loaded.
func Marshal(mod *config.Module) *Config {
	c := &Config{ProviderConfig: map[string]ProviderConfig{}}
	c.RootModule = module(mod, "", c.ProviderConfig)
	if len(c.ProviderConfig) == 0 {
		c.ProviderConfig = nil
	}
	return c
}

func module(mod *config.Module, path string, providers map[string]ProviderConfig) Module {
	m := Module{}
	if len(mod.Variables) > 0 {
		m.Variables = map[string]Variable{}
		for n, v := range mod.Variables {
			jv := Variable{Description: v.Description, Sensitive: v.Sensitive}
			if v.Default != cty.NilVal && !v.Sensitive && !v.Default.IsNull() {
				jv.Default, _ = jsonvalue.Value(v.Default)
			}
			m.Variables[n] = jv
		}
	}
	if len(mod.Outputs) > 0 {
		m.Outputs = map[string]Output{}
		for n, o := range mod.Outputs {
			m.Outputs[n] = Output{Sensitive: o.Sensitive, Description: o.Description, Expression: expression(o.Expr)}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(mod.Resources)) {
		r := mod.Resources[k]
		prov := sdk.ProviderNameOf(r.Addr.Type)
		key := prov
		if path != "" {
			key = path + ":" + prov
		}
		if _, ok := providers[key]; !ok {
			providers[key] = ProviderConfig{Name: prov, FullName: prov, ModuleAddress: path}
		}
		jr := Resource{Address: r.Addr.Type + "." + r.Addr.Name, Mode: "managed", Type: r.Addr.Type, Name: r.Addr.Name,
			ProviderConfigKey: key, CountExpression: expression(r.Count), ForEachExpression: expression(r.ForEach),
			DependsOn: traversals(r.DependsOn), Expressions: map[string]Expression{}}
		if r.NodeExpr != nil {
			if e := expression(r.NodeExpr); e != nil {
				jr.Expressions["node"] = *e
			}
		}
		if b := r.Body(); b != nil {
			for n, e := range bodyExpressions(b) {
				jr.Expressions[n] = e
			}
		}
		if len(jr.Expressions) == 0 {
			jr.Expressions = nil
		}
		m.Resources = append(m.Resources, jr)
	}
	if len(mod.ModuleCalls) > 0 {
		m.ModuleCalls = map[string]ModuleCall{}
		for n, call := range mod.ModuleCalls {
			mc := ModuleCall{Source: call.Source, CountExpression: expression(call.Count), ForEachExpression: expression(call.ForEach),
				DependsOn: traversals(call.DependsOn)}
			if len(call.Args) > 0 {
				mc.Expressions = map[string]Expression{}
				for an, a := range call.Args {
					if e := expression(a.Expr); e != nil {
						mc.Expressions[an] = *e
					} else {
						mc.Expressions[an] = Expression{}
					}
				}
			}
			if child := mod.Children[n]; child != nil {
				childPath := "module." + n
				if path != "" {
					childPath = path + "." + childPath
				}
				mc.Module = module(child, childPath, providers)
			}
			m.ModuleCalls[n] = mc
		}
	}
	return m
}

// metaArgs are the arguments the engine reads itself, written apart (or
// not at all: lifecycle).
var metaArgs = map[string]bool{"node": true, "count": true, "for_each": true, "depends_on": true, "lifecycle": true, "provider": true}

// bodyExpressions are the arguments of a resource body: each attribute's
// expression, each nested block type as a list of its blocks' own.
func bodyExpressions(b hcl.Body) map[string]Expression {
	sb, ok := b.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	out := map[string]Expression{}
	for n, a := range sb.Attributes {
		if metaArgs[n] {
			continue
		}
		if e := expression(a.Expr); e != nil {
			out[n] = *e
		} else {
			out[n] = Expression{}
		}
	}
	// Nested blocks: their references, merged under the block type (the
	// format's list of objects per block would need the schema to tell a
	// block from an attribute of object type).
	for _, blk := range sb.Blocks {
		if metaArgs[blk.Type] {
			continue
		}
		e := out[blk.Type]
		for _, ex := range bodyExpressions(blk.Body) {
			e.References = appendNew(e.References, ex.References...)
		}
		out[blk.Type] = e
	}
	return out
}

// expression is what e refers to; nil for no expression.
func expression(e hcl.Expression) *Expression {
	if e == nil {
		return nil
	}
	return &Expression{References: references(e.Variables())}
}

// references renders traversals as the format does: each as written up
// to its last literal step, then its shorter prefixes down to the object
// it names (aws_instance.foo.id, aws_instance.foo).
func references(ts []hcl.Traversal) []string {
	var out []string
	for _, t := range ts {
		parts := traversalParts(t)
		for i := len(parts); i >= 1; i-- {
			// The root alone is not a reference, except for the objects
			// that are whole values (each, count, path: each.key is two).
			if i == 1 && len(parts) > 1 {
				break
			}
			out = appendNew(out, strings.Join(parts[:i], ""))
			if i <= 2 {
				break
			}
		}
	}
	return out
}

func traversals(ts []hcl.Traversal) []string {
	var out []string
	for _, t := range ts {
		out = appendNew(out, strings.Join(traversalParts(t), ""))
	}
	return out
}

// traversalParts is t's steps as written: "var", ".x", "[\"k\"]", "[0]".
func traversalParts(t hcl.Traversal) []string {
	var parts []string
	for _, s := range t {
		switch s := s.(type) {
		case hcl.TraverseRoot:
			parts = append(parts, s.Name)
		case hcl.TraverseAttr:
			parts = append(parts, "."+s.Name)
		case hcl.TraverseIndex:
			k := s.Key
			switch {
			case k.Type() == cty.String:
				parts = append(parts, "["+quote(k.AsString())+"]")
			case k.Type() == cty.Number:
				parts = append(parts, "["+k.AsBigFloat().Text('f', -1)+"]")
			default:
				return parts
			}
		default:
			return parts
		}
	}
	return parts
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func appendNew(list []string, items ...string) []string {
	for _, s := range items {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}
