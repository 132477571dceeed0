package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Validate checks the configuration without variables' values, state or
// nodes: every resource body against its schema and the provider's own
// checks, with every value that is not a literal treated as unknown (as
// `terraform validate` does).
func (e *Engine) Validate(ctx context.Context) hcl.Diagnostics {
	cg, diags := e.buildConfigGraph(ctx)
	if diags.HasErrors() {
		return diags
	}
	unknownScope := &config.Scope{BaseDir: e.Module.Dir, Variables: map[string]cty.Value{}, Locals: map[string]cty.Value{},
		Nodes: map[string]cty.Value{}, Resources: map[string]map[string]cty.Value{}}
	for name, v := range e.Module.Variables {
		ty := v.Type
		if ty == cty.NilType {
			ty = cty.DynamicPseudoType
		}
		unknownScope.Variables[name] = cty.UnknownVal(ty)
	}
	for name := range e.Module.Locals {
		unknownScope.Locals[name] = cty.DynamicVal
	}
	for name := range e.Module.Nodes {
		unknownScope.Nodes[name] = cty.DynamicVal
	}
	for _, r := range e.Module.Resources {
		if unknownScope.Resources[r.Addr.Type] == nil {
			unknownScope.Resources[r.Addr.Type] = map[string]cty.Value{}
		}
		unknownScope.Resources[r.Addr.Type][r.Addr.ScopeKey()] = cty.DynamicVal
	}
	base := unknownScope.EvalContext()
	ictx := base.NewChild()
	ictx.Variables = map[string]cty.Value{
		"each":  cty.ObjectVal(map[string]cty.Value{"key": cty.UnknownVal(cty.String), "value": cty.DynamicVal}),
		"count": cty.ObjectVal(map[string]cty.Value{"index": cty.UnknownVal(cty.Number)}),
	}
	keys := make([]string, 0, len(e.Module.Resources))
	for k := range e.Module.Resources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// for_each and count as far as they are known without values: a list
	// literal is as wrong here as it is at plan.
	for _, key := range keys {
		r := e.Module.Resources[key]
		diags = append(diags, config.CheckExpansion(r.ForEach, r.Count, base)...)
	}
	nodeNames := make([]string, 0, len(e.Module.Nodes))
	for name := range e.Module.Nodes {
		nodeNames = append(nodeNames, name)
	}
	sort.Strings(nodeNames)
	for _, name := range nodeNames {
		n := e.Module.Nodes[name]
		diags = append(diags, config.CheckExpansion(n.ForEach, n.Count, base)...)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, key := range keys {
		r := e.Module.Resources[key]
		schema := cg.schemas[r.Addr.Type]
		cfg, d := config.DecodeResource(r.Config, schema.Block, ictx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if _, d := r.NodeExpr.Value(ictx); d.HasErrors() {
			diags = append(diags, d...)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			prov, err := e.Providers.Provider(ctx, sdk.ProviderNameOf(r.Addr.Type))
			var d hcl.Diagnostics
			if err != nil {
				d = hcl.Diagnostics{errDiag("Cannot start provider "+sdk.ProviderNameOf(r.Addr.Type), err.Error())}
			} else {
				rng := r.DeclRange
				d = sdkDiags(prov.ValidateResourceConfig(ctx, sdk.ValidateRequest{TypeName: r.Addr.Type, Config: conform(cfg, schema.Block)}), key, r.Config, &rng)
			}
			mu.Lock()
			diags = append(diags, d...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for name, l := range e.Module.Locals {
		_, d := l.Expr.Value(base)
		diags = append(diags, onlyErrorsNotUnknown(d, "local."+name)...)
	}
	return diags
}

func onlyErrorsNotUnknown(ds hcl.Diagnostics, _ string) hcl.Diagnostics { return ds }

// GraphDOT renders the configuration's dependency graph in DOT.
func (e *Engine) GraphDOT(ctx context.Context) (string, hcl.Diagnostics) {
	cg, diags := e.buildConfigGraph(ctx)
	if diags.HasErrors() {
		return "", diags
	}
	var b strings.Builder
	b.WriteString("digraph sparkform {\n  rankdir = \"RL\";\n  node [shape = box];\n")
	vs := cg.g.Vertices()
	sort.Strings(vs)
	for _, v := range vs {
		shape := "box"
		switch {
		case strings.HasPrefix(v, "node."):
			shape = "component"
		case strings.HasPrefix(v, "local.") || strings.HasPrefix(v, "output."):
			shape = "note"
		}
		fmt.Fprintf(&b, "  %q [shape = %s];\n", v, shape)
	}
	for _, v := range vs {
		for _, d := range cg.g.DependsOn(v) {
			fmt.Fprintf(&b, "  %q -> %q;\n", v, d)
		}
	}
	b.WriteString("}\n")
	return b.String(), diags
}
