package main

import (
	"os"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/state"
	_ "github.com/sparkform/sparkform/state/etcdstore" // registers the etcd backend
)

// backend is where this working directory's state lives: the sparkform
// block's backend with -backend-config overrides, or the local file.
func (m *meta) backend() (state.Backend, error) {
	if m.be != nil {
		return m.be, nil
	}
	var be *config.Backend
	if m.mod != nil {
		// Parsed already (plan, apply, import): parsing a large
		// configuration again only for its backend block doubled the
		// parser's work and garbage.
		be = m.mod.Backend
	} else {
		var files map[string]*hcl.File
		var ds hcl.Diagnostics
		be, files, ds = config.LoadBackend(m.Dir())
		if m.files == nil {
			m.files = files
		}
		if ds.HasErrors() {
			m.diags(ds)
			return nil, &exitError{1}
		}
	}
	b, ds := m.buildBackend(be)
	if m.diags(ds) {
		return nil, &exitError{1}
	}
	m.be = b
	return b, nil
}

// buildBackend is the backend the block (nil: none) and -backend-config
// say: the backend types and their schemas are state's registry
// (state.RegisterBackend); the local file when there is no block.
func (m *meta) buildBackend(be *config.Backend) (state.Backend, hcl.Diagnostics) {
	if be == nil {
		if len(m.backendConfig) > 0 {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "-backend-config without a backend block",
				Detail: "-backend-config overrides arguments of the backend block in `sparkform { backend \"etcd\" { ... } }`; the configuration has none, so state is the local file. Add the block first."}}
		}
		return state.Local{Path: m.StatePath()}, nil
	}
	b := state.BackendBlock{Type: be.Type, TypeRange: be.TypeRange, DeclRange: be.DeclRange, Attrs: map[string]state.BackendArg{}}
	for name, a := range be.Attrs {
		b.Attrs[name] = state.BackendArg{Value: a.Value, Range: a.Range}
	}
	return state.ConfigureBackend(b, m.backendConfig, m.Dir(), os.Getenv)
}
