package state_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/state"
)

// TestConfigureBackendLocal decodes local backend blocks against the
// registry's schema: the local backend registered by package state itself.
func TestConfigureBackendLocal(t *testing.T) {
	dir := t.TempDir()
	at := hcl.Range{Filename: "main.sf.hcl", Start: hcl.Pos{Line: 3, Column: 5}}
	arg := func(v cty.Value) state.BackendArg { return state.BackendArg{Value: v, Range: at} }
	for _, c := range []struct {
		name      string
		block     state.BackendBlock
		overrides []string
		path      string // the local path, or
		diag      string // the error's summary
	}{
		{name: "default path", block: state.BackendBlock{Type: "local"}, path: filepath.Join(dir, ".sparkform", "state.db")},
		{name: "relative path", block: state.BackendBlock{Type: "local", Attrs: map[string]state.BackendArg{"path": arg(cty.StringVal("s/x.db"))}},
			path: filepath.Join(dir, "s", "x.db")},
		{name: "absolute path", block: state.BackendBlock{Type: "local", Attrs: map[string]state.BackendArg{"path": arg(cty.StringVal("/abs/x.db"))}},
			path: "/abs/x.db"},
		{name: "override wins", block: state.BackendBlock{Type: "local", Attrs: map[string]state.BackendArg{"path": arg(cty.StringVal("a.db"))}},
			overrides: []string{"path=b.db"}, path: filepath.Join(dir, "b.db")},
		{name: "number converts", block: state.BackendBlock{Type: "local", Attrs: map[string]state.BackendArg{"path": arg(cty.NumberIntVal(7))}},
			path: filepath.Join(dir, "7")},
		{name: "unknown type", block: state.BackendBlock{Type: "s3"}, diag: "Unknown backend type"},
		{name: "unknown argument", block: state.BackendBlock{Type: "local", Attrs: map[string]state.BackendArg{"bucket": arg(cty.StringVal("b"))}},
			diag: "Unsupported backend argument"},
		{name: "wrong type", block: state.BackendBlock{Type: "local", Attrs: map[string]state.BackendArg{"path": arg(cty.ListValEmpty(cty.String))}},
			diag: "Invalid backend argument"},
		{name: "bad override", block: state.BackendBlock{Type: "local"}, overrides: []string{"bucket=b"}, diag: "Invalid -backend-config"},
		{name: "override without =", block: state.BackendBlock{Type: "local"}, overrides: []string{"path"}, diag: "Invalid -backend-config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			be, diags := state.ConfigureBackend(c.block, c.overrides, dir, func(string) string { return "" })
			if c.diag != "" {
				if !diags.HasErrors() || diags[0].Summary != c.diag {
					t.Fatalf("diags %v, want %q", diags, c.diag)
				}
				if len(c.block.Attrs) > 0 && len(c.overrides) == 0 && (diags[0].Subject == nil || diags[0].Subject.Start.Line != 3) {
					t.Errorf("diagnostic not at the argument: %v", diags[0].Subject)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if l, ok := be.(state.Local); !ok || l.Path != c.path {
				t.Fatalf("backend %#v, want local at %s", be, c.path)
			}
		})
	}
}

// TestBackendTypesListsLocalFirst: the message of an unknown type names the
// default first.
func TestBackendTypesListsLocalFirst(t *testing.T) {
	if got := state.BackendTypes(); len(got) == 0 || got[0] != "local" {
		t.Fatalf("BackendTypes() = %v", got)
	}
	_, diags := state.ConfigureBackend(state.BackendBlock{Type: "nope"}, nil, t.TempDir(), nil)
	if !strings.Contains(diags.Error(), `"local" (the default file)`) {
		t.Fatalf("%v", diags)
	}
}
