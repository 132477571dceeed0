package config

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/sparkform/sparkform/engine/addrs"
)

// ModuleCall is a `module "NAME"` block.
type ModuleCall struct {
	Name string
	// Source is the local path as written ("./modules/spark-recipe");
	// SourceDir is it resolved against the calling module's directory.
	Source, SourceDir string
	// ForEach and Count are nil when absent.
	ForEach, Count hcl.Expression
	DependsOn      []hcl.Traversal
	// Args are the input arguments: every attribute but the
	// meta-arguments, by name.
	Args                   map[string]*hcl.Attribute
	DeclRange, SourceRange hcl.Range
}

// Moved is a `moved` block: state recorded at From now belongs to To.
type Moved struct {
	From, To  addrs.Target
	DeclRange hcl.Range
}

var moduleMetaSchema = &hcl.BodySchema{
	Attributes: append([]hcl.AttributeSchema{{Name: "source", Required: true}, {Name: "depends_on"}}, expansionSchema...),
}

func decodeModuleCall(b *hcl.Block, dir string) (*ModuleCall, hcl.Diagnostics) {
	name := b.Labels[0]
	if !hclsyntax.ValidIdentifier(name) {
		return nil, hcl.Diagnostics{badName("module", name, b.LabelRanges[0])}
	}
	content, remain, diags := b.Body.PartialContent(moduleMetaSchema)
	mc := &ModuleCall{Name: name, DeclRange: b.DefRange, Args: map[string]*hcl.Attribute{}}
	mc.ForEach, mc.Count = expansionExprs(content, &diags)
	if a, ok := content.Attributes["source"]; ok {
		mc.SourceRange = a.Expr.Range()
		d := literalString(a, &mc.Source)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if !strings.HasPrefix(mc.Source, "./") && !strings.HasPrefix(mc.Source, "../") {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsupported module source",
					Detail:  fmt.Sprintf("Module %q has source %q: sparkform loads modules from local folders only, written as a relative path starting with ./ or ../ (e.g. \"./modules/spark-recipe\"). Copy a remote module into the configuration's folder.", name, mc.Source),
					Subject: a.Expr.Range().Ptr()})
			} else {
				mc.SourceDir = filepath.Clean(filepath.Join(dir, mc.Source))
			}
		}
	}
	if a, ok := content.Attributes["depends_on"]; ok {
		deps, d := decodeDependsOn(a, moduleDependsOn)
		diags = append(diags, d...)
		mc.DependsOn = append(mc.DependsOn, deps...)
	}
	attrs, d := remain.JustAttributes()
	diags = append(diags, d...)
	for n, a := range attrs {
		mc.Args[n] = a
	}
	return mc, diags
}

var movedSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "from", Required: true}, {Name: "to", Required: true}},
}

func decodeMoved(b *hcl.Block) (*Moved, hcl.Diagnostics) {
	content, diags := b.Body.Content(movedSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	mv := &Moved{DeclRange: b.DefRange}
	parse := func(name string, dst *addrs.Target) bool {
		a := content.Attributes[name]
		tr, d := hcl.AbsTraversalForExpr(a.Expr)
		if d.HasErrors() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid moved address",
				Detail: fmt.Sprintf("%s must be a resource or module address, e.g. kmod_module.display or module.dsv41[\"a\"].kmod_module.display, written without quotes.", name), Subject: a.Expr.Range().Ptr()})
			return false
		}
		t, d := addrs.ParseTargetAny(traversalString(tr))
		if d.HasErrors() {
			for _, x := range d {
				x.Subject = a.Expr.Range().Ptr()
			}
			diags = append(diags, d...)
			return false
		}
		*dst = t
		return true
	}
	okFrom, okTo := parse("from", &mv.From), parse("to", &mv.To)
	if !okFrom || !okTo {
		return nil, diags
	}
	bad := func(detail string) (*Moved, hcl.Diagnostics) {
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid moved block", Detail: detail, Subject: b.DefRange.Ptr()})
	}
	switch {
	case (mv.From.Resource == nil) != (mv.To.Resource == nil):
		return bad("A moved block moves a resource to a resource, or a module to a module; from and to here are one of each.")
	case mv.From.Resource != nil && mv.From.Resource.Type != mv.To.Resource.Type:
		return bad(fmt.Sprintf("A moved block cannot change a resource's type (%s to %s): the provider's record would not fit. Keep the type, or destroy and create.", mv.From.Resource.Type, mv.To.Resource.Type))
	case (mv.From.Key == nil) != (mv.To.Key == nil) && mv.From.Resource != nil:
		return bad("from and to must both name a whole resource, or both one instance (with [KEY]).")
	}
	return mv, diags
}

// traversalString renders an absolute traversal as an address.
func traversalString(tr hcl.Traversal) string {
	var b strings.Builder
	for _, s := range tr {
		switch s := s.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			if k, err := addrs.KeyFromValue(s.Key); err == nil {
				b.WriteString(k.String())
			} else {
				b.WriteString("[?]")
			}
		}
	}
	return b.String()
}

// loadChildren loads the module each call names. A call whose folder is
// already on the path from the root is a cycle, named in the error. A
// folder this load has already loaded without a diagnostic is that
// Module (done): a folder that loads cleanly reaches no cycle, so it
// cannot close one with the calls above it.
func (m *Module) loadChildren(chain []string, done loaded) hcl.Diagnostics {
	var diags hcl.Diagnostics
	names := make([]string, 0, len(m.ModuleCalls))
	for n := range m.ModuleCalls {
		names = append(names, n)
	}
	sort.Strings(names)
	self, _ := filepath.Abs(m.Dir)
	if len(chain) == 0 {
		chain = []string{"root\x00" + self}
	}
	for _, n := range names {
		mc := m.ModuleCalls[n]
		if mc.SourceDir == "" {
			continue
		}
		abs, _ := filepath.Abs(mc.SourceDir)
		link := "module." + n + "\x00" + abs
		for i, c := range chain {
			if _, dir, _ := strings.Cut(c, "\x00"); dir == abs {
				var path []string
				for _, l := range append(chain[i:], link) {
					label, dir, _ := strings.Cut(l, "\x00")
					path = append(path, fmt.Sprintf("%s (%s)", label, dir))
				}
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Module cycle",
					Detail:  fmt.Sprintf("Module %q calls a module that is already being loaded, so it would contain itself forever: %s. Remove the call, or point source at another folder.", n, strings.Join(path, " -> ")),
					Subject: mc.SourceRange.Ptr()})
				abs = ""
				break
			}
		}
		if abs == "" {
			continue
		}
		child, ok := done[abs]
		var d hcl.Diagnostics
		if !ok {
			child, d = loadDir(mc.SourceDir, append(append([]string(nil), chain...), link), done)
			if len(d) == 0 {
				done[abs] = child
			}
		}
		for _, x := range d {
			if x.Summary == "Cannot read configuration directory" || x.Summary == "No configuration files" {
				x.Summary = "Cannot load module " + n
				x.Detail = fmt.Sprintf("Module %q has source %q, which is the folder %s: %s. A module is a folder of *%s files; fix source, or create the module there.",
					n, mc.Source, mc.SourceDir, strings.SplitN(x.Detail, ". ", 2)[0], FileSuffix)
				x.Subject = mc.SourceRange.Ptr()
			}
		}
		diags = append(diags, d...)
		if child.Backend != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Backend in a called module",
				Detail:  fmt.Sprintf("Module %q (%s) declares a backend; only the root module says where state lives. Remove the sparkform block from the module.", n, mc.Source),
				Subject: child.Backend.DeclRange.Ptr()})
		}
		m.Children[n] = child
		for name, f := range child.Files {
			m.Files[name] = f
		}
	}
	return diags
}
