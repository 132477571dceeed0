package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/state"
	"github.com/sparkform/sparkform/state/etcdstore"
)

// backendArgs are the arguments each backend type takes. TLS material and
// credentials are not among them: they come from the environment only, so
// they never land in config, state or plan files.
var backendArgs = map[string]map[string]cty.Type{
	"local": {"path": cty.String},
	"etcd": {"endpoints": cty.List(cty.String), "prefix": cty.String, "lock_ttl": cty.String,
		"dial_timeout": cty.String, "request_timeout": cty.String},
}

var secretArgs = map[string]string{
	"username": etcdstore.EnvUser, "user": etcdstore.EnvUser, "password": etcdstore.EnvPassword,
	"cacert": etcdstore.EnvCACert, "ca_cert": etcdstore.EnvCACert, "ca_file": etcdstore.EnvCACert,
	"cert": etcdstore.EnvCert, "cert_file": etcdstore.EnvCert, "key": etcdstore.EnvKey, "key_file": etcdstore.EnvKey,
}

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

func (m *meta) buildBackend(be *config.Backend) (state.Backend, hcl.Diagnostics) {
	local := state.Local{Path: m.StatePath()}
	if be == nil {
		if len(m.backendConfig) > 0 {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "-backend-config without a backend block",
				Detail: "-backend-config overrides arguments of the backend block in `sparkform { backend \"etcd\" { ... } }`; the configuration has none, so state is the local file. Add the block first."}}
		}
		return local, nil
	}
	schema, ok := backendArgs[be.Type]
	if !ok {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown backend type",
			Detail: fmt.Sprintf("sparkform keeps state in %q (the default file) or %q; not %q.", "local", "etcd", be.Type), Subject: be.TypeRange.Ptr()}}
	}
	vals := map[string]cty.Value{}
	var diags hcl.Diagnostics
	for name, a := range be.Attrs {
		if env, ok := secretArgs[name]; ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Credentials do not belong in configuration",
				Detail:  fmt.Sprintf("TLS files and credentials for the %s backend come from the environment only (%s here), so they never land in configuration, state or plan files. Remove %s and set %s.", be.Type, env, name, env),
				Subject: a.Range.Ptr()})
			continue
		}
		ty, ok := schema[name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsupported backend argument",
				Detail:  fmt.Sprintf("The %s backend takes %s; not %q.", be.Type, strings.Join(slices.Sorted(maps.Keys(schema)), ", "), name),
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
		vals[name] = v
	}
	for _, kv := range m.backendConfig {
		name, raw, ok := strings.Cut(kv, "=")
		ty, known := schema[name]
		if !ok || !known {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -backend-config",
				Detail: fmt.Sprintf("-backend-config takes KEY=VALUE with KEY one of the %s backend's arguments (%s); got %q. Credentials come from the environment.", be.Type, strings.Join(slices.Sorted(maps.Keys(schema)), ", "), kv)})
			continue
		}
		if ty.IsListType() {
			var l []cty.Value
			for _, e := range strings.Split(raw, ",") {
				if e = strings.TrimSpace(e); e != "" {
					l = append(l, cty.StringVal(e))
				}
			}
			if len(l) == 0 {
				vals[name] = cty.ListValEmpty(cty.String)
			} else {
				vals[name] = cty.ListVal(l)
			}
		} else {
			vals[name] = cty.StringVal(raw)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	dur := func(name string) time.Duration {
		v, ok := vals[name]
		if !ok {
			return 0
		}
		d, err := time.ParseDuration(v.AsString())
		if err != nil || d <= 0 {
			var subj *hcl.Range
			if a := be.Attrs[name]; a != nil {
				subj = a.Range.Ptr()
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid duration",
				Detail: fmt.Sprintf("%s must be a duration such as \"15s\"; got %q.", name, v.AsString()), Subject: subj})
		}
		return d
	}
	switch be.Type {
	case "local":
		if v, ok := vals["path"]; ok {
			p := v.AsString()
			if !filepath.IsAbs(p) {
				p = filepath.Join(m.Dir(), p)
			}
			local.Path = p
		}
		return local, nil
	default: // etcd
		cfg := etcdstore.Config{LockTTL: dur("lock_ttl"), DialTimeout: dur("dial_timeout"), RequestTimeout: dur("request_timeout")}
		if v, ok := vals["prefix"]; ok {
			cfg.Prefix = v.AsString()
		}
		if v, ok := vals["endpoints"]; ok {
			for _, e := range v.AsValueSlice() {
				cfg.Endpoints = append(cfg.Endpoints, e.AsString())
			}
		}
		if diags.HasErrors() {
			return nil, diags
		}
		if err := cfg.ConfigFromEnv(os.Getenv); err != nil {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "etcd backend", Detail: err.Error() + ".", Subject: be.DeclRange.Ptr()}}
		}
		b, err := etcdstore.New(cfg)
		if err != nil {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid etcd backend",
				Detail: err.Error() + ". Set it in the backend block or with -backend-config KEY=VALUE.", Subject: be.DeclRange.Ptr()}}
		}
		return b, nil
	}
}
