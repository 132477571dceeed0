package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/sparkform/sparkform/engine/addrs"
)

// FileSuffix is the suffix of configuration files.
const FileSuffix = ".sf.hcl"

// Module is one directory of configuration.
type Module struct {
	Dir string
	// Files holds every parsed file by the filename used in its ranges,
	// for rendering diagnostics with snippets and context. The Body of a
	// large file is empty once loaded (its blocks live on in what was
	// decoded from them); Bytes and Nav are whole.
	Files map[string]*hcl.File
	// VarFiles names the entries of Files that are -var-file files, not
	// configuration: a saved plan carries their values, so they are no
	// part of what makes a plan stale.
	VarFiles  map[string]bool
	Variables map[string]*Variable
	Locals    map[string]*Local
	Outputs   map[string]*Output
	Nodes     map[string]*Node     // by name
	Resources map[string]*Resource // by "type.name"
	// Backend is the sparkform block's backend (nil: the local file).
	Backend *Backend
	// ModuleCalls are the module blocks, by name; Children the modules
	// they call, loaded from their sources (same names).
	ModuleCalls map[string]*ModuleCall
	Children    map[string]*Module
	// Moved are the moved blocks, in file order.
	Moved []*Moved
}

// Variable is a `variable "NAME"` block.
type Variable struct {
	Name, Description string
	// Type is cty.DynamicPseudoType when the block has no type.
	Type cty.Type
	// Default is cty.NilVal when there is none: the variable is required.
	Default     cty.Value
	Sensitive   bool
	Validations []*Validation
	DeclRange   hcl.Range

	typeDefaults *typeexpr.Defaults
}

// Validation is a `validation` block inside a variable.
type Validation struct {
	Condition, ErrorMessage hcl.Expression
	DeclRange               hcl.Range
}

// Local is one attribute of a `locals` block.
type Local struct {
	Name      string
	Expr      hcl.Expression
	DeclRange hcl.Range
}

// Output is an `output "NAME"` block.
type Output struct {
	Name, Description string
	Expr              hcl.Expression
	Sensitive         bool
	DeclRange         hcl.Range
}

// Node is a `node "NAME"` block.
type Node struct {
	Name string
	// ForEach and Count are nil when absent.
	ForEach, Count hcl.Expression
	// Config is the body minus for_each/count: transport, host, ...
	// In a module instance it is the module's, shared by every instance
	// and written in the module's names: decode it in
	// Scope.BodyContext(Config, ctx).
	Config    hcl.Body
	DeclRange hcl.Range
	// Scope is the module instance the block belongs to; nil in the root.
	Scope *InstanceScope
}

// Resource is a `resource "TYPE" "NAME"` block.
type Resource struct {
	Addr           addrs.Resource
	ForEach, Count hcl.Expression
	// NodeExpr is the `node` argument: required, except for the built-in
	// provider's types (sparkform_data), which touch no node; for those
	// an absent node is the local node (see NoNodeExpr). Once a root
	// block's body is let go (ReleaseBodyFor), a plain reference here is
	// kept short: not an *hclsyntax.ScopeTraversalExpr, but it evaluates
	// and names the same (RefNode reads node.NAME from either).
	NodeExpr hcl.Expression
	// NodeBlock, in a module instance, is the flat name of the node block
	// (no count or for_each known) that NodeExpr names for every instance
	// by syntax alone: the module's own node.NAME, or var.X whose argument
	// is such a reference, through any depth of calls, into a variable
	// with no type, defaults or validations (which could change or refuse
	// the value). "" otherwise, and in the root, where NodeExpr itself
	// shows it. The engine then reads that block's node once instead of
	// evaluating the expression per instance.
	NodeBlock string
	DependsOn []hcl.Traversal
	Lifecycle Lifecycle
	// body is the block's body (Body), decoded against the provider's
	// schema (ResourceDecoder, DecodeResource), which skip the
	// meta-arguments (node, for_each, count, depends_on, lifecycle) it
	// also holds. In a module instance it is the module's, shared by every
	// instance and written in the module's names: its references are
	// Scope.Flat(...) of them, and it decodes in Scope.BodyContext(body,
	// ctx). nil while released (ReleaseBody).
	body                 hcl.Body
	DeclRange, TypeRange hcl.Range
	// Scope is the module instance the block belongs to; nil in the root.
	Scope *InstanceScope
	// src is where the body can be parsed again once released; nil for a
	// body that must not be released (see ReleaseBody).
	src *bodySource
	// decoder is the decoder ReleaseBodyFor kept when it let the body go.
	decoder *ResourceDecoder
}

// Lifecycle is a resource's `lifecycle` block.
type Lifecycle struct {
	PreventDestroy, CreateBeforeDestroy bool
	IgnoreChanges                       []hcl.Traversal
	IgnoreAllChanges                    bool
}

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "output", LabelNames: []string{"name"}},
		{Type: "node", LabelNames: []string{"name"}},
		{Type: "resource", LabelNames: []string{"type", "name"}},
		{Type: "sparkform"},
		{Type: "module", LabelNames: []string{"name"}},
		{Type: "moved"},
		// Not sparkform's: decoded only to say what to write instead.
		{Type: "data", LabelNames: []string{"type", "name"}},
	},
}

// Recoverable marks (as hcl.Diagnostic.Extra) an error that leaves the
// rest of the module decoded as if the block were absent, so later
// checks can still run and report the file's other errors with it.
type Recoverable struct{}

// OnlyRecoverable reports whether every error in diags is Recoverable.
func OnlyRecoverable(diags hcl.Diagnostics) bool {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			if _, ok := d.Extra.(Recoverable); !ok {
				return false
			}
		}
	}
	return true
}

// LoadDir parses every *.sf.hcl file in dir, in name order, and the
// modules its module blocks call (recursively).
func LoadDir(dir string) (*Module, hcl.Diagnostics) {
	return loadDir(dir, nil, loaded{})
}

// loaded holds, during one load, each module folder loaded without a
// diagnostic, by absolute path: every call of one folder gets that one
// Module (its syntax is shared by all its instances anyway; see
// flattener.call). A generated configuration of 1,000 module blocks on
// one folder parsed it 1,000 times.
type loaded map[string]*Module

func loadDir(dir string, chain []string, done loaded) (*Module, hcl.Diagnostics) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return newModule(dir), hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read configuration directory",
			Detail: fmt.Sprintf("%s. Run sparkform in a directory with *%s files, or pass -chdir=DIR.", err, FileSuffix)}}
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, FileSuffix) || strings.HasPrefix(n, ".") {
			continue
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return newModule(dir), hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No configuration files",
			Detail: fmt.Sprintf("The directory %s has no *%s files. Write one (see examples/), or pass -chdir=DIR to use another directory.", dir, FileSuffix)}}
	}
	return loadFiles(dir, names, chain, done)
}

func loadFiles(dir string, names []string, chain []string, done loaded) (*Module, hcl.Diagnostics) {
	m := newModule(dir)
	names = append([]string(nil), names...)
	sort.Strings(names)
	var diags hcl.Diagnostics
	for _, n := range names {
		path := n
		if !filepath.IsAbs(n) {
			path = filepath.Join(dir, n)
		}
		src, err := os.ReadFile(path)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read configuration file",
				Detail: err.Error() + "."})
			continue
		}
		f, d := parseConfig(src, path)
		diags = append(diags, d...)
		if f == nil {
			continue
		}
		m.Files[path] = f
		diags = append(diags, m.loadFile(f)...)
		if nav, ok := f.Nav.(blockNav); ok {
			// A large (chunked) file's top-level blocks are decoded:
			// diagnostics need only its bytes and navigation, which
			// keeps no block.
			m.Files[path] = &hcl.File{Body: hcl.EmptyBody(), Bytes: f.Bytes, Nav: nav}
		}
	}
	diags = append(diags, m.loadChildren(chain, done)...)
	return m, diags
}

func newModule(dir string) *Module {
	return &Module{
		Dir:       dir,
		Files:     map[string]*hcl.File{},
		Variables: map[string]*Variable{},
		Locals:    map[string]*Local{},
		Outputs:   map[string]*Output{},
		Nodes:     map[string]*Node{},
		Resources: map[string]*Resource{},

		ModuleCalls: map[string]*ModuleCall{},
		Children:    map[string]*Module{},
	}
}

func (m *Module) loadFile(f *hcl.File) hcl.Diagnostics {
	content, diags := f.Body.Content(fileSchema)
	for _, b := range content.Blocks {
		switch b.Type {
		case "variable":
			v, d := decodeVariable(b)
			diags = append(diags, d...)
			if v == nil {
				continue
			}
			if prev, ok := m.Variables[v.Name]; ok {
				diags = append(diags, duplicate("variable", v.Name, prev.DeclRange, v.DeclRange))
				continue
			}
			m.Variables[v.Name] = v
		case "locals":
			attrs, d := b.Body.JustAttributes()
			diags = append(diags, d...)
			for _, a := range sortedAttrs(attrs) {
				if !hclsyntax.ValidIdentifier(a.Name) {
					diags = append(diags, badName("local value", a.Name, a.NameRange))
					continue
				}
				if prev, ok := m.Locals[a.Name]; ok {
					diags = append(diags, duplicate("local value", a.Name, prev.DeclRange, a.Range))
					continue
				}
				m.Locals[a.Name] = &Local{Name: a.Name, Expr: a.Expr, DeclRange: a.Range}
			}
		case "output":
			o, d := decodeOutput(b)
			diags = append(diags, d...)
			if o == nil {
				continue
			}
			if prev, ok := m.Outputs[o.Name]; ok {
				diags = append(diags, duplicate("output", o.Name, prev.DeclRange, o.DeclRange))
				continue
			}
			m.Outputs[o.Name] = o
		case "node":
			n, d := decodeNodeBlock(b)
			diags = append(diags, d...)
			if n == nil {
				continue
			}
			if prev, ok := m.Nodes[n.Name]; ok {
				diags = append(diags, duplicate("node", n.Name, prev.DeclRange, n.DeclRange))
				continue
			}
			m.Nodes[n.Name] = n
		case "sparkform":
			be, d := decodeSettings(b)
			diags = append(diags, d...)
			if be != nil && m.Backend != nil {
				diags = append(diags, duplicate("backend", be.Type, m.Backend.DeclRange, be.DeclRange))
				continue
			}
			if be != nil {
				m.Backend = be
			}
		case "module":
			mc, d := decodeModuleCall(b, m.Dir)
			diags = append(diags, d...)
			if mc == nil {
				continue
			}
			if prev, ok := m.ModuleCalls[mc.Name]; ok {
				diags = append(diags, duplicate("module", mc.Name, prev.DeclRange, mc.DeclRange))
				continue
			}
			m.ModuleCalls[mc.Name] = mc
		case "moved":
			mv, d := decodeMoved(b)
			diags = append(diags, d...)
			if mv != nil {
				m.Moved = append(m.Moved, mv)
			}
		case "data":
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Data sources are not supported",
				Detail: fmt.Sprintf("sparkform has no data blocks (data %q %q). To read a fact from a node, use a node_command "+
					"resource: its stdout is an attribute other resources can refer to. To name a computed value once, use locals "+
					"or a sparkform_data resource.", b.Labels[0], b.Labels[1]),
				Subject: b.DefRange.Ptr(), Extra: Recoverable{}})
		case "resource":
			r, d := decodeResourceBlock(b)
			diags = append(diags, d...)
			if r == nil {
				continue
			}
			key := r.Addr.String()
			if prev, ok := m.Resources[key]; ok {
				diags = append(diags, duplicate("resource", key, prev.DeclRange, r.DeclRange))
				continue
			}
			r.src = newBodySource(f, b)
			m.Resources[key] = r
		}
	}
	return diags
}

func duplicate(what, name string, prev, cur hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Duplicate %s %q", what, name),
		Detail: fmt.Sprintf("A %s named %q was already declared at %s. Names must be unique in a configuration directory: rename or remove one of them.",
			what, name, posString(prev)),
		Subject: cur.Ptr()}
}

// posString renders where a range starts as file:line:col.
func posString(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

func badName(what, name string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Invalid %s name", what),
		Detail:  fmt.Sprintf("%q is not a valid name: a name starts with a letter or underscore and holds only letters, digits, underscores and dashes.", name),
		Subject: rng.Ptr()}
}

// sortedAttrs returns attrs in source order, so diagnostics are stable.
func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return rangeLess(out[i].Range, out[j].Range) })
	return out
}

func rangeLess(a, b hcl.Range) bool {
	if a.Filename != b.Filename {
		return a.Filename < b.Filename
	}
	return a.Start.Byte < b.Start.Byte
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "description"}, {Name: "type"}, {Name: "default"}, {Name: "sensitive"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true}, {Name: "error_message", Required: true},
	},
}

func decodeVariable(b *hcl.Block) (*Variable, hcl.Diagnostics) {
	name := b.Labels[0]
	if !hclsyntax.ValidIdentifier(name) {
		return nil, hcl.Diagnostics{badName("variable", name, b.LabelRanges[0])}
	}
	v := &Variable{Name: name, Type: cty.DynamicPseudoType, Default: cty.NilVal, DeclRange: b.DefRange}
	content, diags := b.Body.Content(variableSchema)
	if a, ok := content.Attributes["description"]; ok {
		diags = append(diags, literalString(a, &v.Description)...)
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		diags = append(diags, literalBool(a, &v.Sensitive)...)
	}
	if a, ok := content.Attributes["type"]; ok {
		ty, defs, d := typeexpr.TypeConstraintWithDefaults(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Type, v.typeDefaults = ty, defs
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		// A nil context makes HCL reject references and function calls
		// with its own clear "Variables not allowed" diagnostics.
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if v.typeDefaults != nil {
				val = v.typeDefaults.Apply(val)
			}
			cv, err := convert.Convert(val, v.Type)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid default value for variable",
					Detail:  fmt.Sprintf("The default of variable %q does not match its type %s: %s.", name, typeString(v.Type), convErr(err)),
					Subject: a.Expr.Range().Ptr()})
			} else {
				v.Default = cv
			}
		}
	}
	for _, vb := range content.Blocks {
		vc, d := vb.Body.Content(validationSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		val := &Validation{Condition: vc.Attributes["condition"].Expr, ErrorMessage: vc.Attributes["error_message"].Expr, DeclRange: vb.DefRange}
		for _, tr := range val.Condition.Variables() {
			if tr.RootName() != "var" {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference in variable validation",
					Detail: "A validation condition may only refer to input variables (var.NAME), because it is checked before anything else is evaluated.", Subject: tr.SourceRange().Ptr()})
			}
		}
		v.Validations = append(v.Validations, val)
	}
	return v, diags
}

var outputSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "description"}, {Name: "value", Required: true}, {Name: "sensitive"},
	},
}

func decodeOutput(b *hcl.Block) (*Output, hcl.Diagnostics) {
	name := b.Labels[0]
	if !hclsyntax.ValidIdentifier(name) {
		return nil, hcl.Diagnostics{badName("output", name, b.LabelRanges[0])}
	}
	content, diags := b.Body.Content(outputSchema)
	o := &Output{Name: name, DeclRange: b.DefRange}
	if a, ok := content.Attributes["value"]; ok {
		o.Expr = a.Expr
	} else {
		return nil, diags
	}
	if a, ok := content.Attributes["description"]; ok {
		diags = append(diags, literalString(a, &o.Description)...)
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		diags = append(diags, literalBool(a, &o.Sensitive)...)
	}
	return o, diags
}

var expansionSchema = []hcl.AttributeSchema{{Name: "for_each"}, {Name: "count"}}

func decodeNodeBlock(b *hcl.Block) (*Node, hcl.Diagnostics) {
	name := b.Labels[0]
	if !hclsyntax.ValidIdentifier(name) {
		return nil, hcl.Diagnostics{badName("node", name, b.LabelRanges[0])}
	}
	content, remain, diags := b.Body.PartialContent(&hcl.BodySchema{Attributes: expansionSchema})
	n := &Node{Name: name, Config: remain, DeclRange: b.DefRange}
	n.ForEach, n.Count = expansionExprs(content, &diags)
	diags = append(diags, checkNodeBody(remain)...)
	return n, diags
}

var resourceMetaSchema = &hcl.BodySchema{
	Attributes: append([]hcl.AttributeSchema{{Name: "node"}, {Name: "depends_on"}}, expansionSchema...),
	Blocks:     []hcl.BlockHeaderSchema{{Type: "lifecycle"}},
}

// withoutMeta is a resource body as the provider's schema sees it: its
// meta-arguments hidden. A body that sets none is returned as it is; the
// copy is made per decoding setup, not kept.
func withoutMeta(body hcl.Body) hcl.Body {
	if sb, ok := body.(*hclsyntax.Body); ok && !setsMeta(sb) {
		return body
	}
	_, remain, _ := body.PartialContent(resourceMetaSchema)
	return remain
}

// setsMeta says whether sb sets a meta-argument or has a lifecycle block.
func setsMeta(sb *hclsyntax.Body) bool {
	for _, a := range resourceMetaSchema.Attributes {
		if _, ok := sb.Attributes[a.Name]; ok {
			return true
		}
	}
	for _, blk := range sb.Blocks {
		if blk.Type == "lifecycle" {
			return true
		}
	}
	return false
}

var lifecycleSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "prevent_destroy"}, {Name: "create_before_destroy"}, {Name: "ignore_changes"},
	},
}

// NodeOptional reports whether resources of this type may leave out
// `node`: the built-in provider "sparkform" keeps values in state and
// touches no node.
func NodeOptional(typ string) bool { return strings.HasPrefix(typ, "sparkform_") }

// NoNodeExpr stands for an absent `node` argument: the local node, which
// needs no connection, so nothing is reached or checked for it.
func NoNodeExpr(rng hcl.Range) hcl.Expression {
	return hcl.StaticExpr(cty.ObjectVal(map[string]cty.Value{
		"name":      cty.StringVal(""),
		"transport": cty.StringVal("local"),
	}), rng)
}

func decodeResourceBlock(b *hcl.Block) (*Resource, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	typ, name := b.Labels[0], b.Labels[1]
	if !hclsyntax.ValidIdentifier(typ) {
		return nil, hcl.Diagnostics{badName("resource type", typ, b.LabelRanges[0])}
	}
	if addrs.ReservedRoot(typ) {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Reserved resource type name",
			Detail:  fmt.Sprintf("%q is a reserved word of the language (var, local, node, each, count, path, self, data, ...) and cannot be a resource type. Resource types are PROVIDER_THING, e.g. gitkit_checkout.", typ),
			Subject: b.LabelRanges[0].Ptr()}}
	}
	if !hclsyntax.ValidIdentifier(name) {
		return nil, hcl.Diagnostics{badName("resource", name, b.LabelRanges[1])}
	}
	// Config is the block's own body: a copy with the meta-arguments
	// hidden (PartialContent's remain) cost ~0.7 KB per block, kept for
	// the whole run; decoding hides them instead (withoutMeta).
	content, _, diags := b.Body.PartialContent(resourceMetaSchema)
	r := &Resource{Addr: addrs.Resource{Type: typ, Name: name}, body: b.Body, DeclRange: b.DefRange, TypeRange: b.LabelRanges[0]}
	r.ForEach, r.Count = expansionExprs(content, &diags)
	if a, ok := content.Attributes["node"]; ok {
		r.NodeExpr = a.Expr
	} else if NodeOptional(typ) {
		r.NodeExpr = NoNodeExpr(b.DefRange)
	} else {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing node argument",
			Detail:  fmt.Sprintf("Resource %s must say which node it lives on: add node = node.NAME (or node = node.NAME[each.key] for a node block with for_each).", r.Addr),
			Subject: b.DefRange.Ptr()})
	}
	if a, ok := content.Attributes["depends_on"]; ok {
		deps, d := decodeDependsOn(a, resourceDependsOn)
		diags = append(diags, d...)
		r.DependsOn = append(r.DependsOn, deps...)
	}
	for i, lb := range content.Blocks {
		if i > 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate lifecycle block",
				Detail: fmt.Sprintf("Resource %s already has a lifecycle block at %s; merge them into one.", r.Addr, posString(content.Blocks[0].DefRange)), Subject: lb.DefRange.Ptr()})
			continue
		}
		lc, d := lb.Body.Content(lifecycleSchema)
		diags = append(diags, d...)
		if a, ok := lc.Attributes["prevent_destroy"]; ok {
			diags = append(diags, literalBool(a, &r.Lifecycle.PreventDestroy)...)
		}
		if a, ok := lc.Attributes["create_before_destroy"]; ok {
			diags = append(diags, literalBool(a, &r.Lifecycle.CreateBeforeDestroy)...)
		}
		if a, ok := lc.Attributes["ignore_changes"]; ok {
			if hcl.ExprAsKeyword(a.Expr) == "all" {
				r.Lifecycle.IgnoreAllChanges = true
				continue
			}
			exprs, d := hcl.ExprList(a.Expr)
			if d.HasErrors() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid ignore_changes",
					Detail: "ignore_changes takes a list of attribute names, e.g. ignore_changes = [env, mount], or the keyword all.", Subject: a.Expr.Range().Ptr()})
			}
			for _, e := range exprs {
				tr, d := hcl.RelTraversalForExpr(e)
				if d.HasErrors() {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid ignore_changes item",
						Detail: "Each ignore_changes item must be an attribute name of this resource, e.g. env or env[\"TMPDIR\"].", Subject: e.Range().Ptr()})
					continue
				}
				r.Lifecycle.IgnoreChanges = append(r.Lifecycle.IgnoreChanges, tr)
			}
		}
	}
	return r, diags
}

func expansionExprs(content *hcl.BodyContent, diags *hcl.Diagnostics) (forEach, count hcl.Expression) {
	if a, ok := content.Attributes["for_each"]; ok {
		forEach = a.Expr
	}
	if a, ok := content.Attributes["count"]; ok {
		count = a.Expr
		if forEach != nil {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid combination of \"count\" and \"for_each\"",
				Detail:  "A block may use count or for_each, not both. Keep for_each to address instances by key, or count to address them by index.",
				Subject: a.NameRange.Ptr()})
			count = nil
		}
	}
	return forEach, count
}

func literalString(a *hcl.Attribute, dst *string) hcl.Diagnostics {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return diags
	}
	v, err := convert.Convert(v, cty.String)
	if err != nil || !v.IsKnown() || v.IsNull() { // unknown: an expression left broken by a syntax error
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid " + a.Name,
			Detail: fmt.Sprintf("%s must be a literal string.", a.Name), Subject: a.Expr.Range().Ptr()}}
	}
	*dst = v.AsString()
	return nil
}

func literalBool(a *hcl.Attribute, dst *bool) hcl.Diagnostics {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return diags
	}
	v, err := convert.Convert(v, cty.Bool)
	if err != nil || !v.IsKnown() || v.IsNull() {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid " + a.Name,
			Detail: fmt.Sprintf("%s must be true or false.", a.Name), Subject: a.Expr.Range().Ptr()}}
	}
	*dst = v.True()
	return nil
}

func typeString(t cty.Type) string {
	if t == cty.DynamicPseudoType {
		return "any"
	}
	return typeexpr.TypeString(t)
}

// convErr renders a conversion error, with its path when it has one.
func convErr(err error) string {
	if pe, ok := err.(cty.PathError); ok && len(pe.Path) > 0 {
		return fmt.Sprintf("at %s: %s", pathString(pe.Path), pe.Error())
	}
	return err.Error()
}

// pathString renders a cty.Path as HCL: a.b[0]["k"].
func pathString(p cty.Path) string {
	var b strings.Builder
	for i, s := range p {
		switch s := s.(type) {
		case cty.GetAttrStep:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Name)
		case cty.IndexStep:
			if s.Key.Type() == cty.String {
				b.WriteString(addrs.StringKey(s.Key.AsString()).String())
			} else if s.Key.Type() == cty.Number {
				b.WriteString("[" + s.Key.AsBigFloat().Text('f', -1) + "]")
			} else {
				b.WriteString("[...]")
			}
		}
	}
	return b.String()
}

// TraversalPath converts a relative traversal such as env["TMPDIR"] or
// mount[0].source (from ignore_changes) into a cty.Path.
func TraversalPath(t hcl.Traversal) (cty.Path, error) {
	var p cty.Path
	for _, step := range t {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			p = p.GetAttr(s.Name)
		case hcl.TraverseAttr:
			p = p.GetAttr(s.Name)
		case hcl.TraverseIndex:
			p = p.Index(s.Key)
		default:
			return nil, fmt.Errorf("unsupported step %T in %s", step, t.SourceRange())
		}
	}
	return p, nil
}
