// This file registers the etcd backend with state (state.RegisterBackend):
// its block's arguments and the credentials it takes only from the
// environment.

package etcdstore

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/state"
)

// BackendName is the etcd backend's label in `backend "etcd" { ... }`.
const BackendName = "etcd"

func init() {
	state.RegisterBackend(BackendName, state.BackendType{
		Schema: state.BackendSchema{
			Args: map[string]cty.Type{"endpoints": cty.List(cty.String), "prefix": cty.String, "lock_ttl": cty.String,
				"dial_timeout": cty.String, "request_timeout": cty.String},
			Secrets: map[string]string{
				"username": EnvUser, "user": EnvUser, "password": EnvPassword,
				"cacert": EnvCACert, "ca_cert": EnvCACert, "ca_file": EnvCACert,
				"cert": EnvCert, "cert_file": EnvCert, "key": EnvKey, "key_file": EnvKey,
			},
		},
		New: configureBackend,
	})
}

// configureBackend builds the etcd backend from its block (state.BackendType.New).
func configureBackend(c state.BackendConfig) (state.Backend, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	cfg := Config{LockTTL: c.Duration("lock_ttl", &diags), DialTimeout: c.Duration("dial_timeout", &diags),
		RequestTimeout: c.Duration("request_timeout", &diags), Endpoints: c.Strings("endpoints")}
	cfg.Prefix, _ = c.String("prefix")
	if diags.HasErrors() {
		return nil, diags
	}
	if err := cfg.ConfigFromEnv(c.Getenv); err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "etcd backend", Detail: err.Error() + ".", Subject: c.DeclRange.Ptr()}}
	}
	b, err := New(cfg)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid etcd backend",
			Detail: err.Error() + ". Set it in the backend block or with -backend-config KEY=VALUE.", Subject: c.DeclRange.Ptr()}}
	}
	return b, nil
}
