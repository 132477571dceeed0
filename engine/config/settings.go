package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
)

// Backend is the `backend "TYPE" { ... }` block inside the root module's
// `sparkform { }` settings block: where state lives. Its arguments are
// constants (they are needed before variables exist, to read state), kept
// as values with their ranges; the CLI checks them against the backend
// type. No block: the local file.
type Backend struct {
	Type      string
	Attrs     map[string]*BackendAttr
	DeclRange hcl.Range
	TypeRange hcl.Range
}

// BackendAttr is one argument of a backend block.
type BackendAttr struct {
	Name  string
	Value cty.Value
	Range hcl.Range
}

var settingsSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "backend", LabelNames: []string{"type"}}},
}

// decodeSettings reads a `sparkform { }` block.
func decodeSettings(b *hcl.Block) (*Backend, hcl.Diagnostics) {
	content, diags := b.Body.Content(settingsSchema)
	var out *Backend
	for _, bb := range content.Blocks {
		if out != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate backend block",
				Detail:  fmt.Sprintf("A backend was already configured at %s. State lives in one place: keep one backend block.", posString(out.DeclRange)),
				Subject: bb.DefRange.Ptr()})
			continue
		}
		attrs, d := bb.Body.JustAttributes()
		diags = append(diags, d...)
		be := &Backend{Type: bb.Labels[0], Attrs: map[string]*BackendAttr{}, DeclRange: bb.DefRange, TypeRange: bb.LabelRanges[0]}
		for name, a := range attrs {
			v, d := a.Expr.Value(nil)
			if d.HasErrors() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Backend arguments must be constants",
					Detail:  fmt.Sprintf("The backend's %s is needed before variables and resources exist, to read the state. Write a literal value, or pass -backend-config %s=VALUE on the command line.", name, name),
					Subject: a.Expr.Range().Ptr()})
				continue
			}
			be.Attrs[name] = &BackendAttr{Name: name, Value: v, Range: a.Expr.Range()}
		}
		out = be
	}
	return out, diags
}

// LoadBackend reads only the backend of the configuration in dir (the
// `sparkform` blocks of its *.sf.hcl files), for commands that read state
// without evaluating the rest (show, output, state ...). nil, no
// diagnostics: no backend block (the local file), or no configuration.
func LoadBackend(dir string) (*Backend, map[string]*hcl.File, hcl.Diagnostics) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, FileSuffix) && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	p := hclparse.NewParser()
	files := map[string]*hcl.File{}
	var out *Backend
	var diags hcl.Diagnostics
	for _, n := range names {
		path := filepath.Join(dir, n)
		f, d := p.ParseHCLFile(path)
		diags = append(diags, d...)
		if f == nil {
			continue
		}
		files[path] = f
		content, _, _ := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "sparkform"}}})
		for _, b := range content.Blocks {
			be, d := decodeSettings(b)
			diags = append(diags, d...)
			if be == nil {
				continue
			}
			if out != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate backend block",
					Detail:  fmt.Sprintf("A backend was already configured at %s. State lives in one place: keep one backend block.", posString(out.DeclRange)),
					Subject: be.DeclRange.Ptr()})
				continue
			}
			out = be
		}
	}
	return out, files, diags
}
