package etcdstore_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/state"
	"github.com/sparkform/sparkform/state/etcdstore"
)

// TestEtcdBackendSchema decodes etcd backend blocks through the registry
// (the etcd backend registers itself): credentials are refused in
// configuration, durations are checked at their argument, -backend-config
// gives lists as a,b.
func TestEtcdBackendSchema(t *testing.T) {
	at := hcl.Range{Filename: "main.sf.hcl", Start: hcl.Pos{Line: 4, Column: 3}}
	block := func(attrs map[string]cty.Value) state.BackendBlock {
		b := state.BackendBlock{Type: "etcd", Attrs: map[string]state.BackendArg{}}
		for k, v := range attrs {
			b.Attrs[k] = state.BackendArg{Value: v, Range: at}
		}
		return b
	}
	env := func(string) string { return "" }
	for _, c := range []struct {
		name      string
		block     state.BackendBlock
		overrides []string
		diag      string
		detail    string
	}{
		{name: "ok", block: block(map[string]cty.Value{"endpoints": cty.ListVal([]cty.Value{cty.StringVal("127.0.0.1:1")}), "lock_ttl": cty.StringVal("3s"), "prefix": cty.StringVal("p")})},
		{name: "endpoints by flag", block: block(nil), overrides: []string{"endpoints=127.0.0.1:1, 127.0.0.1:2", "prefix=p"}},
		{name: "password refused", block: block(map[string]cty.Value{"password": cty.StringVal("hunter2")}),
			diag: "Credentials do not belong in configuration", detail: etcdstore.EnvPassword},
		{name: "bad duration", block: block(map[string]cty.Value{"endpoints": cty.ListVal([]cty.Value{cty.StringVal("a:1")}), "lock_ttl": cty.StringVal("soon")}),
			diag: "Invalid duration"},
		{name: "no endpoints", block: block(nil), diag: "Invalid etcd backend"},
	} {
		t.Run(c.name, func(t *testing.T) {
			be, diags := state.ConfigureBackend(c.block, c.overrides, t.TempDir(), env)
			if c.diag == "" {
				if diags.HasErrors() {
					t.Fatal(diags)
				}
				if _, ok := be.(*etcdstore.Backend); !ok {
					t.Fatalf("backend %T", be)
				}
				return
			}
			if !diags.HasErrors() || diags[0].Summary != c.diag || !strings.Contains(diags[0].Detail, c.detail) {
				t.Fatalf("diags %v, want %q", diags, c.diag)
			}
			if strings.Contains(diags.Error(), "hunter2") {
				t.Errorf("the secret is in the message: %v", diags)
			}
		})
	}
}
