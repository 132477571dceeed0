// This file holds the configuration graph: one vertex per block (locals,
// nodes, resources, outputs), an edge per reference, and what is derived
// from it once (each resource's resource dependencies, and which of them it
// takes only by its own key). Plan, apply, import, validate and `sparkform
// graph` all start here.

package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// configGraph is the dependency graph of the configuration's blocks.
type configGraph struct {
	g *vgraph
	// refs holds each vertex's references, parsed once, as the walk reads
	// them (see walkRef).
	refs map[vertex][]walkRef
	// resourceDeps is, per resource, every resource it depends on
	// (directly, through locals and nodes, or by depends_on).
	resourceDeps map[string][]string
	schemas      map[string]*sdk.ResourceSchema
	// types holds each resource type's value type (its schema's implied
	// type), built once: ImpliedType builds a new type on every call, and
	// a value keeps the type it was made with.
	types map[string]cty.Type
	// sameKeyDeps[B][A]: every reference from resource B to resource A
	// indexes A by B's own each.key or count.index, so B[k] needs only A[k].
	sameKeyDeps map[string]map[string]bool
	// expansions holds the instance keys of every resource block whose
	// for_each/count depends on no resource (known before the walk, see
	// expandStatic); those blocks are walked instance by instance.
	expansions map[string]*config.Expansion
	// decoders prepares each resource body's decoding once for every
	// copy of the graph (validate, plan, apply of one run).
	decoders *config.Decoders
}

// buildConfigGraph parses the references of every block and connects them.
// It needs the schema of every resource type (to find references inside
// resource bodies), so it starts the providers the configuration uses.
//
// The graph depends only on the module and the schemas, so the engine
// builds it once per Module: each call gets its own copy of the shared
// parts with no expansions (a walk's expandStatic fills those in).
func (e *Engine) buildConfigGraph(ctx context.Context) (*configGraph, hcl.Diagnostics) {
	e.graphMu.Lock()
	defer e.graphMu.Unlock()
	if b := e.graph; b != nil && b.mod == e.module {
		cg := *b.cg
		cg.expansions = nil
		return &cg, b.diags
	}
	cg, diags := e.newConfigGraph(ctx)
	if cg != nil && !diags.HasErrors() {
		shared := *cg
		e.graph = &builtGraph{mod: e.module, cg: &shared, diags: diags}
	}
	return cg, diags
}

func (e *Engine) newConfigGraph(ctx context.Context) (*configGraph, hcl.Diagnostics) {
	cg := &configGraph{g: newVGraph(), resourceDeps: map[string][]string{},
		sameKeyDeps: map[string]map[string]bool{}, decoders: &config.Decoders{}}
	var diags hcl.Diagnostics
	if cg.schemas, diags = e.resourceSchemas(ctx); diags.HasErrors() {
		return nil, diags
	}
	// Reported with the graph's own errors, not instead of them.
	ignoreDiags := checkIgnoreChanges(e.module, cg.schemas)
	cg.types = make(map[string]cty.Type, len(cg.schemas))
	for name, s := range cg.schemas {
		cg.types[name] = s.Block.ImpliedType()
	}
	parsed, diags := cg.addBlocks(e.module)
	if diags.HasErrors() {
		return nil, append(diags, ignoreDiags...)
	}
	if diags = append(cg.connectReferences(e.module, parsed), ignoreDiags...); diags.HasErrors() {
		return nil, diags
	}
	cg.refs = walkRefs(parsed)
	for key, r := range e.module.Resources {
		cg.resourceDeps[key] = cg.resourceClosure(resourceV(key))
		if same := sameKeyReferences(r); len(same) > 0 {
			cg.sameKeyDeps[key] = same // most blocks have none: no entry
		}
	}
	return cg, diags
}

// releaseGraph lets go of the configuration graph buildConfigGraph keeps
// for the next phase.
func (e *Engine) releaseGraph() {
	e.graphMu.Lock()
	e.graph = nil
	e.graphMu.Unlock()
}

// releaseBodies lets every resource body go (~2 KB of syntax tree per
// block; config.Resource.ReleaseBody), and the configuration graph that
// holds their decoders: for a destroy, which reads neither (nodeConfig). A
// later walk on this engine builds the graph and parses the bodies again.
//
// Only all at once, before the walks. Letting each block's tree go as a
// walk finished with it (tried in the apply walk and in plans) did not
// lower peak RSS: a 10,000-block apply's rose from ~196 to ~207 MiB
// (medians of 8 runs), a plan's did not move. Likely cause, not measured:
// each block's tree shares heap pages with what stays (its Resource, its
// node expression), so pages freed a few objects each and none went back.
func (e *Engine) releaseBodies() {
	e.releaseGraph()
	for _, r := range e.module.Resources {
		r.ReleaseBody()
	}
}

// releaseRootBodies lets go, before a plan's or apply's walk, the syntax
// of every root block whose decoder needs no body: the block keeps the
// decoder (config.Resource.ReleaseBodyFor), which keeps only the
// expressions it evaluates, and the Body, its attribute map and the
// syntax attributes go (~700 B a block; see TestPlanReleasesRootBodies).
// Nothing in the walk asks for such a body: a provider diagnostic that
// names an attribute parses it again (sdkDiags). A module's blocks keep
// theirs (their instances share it; ReleaseBodyFor refuses).
func (e *Engine) releaseRootBodies(cg *configGraph) {
	for _, r := range e.module.Resources {
		if r.Scope != nil || r.Released() { // a module's body stays anyway
			continue
		}
		s := cg.schemas[r.Addr.Type]
		if s == nil {
			continue
		}
		body := r.Body()
		if r.ReleaseBodyFor(cg.decoders.Get(body, s.Block)) {
			cg.decoders.Forget(body, s.Block)
		}
	}
}

// resourceSchemas fetches the schema of every resource type the module
// uses, in parallel: providers start lazily and concurrently.
func (e *Engine) resourceSchemas(ctx context.Context) (map[string]*sdk.ResourceSchema, hcl.Diagnostics) {
	types := map[string]*config.Resource{}
	for _, r := range e.module.Resources {
		types[r.Addr.Type] = r
	}
	schemas := map[string]*sdk.ResourceSchema{}
	var diags hcl.Diagnostics
	var mu sync.Mutex
	var wg sync.WaitGroup
	for typeName, r := range types {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := e.schemaFor(ctx, typeName)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				rng := r.TypeRange
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown resource type " + typeName,
					Detail: err.Error(), Subject: &rng})
				return
			}
			schemas[typeName] = s
		}()
	}
	wg.Wait()
	return schemas, diags
}

// walkRef is a reference as the walk reads it: what it names and the
// literal key it indexes that with (nil: none). The parsed reference's
// source range and remaining traversal serve only the graph's own
// diagnostics; kept per reference for the whole run they were ~130 B
// each, two per block of a generated chain.
type walkRef struct {
	subject addrs.Referenceable
	key     addrs.InstanceKey
}

// walkRefs is parsed as the walk reads it, one slice per vertex.
func walkRefs(parsed map[vertex][]*addrs.Reference) map[vertex][]walkRef {
	out := make(map[vertex][]walkRef, len(parsed))
	for v, refs := range parsed {
		if len(refs) == 0 {
			continue
		}
		rs := make([]walkRef, len(refs))
		for i, r := range refs {
			rs[i] = walkRef{subject: r.Subject, key: r.Key}
		}
		out[v] = rs
	}
	return out
}

// addBlocks adds a vertex per block and returns the references each makes.
func (cg *configGraph) addBlocks(m *config.Module) (map[vertex][]*addrs.Reference, hcl.Diagnostics) {
	parsed, diags := cg.addValueBlocks(m)
	add := cg.adder(parsed, &diags)
	for key, r := range m.Resources {
		travs := config.ExprReferences(nonNil(r.ForEach, r.Count, r.NodeExpr)...)
		travs = append(travs, r.Scope.Flat(cg.decoderOf(r).References())...)
		travs = append(travs, r.DependsOn...)
		add(resourceV(key), travs)
	}
	for name, o := range m.Outputs {
		add(outputV(name), config.ExprReferences(o.Expr))
	}
	return parsed, diags
}

// adder returns a function that adds a vertex and records the references
// its traversals make in parsed, their diagnostics in diags.
func (cg *configGraph) adder(parsed map[vertex][]*addrs.Reference, diags *hcl.Diagnostics) func(vertex, []hcl.Traversal) {
	return func(v vertex, travs []hcl.Traversal) {
		cg.g.add(v)
		refs, rdiags := addrs.References(travs)
		*diags = append(*diags, rdiags...)
		parsed[v] = refs
	}
}

// addValueBlocks adds a vertex per local and node block, what is evaluated
// before the walk, and returns the references each makes.
func (cg *configGraph) addValueBlocks(m *config.Module) (map[vertex][]*addrs.Reference, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	parsed := map[vertex][]*addrs.Reference{}
	add := cg.adder(parsed, &diags)
	for name, l := range m.Locals {
		add(localV(name), config.ExprReferences(l.Expr))
	}
	for name, n := range m.Nodes {
		travs := config.ExprReferences(nonNil(n.ForEach, n.Count)...)
		if attrs, d := n.Config.JustAttributes(); !d.HasErrors() {
			for _, a := range attrs {
				travs = append(travs, n.Scope.Flat(a.Expr.Variables())...)
			}
		}
		add(nodeV(name), travs)
	}
	return parsed, diags
}

// connectReferences adds an edge per reference and refuses references to
// undeclared blocks and dependency cycles.
func (cg *configGraph) connectReferences(m *config.Module, parsed map[vertex][]*addrs.Reference) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for v, refs := range parsed {
		for _, ref := range refs {
			dep, ok := refVertex(ref)
			switch {
			case !ok:
			case !cg.g.has(dep):
				diags = append(diags, undeclaredRef(dep, ref))
			case dep.kind != outputVertex:
				cg.g.connect(v, dep)
			}
		}
	}
	if diags.HasErrors() {
		return diags
	}
	for _, c := range cg.g.g.Cycles() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Dependency cycle",
			Detail: "These blocks depend on each other, so none can be evaluated first: " +
				strings.Join(append(c, c[0]), " -> ") + ". Break the cycle by removing one of the references.",
			Subject: blockRange(m, cg.g.named(c[0]))})
	}
	return diags
}

// resourceClosure finds the resources v depends on, looking through locals
// and nodes but stopping at the first resource on each path.
func (cg *configGraph) resourceClosure(v vertex) []string {
	seen := map[vertex]bool{}
	var out []string
	stack := cg.g.dependsOn(v)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] {
			continue
		}
		seen[d] = true
		if d.kind == resourceVertex {
			out = append(out, d.addr)
			continue
		}
		stack = append(stack, cg.g.dependsOn(d)...)
	}
	sort.Strings(out)
	return out
}

func nonNil(exprs ...hcl.Expression) []hcl.Expression {
	out := exprs[:0:0]
	for _, e := range exprs {
		if e != nil {
			out = append(out, e)
		}
	}
	return out
}

// refVertex maps a reference to the vertex it depends on; variables,
// each, count and path need no vertex.
func refVertex(ref *addrs.Reference) (vertex, bool) {
	switch s := ref.Subject.(type) {
	case addrs.LocalValue:
		return localV(s.Name), true
	case addrs.NodeBlock:
		return nodeV(s.Name), true
	case addrs.Resource:
		return resourceV(s.String()), true
	}
	return vertex{}, false
}

func undeclaredRef(dep vertex, ref *addrs.Reference) *hcl.Diagnostic {
	rng := ref.SourceRange
	what := "resource"
	switch dep.kind {
	case localVertex:
		what = "local value"
	case nodeVertex:
		what = "node block"
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared " + what,
		Detail:  fmt.Sprintf("There is no %s %q in this configuration. Declare it, or fix the reference.", what, dep.String()),
		Subject: &rng}
}

// blockRange is where the block behind a configuration vertex is declared.
func blockRange(m *config.Module, v vertex) *hcl.Range {
	var r hcl.Range
	switch v.kind {
	case localVertex:
		r = m.Locals[v.addr].DeclRange
	case nodeVertex:
		r = m.Nodes[v.addr].DeclRange
	case outputVertex:
		r = m.Outputs[v.addr].DeclRange
	case resourceVertex:
		if res, ok := m.Resources[v.addr]; ok {
			r = res.DeclRange
		}
	}
	return &r
}

// GraphDOT renders the configuration's dependency graph in DOT.
func (e *Engine) GraphDOT(ctx context.Context) (string, hcl.Diagnostics) {
	cg, diags := e.buildConfigGraph(ctx)
	if diags.HasErrors() {
		return "", diags
	}
	var b strings.Builder
	b.WriteString("digraph sparkform {\n  rankdir = \"RL\";\n  node [shape = box];\n")
	vs := cg.g.vertices()
	sort.Slice(vs, func(i, j int) bool { return vs[i].String() < vs[j].String() })
	for _, v := range vs {
		shape := "box"
		switch v.kind {
		case nodeVertex:
			shape = "component"
		case localVertex, outputVertex:
			shape = "note"
		}
		fmt.Fprintf(&b, "  %q [shape = %s];\n", v.String(), shape)
	}
	for _, v := range vs {
		for _, d := range cg.g.dependsOn(v) {
			fmt.Fprintf(&b, "  %q -> %q;\n", v.String(), d.String())
		}
	}
	b.WriteString("}\n")
	return b.String(), diags
}
