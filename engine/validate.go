// This file holds Engine.Validate: the configuration checked without
// variables' values, state or nodes.

package engine

import (
	"context"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
	base := e.unknownScope().EvalContext()
	// Node blocks need no schema: checked even when the graph failed.
	nodeDiags := e.checkNodeBlocks(base)
	if diags.HasErrors() {
		return append(diags, nodeDiags...)
	}
	keys := make([]string, 0, len(e.module.Resources))
	for k := range e.module.Resources {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	diags = append(diags, e.checkExpansions(keys, base)...)
	diags = append(diags, nodeDiags...)
	diags = append(diags, e.validateResources(ctx, cg, keys, base)...)
	for _, l := range e.module.Locals {
		_, d := l.Expr.Value(base)
		diags = append(diags, d...)
	}
	return diags
}

// unknownScope is a scope where every variable, local, node and resource
// is unknown.
func (e *Engine) unknownScope() *config.Scope {
	s := &config.Scope{BaseDir: e.module.Dir, Variables: map[string]cty.Value{}, Locals: map[string]cty.Value{},
		Nodes: map[string]cty.Value{}, Resources: map[string]map[string]cty.Value{}}
	for name, v := range e.module.Variables {
		ty := v.Type
		if ty == cty.NilType {
			ty = cty.DynamicPseudoType
		}
		s.Variables[name] = cty.UnknownVal(ty)
	}
	for name := range e.module.Locals {
		s.Locals[name] = cty.DynamicVal
	}
	for name := range e.module.Nodes {
		s.Nodes[name] = cty.DynamicVal
	}
	for _, r := range e.module.Resources {
		if s.Resources[r.Addr.Type] == nil {
			s.Resources[r.Addr.Type] = map[string]cty.Value{}
		}
		s.Resources[r.Addr.Type][r.Addr.ScopeKey()] = cty.DynamicVal
	}
	return s
}

// checkExpansions checks for_each and count as far as they are known
// without values: a list literal is as wrong here as it is at plan.
func (e *Engine) checkExpansions(keys []string, base *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, key := range keys {
		r := e.module.Resources[key]
		diags = append(diags, config.CheckExpansion(r.ForEach, r.Count, base)...)
	}
	return diags
}

// checkNodeBlocks checks every node block as far as it is known without
// values: for_each/count and the transport.
func (e *Engine) checkNodeBlocks(base *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	nodeNames := make([]string, 0, len(e.module.Nodes))
	for name := range e.module.Nodes {
		nodeNames = append(nodeNames, name)
	}
	sort.Strings(nodeNames)
	nctx := base.NewChild()
	nctx.Variables = map[string]cty.Value{
		"each":  cty.ObjectVal(map[string]cty.Value{"key": cty.UnknownVal(cty.String), "value": cty.DynamicVal}),
		"count": cty.ObjectVal(map[string]cty.Value{"index": cty.UnknownVal(cty.Number)}),
	}
	for _, name := range nodeNames {
		n := e.module.Nodes[name]
		diags = append(diags, config.CheckExpansion(n.ForEach, n.Count, base)...)
		diags = append(diags, config.CheckNodeStatic(n, nctx)...)
	}
	return diags
}

// validateChunk is how many resource bodies validateResources decodes
// and sends before the next ones: their decoded values are live only until
// their batch is checked, not all at once (10 MB at 10,000 blocks).
const validateChunk = 1024

// validateResources decodes every resource body against its schema and
// asks its provider to check it: one batched call per provider and chunk
// of keys (the providers in parallel), in which equal configurations
// travel once. Diagnostics come in the order of one pass: every decoding
// one, then each provider's (in order of first use), key by key.
func (e *Engine) validateResources(ctx context.Context, cg *configGraph, keys []string, base *hcl.EvalContext) hcl.Diagnostics {
	ictx := base.NewChild()
	ictx.Variables = map[string]cty.Value{
		"each":  cty.ObjectVal(map[string]cty.Value{"key": cty.UnknownVal(cty.String), "value": cty.DynamicVal}),
		"count": cty.ObjectVal(map[string]cty.Value{"index": cty.UnknownVal(cty.Number)}),
	}
	var diags hcl.Diagnostics
	v := &validation{results: map[string]hcl.Diagnostics{}, failed: map[string]bool{}}
	keys = sharedBodiesOnce(e.module, cg, keys)
	for len(keys) > 0 {
		n := min(len(keys), validateChunk)
		diags = append(diags, e.validateChunk(ctx, cg, keys[:n], ictx, v)...)
		keys = keys[n:]
	}
	for _, name := range v.names {
		diags = append(diags, v.results[name]...)
	}
	return diags
}

// sharedBodiesOnce keeps, of the resource blocks of module instances that
// share their module's syntax (the block's body, so its node argument
// too, against one schema), the first in keys' order. Validation
// evaluates a body where every name is unknown, so each instance of one
// module block decodes to the same value with the same diagnostics:
// checking it once per module block reports each problem once (naming the
// first instance), and spares a 1,000-instance module's plan validating
// 10,000 bodies for 10.
func sharedBodiesOnce(m *config.Module, cg *configGraph, keys []string) []string {
	type shared struct {
		body  *hclsyntax.Body
		block *sdk.Block
	}
	seen := map[shared]bool{}
	out := keys[:0:0]
	for _, key := range keys {
		r := m.Resources[key]
		if r.Scope == nil { // a root block's syntax is its own
			out = append(out, key)
			continue
		}
		sb, ok := r.Body().(*hclsyntax.Body)
		if !ok {
			out = append(out, key)
			continue
		}
		k := shared{sb, cg.schemas[r.Addr.Type].Block}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, key)
	}
	return out
}

// validation collects the providers' diagnostics across chunks.
type validation struct {
	names   []string // providers in order of first use
	results map[string]hcl.Diagnostics
	failed  map[string]bool // providers that did not start (reported once)
}

// validateChunk decodes keys' bodies and has their providers check them;
// it returns the decoding diagnostics and adds the providers' to v.
func (e *Engine) validateChunk(ctx context.Context, cg *configGraph, keys []string, ictx *hcl.EvalContext, v *validation) hcl.Diagnostics {
	var diags hcl.Diagnostics
	type batch struct {
		keys []string
		reqs []sdk.ValidateRequest
		sens [][]string // each request's sensitive paths (sensitive("literal"))
	}
	byProvider := map[string]*batch{}
	var names []string
	for _, key := range keys {
		r := e.module.Resources[key]
		ctx := ictx
		if r.Scope != nil { // a root block's body may be let go
			ctx = r.Scope.BodyContext(r.Body(), ictx)
		}
		cfg, sens, d := cg.decoderOf(r).Decode(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if _, d := r.NodeExpr.Value(ictx); d.HasErrors() {
			diags = append(diags, d...)
		}
		name := sdk.ProviderNameOf(r.Addr.Type)
		b := byProvider[name]
		if b == nil {
			b = &batch{}
			byProvider[name] = b
			names = append(names, name)
			if _, seen := v.results[name]; !seen {
				v.results[name] = nil
				v.names = append(v.names, name)
			}
		}
		b.keys = append(b.keys, key)
		b.reqs = append(b.reqs, sdk.ValidateRequest{TypeName: r.Addr.Type, Config: cfg})
		b.sens = append(b.sens, sens)
	}
	results := make([]hcl.Diagnostics, len(names))
	failed := make([]bool, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		if v.failed[name] {
			continue
		}
		wg.Go(func() {
			b := byProvider[name]
			prov, d := e.provider(ctx, name)
			if d.HasErrors() {
				results[i], failed[i] = d, true
				return
			}
			var got []sdk.Diagnostics
			if bv, ok := prov.(sdk.BatchValidator); ok {
				got = bv.ValidateResourceConfigs(ctx, b.reqs)
			} else {
				got = make([]sdk.Diagnostics, len(b.reqs))
				for j, req := range b.reqs {
					got[j] = prov.ValidateResourceConfig(ctx, req)
				}
			}
			for j, key := range b.keys {
				r := e.module.Resources[key]
				rng := r.DeclRange
				d := sdkDiags(got[j], key, r.Body, &rng)
				if len(d) > 0 && len(b.sens[j]) > 0 {
					d = redact(d, secretStrings(b.sens[j], b.reqs[j].Config))
				}
				results[i] = append(results[i], d...)
			}
		})
	}
	wg.Wait()
	for i, name := range names {
		v.results[name] = append(v.results[name], results[i]...)
		if failed[i] {
			v.failed[name] = true
		}
	}
	return diags
}
