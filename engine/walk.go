package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/graph"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Vertex names in the configuration graph.
func localVertex(name string) string  { return "local." + name }
func nodeVertex(name string) string   { return "node." + name }
func outputVertex(name string) string { return "output." + name }

// configGraph is the dependency graph of the configuration's blocks:
// locals, nodes, resources ("type.name") and outputs.
type configGraph struct {
	g *graph.Graph
	// refs holds each vertex's references, parsed once.
	refs map[string][]*addrs.Reference
	// resourceDeps is, per resource, every resource it depends on
	// (directly, through locals and nodes, or by depends_on).
	resourceDeps map[string][]string
	schemas      map[string]*sdk.ResourceSchema
	// precise[B][A]: every reference from resource B to resource A indexes
	// A by B's own each.key or count.index, so B[k] needs only A[k].
	precise map[string]map[string]bool
	// expansions holds the instance keys of every resource block whose
	// for_each/count depends on no resource (known before the walk); those
	// blocks are walked instance by instance.
	expansions map[string]*config.Expansion
	// instances maps an instance vertex to its block and key.
	instances map[string]*instanceVertex
}

// buildConfigGraph parses the references of every block and connects them.
// It needs the schema of every resource type (to find references inside
// resource bodies), so it starts the providers the configuration uses.
func (e *Engine) buildConfigGraph(ctx context.Context) (*configGraph, hcl.Diagnostics) {
	m := e.Module
	cg := &configGraph{g: graph.New(), refs: map[string][]*addrs.Reference{}, resourceDeps: map[string][]string{},
		schemas: map[string]*sdk.ResourceSchema{}, precise: map[string]map[string]bool{}}
	var diags hcl.Diagnostics

	// Fetch schemas for every type in parallel: providers start lazily and
	// concurrently.
	types := map[string]*config.Resource{}
	for _, r := range m.Resources {
		types[r.Addr.Type] = r
	}
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
			cg.schemas[typeName] = s
		}()
	}
	wg.Wait()
	if diags.HasErrors() {
		return nil, diags
	}

	add := func(v string, travs []hcl.Traversal) {
		cg.g.Add(v)
		refs, rdiags := addrs.References(travs)
		diags = append(diags, rdiags...)
		cg.refs[v] = refs
	}
	for name, l := range m.Locals {
		add(localVertex(name), config.ExprReferences(l.Expr))
	}
	for name, n := range m.Nodes {
		travs := config.ExprReferences(nonNil(n.ForEach, n.Count)...)
		if attrs, d := n.Config.JustAttributes(); !d.HasErrors() {
			for _, a := range attrs {
				travs = append(travs, a.Expr.Variables()...)
			}
		}
		add(nodeVertex(name), travs)
	}
	for key, r := range m.Resources {
		travs := config.ExprReferences(nonNil(r.ForEach, r.Count, r.NodeExpr)...)
		travs = append(travs, config.BodyReferences(r.Config, cg.schemas[r.Addr.Type].Block)...)
		travs = append(travs, r.DependsOn...)
		add(key, travs)
	}
	for name, o := range m.Outputs {
		add(outputVertex(name), config.ExprReferences(o.Expr))
	}
	if diags.HasErrors() {
		return nil, diags
	}
	for v, refs := range cg.refs {
		for _, ref := range refs {
			dep, ok := refVertex(ref)
			if !ok {
				continue
			}
			if !cg.g.Has(dep) {
				diags = append(diags, undeclaredRef(dep, ref))
				continue
			}
			if strings.HasPrefix(dep, "output.") {
				continue
			}
			cg.g.Connect(v, dep)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	if cycles := cg.g.Cycles(); len(cycles) > 0 {
		for _, c := range cycles {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Dependency cycle",
				Detail: "These blocks depend on each other, so none can be evaluated first: " +
					strings.Join(append(c, c[0]), " -> ") + ". Break the cycle by removing one of the references.",
				Subject: blockRange(m, c[0])})
		}
		return nil, diags
	}
	for key, r := range m.Resources {
		cg.resourceDeps[key] = cg.resourceClosure(key)
		cg.precise[key] = sameKeyReferences(r)
	}
	return cg, diags
}

// resourceClosure finds the resources v depends on, looking through locals
// and nodes but stopping at the first resource on each path.
func (cg *configGraph) resourceClosure(v string) []string {
	seen := map[string]bool{}
	var out []string
	stack := cg.g.DependsOn(v)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[d] {
			continue
		}
		seen[d] = true
		if isResourceVertex(d) {
			out = append(out, d)
			continue
		}
		stack = append(stack, cg.g.DependsOn(d)...)
	}
	sort.Strings(out)
	return out
}

func isResourceVertex(v string) bool {
	return !strings.HasPrefix(v, "local.") && !strings.HasPrefix(v, "node.") && !strings.HasPrefix(v, "output.")
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
func refVertex(ref *addrs.Reference) (string, bool) {
	switch s := ref.Subject.(type) {
	case addrs.LocalValue:
		return localVertex(s.Name), true
	case addrs.NodeBlock:
		return nodeVertex(s.Name), true
	case addrs.Resource:
		return s.String(), true
	}
	return "", false
}

func undeclaredRef(dep string, ref *addrs.Reference) *hcl.Diagnostic {
	rng := ref.SourceRange
	what := "resource"
	switch {
	case strings.HasPrefix(dep, "local."):
		what = "local value"
	case strings.HasPrefix(dep, "node."):
		what = "node block"
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared " + what,
		Detail:  fmt.Sprintf("There is no %s %q in this configuration. Declare it, or fix the reference.", what, dep),
		Subject: &rng}
}

func blockRange(m *config.Module, v string) *hcl.Range {
	var r hcl.Range
	switch {
	case strings.HasPrefix(v, "local."):
		r = m.Locals[strings.TrimPrefix(v, "local.")].DeclRange
	case strings.HasPrefix(v, "node."):
		r = m.Nodes[strings.TrimPrefix(v, "node.")].DeclRange
	case strings.HasPrefix(v, "output."):
		r = m.Outputs[strings.TrimPrefix(v, "output.")].DeclRange
	default:
		if res, ok := m.Resources[v]; ok {
			r = res.DeclRange
		}
	}
	return &r
}

// expansionMode says how a block's instances are addressed.
type expansionMode int

const (
	singleMode expansionMode = iota
	forEachMode
	countMode
)

// blockValues holds the values of one block's instances, for references.
type blockValues struct {
	mu   sync.Mutex
	mode expansionMode
	vals map[addrs.InstanceKey]cty.Value
	agg  cty.Value // cached aggregate, NilVal when stale
}

func (b *blockValues) set(k addrs.InstanceKey, v cty.Value) {
	b.mu.Lock()
	b.vals[k] = v
	b.agg = cty.NilVal
	b.mu.Unlock()
}

// value is the block as references see it: the object itself, an object
// of for_each keys, or a tuple of count instances. Built once per change.
func (b *blockValues) value() cty.Value {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.agg != cty.NilVal {
		return b.agg
	}
	switch b.mode {
	case singleMode:
		if v, ok := b.vals[addrs.NoKey]; ok {
			b.agg = v
		} else {
			b.agg = cty.DynamicVal
		}
	case forEachMode:
		m := make(map[string]cty.Value, len(b.vals))
		for k, v := range b.vals {
			m[k.Value().AsString()] = v
		}
		b.agg = cty.ObjectVal(m)
	case countMode:
		vs := make([]cty.Value, len(b.vals))
		for k, v := range b.vals {
			i, _ := k.Value().AsBigFloat().Int64()
			if int(i) < len(vs) {
				vs[i] = v
			}
		}
		for i := range vs {
			if vs[i] == cty.NilVal {
				vs[i] = cty.DynamicVal
			}
		}
		b.agg = cty.TupleVal(vs)
	}
	return b.agg
}

// evaluator holds every value computed so far in one walk.
type evaluator struct {
	mod  *config.Module
	cg   *configGraph
	vars map[string]cty.Value

	mu     sync.RWMutex
	locals map[string]cty.Value
	nodes  map[string]*blockValues
	res    map[string]*blockValues

	baseMu sync.Mutex
	bases  map[string]*hcl.EvalContext
}

func newEvaluator(mod *config.Module, cg *configGraph, vars map[string]cty.Value) *evaluator {
	return &evaluator{mod: mod, cg: cg, vars: vars, locals: map[string]cty.Value{}, nodes: map[string]*blockValues{}, res: map[string]*blockValues{}}
}

func (ev *evaluator) block(m map[string]*blockValues, key string, mode expansionMode) *blockValues {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	b := m[key]
	if b == nil || b.mode != mode {
		b = &blockValues{mode: mode, vals: map[addrs.InstanceKey]cty.Value{}}
		m[key] = b
	}
	return b
}

// scope builds the evaluation context for vertex v from the values of
// exactly what v references, so building it costs O(references), not
// O(configuration).
func (ev *evaluator) scope(v string) *hcl.EvalContext {
	s := &config.Scope{
		BaseDir:   ev.mod.Dir,
		Variables: ev.vars,
		Locals:    map[string]cty.Value{},
		Nodes:     map[string]cty.Value{},
		Resources: map[string]map[string]cty.Value{},
	}
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	for _, ref := range ev.cg.refs[v] {
		switch subj := ref.Subject.(type) {
		case addrs.LocalValue:
			if val, ok := ev.locals[subj.Name]; ok {
				s.Locals[subj.Name] = val
			}
		case addrs.NodeBlock:
			if b, ok := ev.nodes[subj.Name]; ok {
				s.Nodes[subj.Name] = b.value()
			}
		case addrs.Resource:
			if b, ok := ev.res[subj.String()]; ok {
				if s.Resources[subj.Type] == nil {
					s.Resources[subj.Type] = map[string]cty.Value{}
				}
				s.Resources[subj.Type][subj.ScopeKey()] = b.value()
			}
		}
	}
	return s.EvalContext()
}

// instanceScope adds each/count for one instance.
func instanceScope(base *hcl.EvalContext, exp *config.Expansion, k addrs.InstanceKey) *hcl.EvalContext {
	if k == addrs.NoKey || k == nil {
		return base
	}
	child := base.NewChild()
	child.Variables = map[string]cty.Value{}
	if ev, ok := exp.Each[k]; ok {
		child.Variables["each"] = cty.ObjectVal(map[string]cty.Value{"key": ev.Key, "value": ev.Value})
	} else {
		child.Variables["count"] = cty.ObjectVal(map[string]cty.Value{"index": k.Value()})
	}
	return child
}

func modeOf(exp *config.Expansion, forEach, count hcl.Expression) expansionMode {
	switch {
	case forEach != nil:
		return forEachMode
	case count != nil:
		return countMode
	}
	return singleMode
}

// evalLocal evaluates one local value.
func (ev *evaluator) evalLocal(name string) hcl.Diagnostics {
	l := ev.mod.Locals[name]
	val, diags := l.Expr.Value(ev.scope(localVertex(name)))
	ev.mu.Lock()
	ev.locals[name] = val
	ev.mu.Unlock()
	return diags
}

// evalNode expands a node block and decodes each instance's connection.
func (ev *evaluator) evalNode(name string) hcl.Diagnostics {
	n := ev.mod.Nodes[name]
	base := ev.scope(nodeVertex(name))
	exp, diags := config.Expand(n.ForEach, n.Count, base)
	if diags.HasErrors() {
		return diags
	}
	b := ev.block(ev.nodes, name, modeOf(exp, n.ForEach, n.Count))
	for _, k := range exp.Keys {
		nc, d := config.DecodeNode(n.Config, instanceScope(base, exp, k))
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		b.set(k, config.NodeValue(addrs.NodeBlock{Name: name}.Instance(k).String(), nc))
	}
	return diags
}

// evalOutput evaluates one output.
func (ev *evaluator) evalOutput(name string) (cty.Value, hcl.Diagnostics) {
	o := ev.mod.Outputs[name]
	v, diags := o.Expr.Value(ev.scope(outputVertex(name)))
	if config.HasSensitive(v) && !o.Sensitive {
		rng := o.Expr.Range()
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Output refers to sensitive values",
			Detail:  "The value of output \"" + name + "\" comes from sensitive(). Outputs are printed after apply, so one that holds sensitive data must say so: add sensitive = true to the output block (or wrap the value in nonsensitive() if it is safe to show).",
			Subject: &rng})
	}
	v, _ = v.UnmarkDeep()
	return v, diags
}

// resourceInstance is one expanded instance ready for planning or applying.
type resourceInstance struct {
	Addr   string
	Key    addrs.InstanceKey
	Node   sdk.Node
	Config cty.Value
	// SensitiveAttrs are the attributes whose value came from sensitive().
	SensitiveAttrs []string
}

// expandResource evaluates a resource block's instances: keys, node and
// configuration value of each.
func (ev *evaluator) expandResource(ctx context.Context, key string, keep func(addr string) bool) ([]*resourceInstance, *blockValues, hcl.Diagnostics) {
	r := ev.mod.Resources[key]
	base := ev.scope(key)
	exp, diags := config.Expand(r.ForEach, r.Count, base)
	if diags.HasErrors() {
		return nil, nil, diags
	}
	b := ev.block(ev.res, key, modeOf(exp, r.ForEach, r.Count))
	out := make([]*resourceInstance, 0, len(exp.Keys))
	for _, k := range exp.Keys {
		addr := r.Addr.Instance(k).String()
		if keep != nil && !keep(addr) {
			continue
		}
		ri, d := ev.decodeInstance(r, addr, k, instanceScope(base, exp, k))
		diags = append(diags, d...)
		if ri != nil {
			out = append(out, ri)
		}
	}
	return out, b, diags
}

// decodeInstance evaluates one instance's node and configuration in ictx.
func (ev *evaluator) decodeInstance(r *config.Resource, addr string, k addrs.InstanceKey, ictx *hcl.EvalContext) (*resourceInstance, hcl.Diagnostics) {
	schema := ev.cg.schemas[r.Addr.Type]
	nv, diags := r.NodeExpr.Value(ictx)
	if diags.HasErrors() {
		return nil, diags
	}
	nv, _ = nv.UnmarkDeep()
	node, err := nodeFromValue(nv)
	if err != nil {
		rng := r.NodeExpr.Range()
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node",
			Detail: err.Error() + " The node argument takes a node block, e.g. node = node.spark or node = node.spark[each.key].", Subject: &rng})
	}
	cfg, d := config.DecodeResource(r.Config, schema.Block, ictx)
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	cfg, sens := config.TakeSensitive(cfg)
	return &resourceInstance{Addr: addr, Key: k, Node: node, Config: conform(cfg, schema.Block), SensitiveAttrs: sens}, diags
}

// conform makes v an object with exactly the block's attributes (computed
// attributes the decoder left out become null), converted to their types.
func conform(v cty.Value, b *sdk.Block) cty.Value {
	ty := b.ImpliedType()
	if v.IsNull() || !v.IsKnown() {
		return v
	}
	vals := make(map[string]cty.Value, len(ty.AttributeTypes()))
	for name, aty := range ty.AttributeTypes() {
		var av cty.Value
		if v.Type().IsObjectType() && v.Type().HasAttribute(name) {
			av = v.GetAttr(name)
		} else {
			av = cty.NullVal(aty)
		}
		if cv, err := convert.Convert(av, aty); err == nil {
			av = cv
		}
		vals[name] = av
	}
	return cty.ObjectVal(vals)
}

// nodeFromValue reads the connection details out of a node object.
func nodeFromValue(v cty.Value) (sdk.Node, error) {
	var n sdk.Node
	if v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() {
		return n, fmt.Errorf("the value is not a node (got %s).", v.Type().FriendlyName())
	}
	get := func(name string) (cty.Value, bool) {
		if !v.Type().HasAttribute(name) {
			return cty.NilVal, false
		}
		a := v.GetAttr(name)
		if a.IsNull() || !a.IsKnown() {
			return cty.NilVal, false
		}
		return a, true
	}
	str := func(name string) string {
		if a, ok := get(name); ok && a.Type() == cty.String {
			return a.AsString()
		}
		return ""
	}
	if _, ok := get("transport"); !ok {
		return n, fmt.Errorf("the value is an object without the attributes of a node.")
	}
	n.Name = str("name")
	n.Transport = str("transport")
	n.Host = str("host")
	n.User = str("user")
	n.IdentityFile = str("identity_file")
	n.KnownHosts = str("known_hosts")
	if a, ok := get("port"); ok && a.Type() == cty.Number {
		p, _ := a.AsBigFloat().Int64()
		n.Port = int(p)
	}
	if a, ok := get("become"); ok && a.Type() == cty.Bool {
		n.Become = a.True()
	}
	if a, ok := get("identities_only"); ok && a.Type() == cty.Bool {
		n.IdentitiesOnly = a.True()
	}
	n.IdentityFiles = stringsOf(v, "identity_files")
	if a, ok := get("proxy_jump"); ok && a.CanIterateElements() {
		for it := a.ElementIterator(); it.Next(); {
			_, h := it.Element()
			hop := sdk.Node{Name: n.Name + " via " + h.GetAttr("host").AsString(), Transport: "ssh",
				Host: h.GetAttr("host").AsString(), User: h.GetAttr("user").AsString(),
				IdentityFiles: stringsOf(h, "identity_files"), IdentitiesOnly: h.GetAttr("identities_only").True(),
				KnownHosts: n.KnownHosts, Timeout: n.Timeout}
			p, _ := h.GetAttr("port").AsBigFloat().Int64()
			hop.Port = int(p)
			n.ProxyJump = append(n.ProxyJump, hop)
		}
	}
	if s := str("timeout"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			n.Timeout = d
		}
	}
	for i := range n.ProxyJump {
		n.ProxyJump[i].Timeout = n.Timeout
	}
	return n, nil
}

// stringsOf reads a list-of-strings attribute of an object, if it has one.
func stringsOf(v cty.Value, name string) []string {
	if !v.Type().IsObjectType() || !v.Type().HasAttribute(name) {
		return nil
	}
	l := v.GetAttr(name)
	if l.IsNull() || !l.IsKnown() || !l.CanIterateElements() {
		return nil
	}
	var out []string
	for it := l.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.Type() == cty.String && e.IsKnown() && !e.IsNull() {
			out = append(out, e.AsString())
		}
	}
	return out
}
