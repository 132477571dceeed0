// This file holds the backend registry: each backend type registers its
// schema (the arguments its block takes, the credentials it refuses there)
// and how it is built; ConfigureBackend decodes a `backend` block against
// it. The local bbolt backend registers itself here, state/etcdstore in
// its own init: a CLI only imports the backends it ships.

package state

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// BackendSchema is what a backend block of one type takes.
type BackendSchema struct {
	// Args are the arguments, each with its type (a string, or a list of
	// strings: -backend-config KEY=a,b gives a list).
	Args map[string]cty.Type
	// Secrets are arguments refused in configuration, each with the
	// environment variable that carries it instead: TLS material and
	// credentials never land in configuration, state or plan files.
	Secrets map[string]string
}

// BackendType is one kind of backend: its schema and its constructor.
type BackendType struct {
	Schema BackendSchema
	// New builds the backend from its decoded arguments (BackendConfig).
	New func(c BackendConfig) (Backend, hcl.Diagnostics)
}

// BackendConfig is a decoded backend block, given to BackendType.New.
type BackendConfig struct {
	// Type is the block's label.
	Type string
	// Args are the arguments set, each converted to its schema type: those
	// of the block, then those of -backend-config over them.
	Args map[string]cty.Value
	// Ranges are where the block sets each argument (none for one set
	// only by -backend-config).
	Ranges map[string]hcl.Range
	// DeclRange is the block's.
	DeclRange hcl.Range
	// Dir is the working directory: a relative path is relative to it.
	Dir string
	// Getenv reads the environment (os.Getenv in the CLI).
	Getenv func(string) string
}

// String returns a string argument ("" and false when not set).
func (c BackendConfig) String(name string) (string, bool) {
	v, ok := c.Args[name]
	if !ok {
		return "", false
	}
	return v.AsString(), true
}

// Strings returns a list-of-strings argument (nil when not set).
func (c BackendConfig) Strings(name string) []string {
	v, ok := c.Args[name]
	if !ok {
		return nil
	}
	var out []string
	for _, e := range v.AsValueSlice() {
		out = append(out, e.AsString())
	}
	return out
}

// Duration returns a duration argument (0 when not set), appending a
// diagnostic at the argument to diags when it is not a positive duration.
func (c BackendConfig) Duration(name string, diags *hcl.Diagnostics) time.Duration {
	s, ok := c.String(name)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		var subj *hcl.Range
		if r, ok := c.Ranges[name]; ok {
			subj = r.Ptr()
		}
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid duration",
			Detail: fmt.Sprintf("%s must be a duration such as \"15s\"; got %q.", name, s), Subject: subj})
	}
	return d
}

var (
	backendsMu sync.RWMutex
	backends   = map[string]BackendType{}
)

// RegisterBackend makes a backend type known by name (the `backend`
// block's label). A name registered twice panics: it is a programming
// error, found at start.
func RegisterBackend(name string, t BackendType) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[name]; dup {
		panic("state: backend " + name + " registered twice")
	}
	backends[name] = t
}

// BackendTypes are the names of the registered backend types: "local"
// first (the default), then the others sorted.
func BackendTypes() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	names := slices.Sorted(maps.Keys(backends))
	if i := slices.Index(names, LocalBackend); i > 0 {
		names = append(append([]string{LocalBackend}, names[:i]...), names[i+1:]...)
	}
	return names
}

// BackendBlock is a `backend "TYPE" { ... }` block as configuration wrote
// it (engine/config.Backend).
type BackendBlock struct {
	Type                 string
	TypeRange, DeclRange hcl.Range
	Attrs                map[string]BackendArg
}

// BackendArg is one argument of a BackendBlock.
type BackendArg struct {
	Value cty.Value
	Range hcl.Range
}

// ConfigureBackend decodes b against its type's schema, applies overrides
// (-backend-config KEY=VALUE, later wins) and builds the backend. dir is
// the working directory, getenv the environment. Every problem is a
// diagnostic, at the argument where it has one.
func ConfigureBackend(b BackendBlock, overrides []string, dir string, getenv func(string) string) (Backend, hcl.Diagnostics) {
	backendsMu.RLock()
	t, ok := backends[b.Type]
	backendsMu.RUnlock()
	if !ok {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown backend type",
			Detail: fmt.Sprintf("sparkform keeps state in %s; not %q.", typeList(BackendTypes()), b.Type), Subject: b.TypeRange.Ptr()}}
	}
	schema := t.Schema
	argNames := strings.Join(slices.Sorted(maps.Keys(schema.Args)), ", ")
	c := BackendConfig{Type: b.Type, Args: map[string]cty.Value{}, Ranges: map[string]hcl.Range{}, DeclRange: b.DeclRange, Dir: dir, Getenv: getenv}
	var diags hcl.Diagnostics
	for _, name := range slices.Sorted(maps.Keys(b.Attrs)) {
		a := b.Attrs[name]
		if env, ok := schema.Secrets[name]; ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Credentials do not belong in configuration",
				Detail:  fmt.Sprintf("TLS files and credentials for the %s backend come from the environment only (%s here), so they never land in configuration, state or plan files. Remove %s and set %s.", b.Type, env, name, env),
				Subject: a.Range.Ptr()})
			continue
		}
		ty, ok := schema.Args[name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsupported backend argument",
				Detail:  fmt.Sprintf("The %s backend takes %s; not %q.", b.Type, argNames, name),
				Subject: a.Range.Ptr()})
			continue
		}
		v, err := convert.Convert(a.Value, ty)
		if err != nil || v.IsNull() || !v.IsWhollyKnown() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid backend argument",
				Detail:  fmt.Sprintf("%s must be a %s.", name, ty.FriendlyName()),
				Subject: a.Range.Ptr()})
			continue
		}
		c.Args[name], c.Ranges[name] = v, a.Range
	}
	for _, kv := range overrides {
		name, raw, ok := strings.Cut(kv, "=")
		ty, known := schema.Args[name]
		if !ok || !known {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -backend-config",
				Detail: fmt.Sprintf("-backend-config takes KEY=VALUE with KEY one of the %s backend's arguments (%s); got %q. Credentials come from the environment.", b.Type, argNames, kv)})
			continue
		}
		delete(c.Ranges, name) // the value is no longer the block's
		if !ty.IsListType() {
			c.Args[name] = cty.StringVal(raw)
			continue
		}
		var l []cty.Value
		for _, e := range strings.Split(raw, ",") {
			if e = strings.TrimSpace(e); e != "" {
				l = append(l, cty.StringVal(e))
			}
		}
		if len(l) == 0 {
			c.Args[name] = cty.ListValEmpty(cty.String)
		} else {
			c.Args[name] = cty.ListVal(l)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return t.New(c)
}

// typeList is `"local" (the default file) or "etcd"`.
func typeList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
		if n == LocalBackend {
			q[i] += " (the default file)"
		}
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// LocalBackend is the name of the local bbolt backend, the default.
const LocalBackend = "local"

// DefaultLocalPath is where the local backend keeps state in dir when its
// block names no path (and when there is no block).
func DefaultLocalPath(dir string) string { return filepath.Join(dir, ".sparkform", "state.db") }

func init() {
	RegisterBackend(LocalBackend, BackendType{
		Schema: BackendSchema{Args: map[string]cty.Type{"path": cty.String}},
		New: func(c BackendConfig) (Backend, hcl.Diagnostics) {
			p, ok := c.String("path")
			if !ok {
				return Local{Path: DefaultLocalPath(c.Dir)}, nil
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(c.Dir, p)
			}
			return Local{Path: p}, nil
		},
	})
}
