package config

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// NodeConfig is one node instance's connection details.
type NodeConfig struct {
	Transport, Host                string
	Port                           int
	User, IdentityFile, KnownHosts string
	Become                         bool
	Timeout                        time.Duration
}

// Node defaults.
const (
	DefaultTransport = "ssh"
	DefaultPort      = 22
	DefaultTimeout   = 15 * time.Second
)

var nodeSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "transport"}, {Name: "host"}, {Name: "port"}, {Name: "user"},
		{Name: "identity_file"}, {Name: "known_hosts"}, {Name: "become"}, {Name: "timeout"},
	},
}

// checkNodeBody is the load-time structural check: unknown arguments and
// blocks are errors (with HCL's "Did you mean" suggestions).
func checkNodeBody(body hcl.Body) hcl.Diagnostics {
	_, diags := body.Content(nodeSchema)
	return diags
}

// DecodeNode evaluates one node instance's body. Defaults: transport
// "ssh", port 22, the current user, ~/.ssh/known_hosts, timeout 15s.
func DecodeNode(body hcl.Body, ctx *hcl.EvalContext) (NodeConfig, hcl.Diagnostics) {
	nc := NodeConfig{Transport: DefaultTransport, Port: DefaultPort, Timeout: DefaultTimeout}
	content, diags := body.Content(nodeSchema)
	if diags.HasErrors() {
		return nc, diags
	}
	get := func(name string, ty cty.Type) (cty.Value, *hcl.Attribute, bool) {
		a, ok := content.Attributes[name]
		if !ok {
			return cty.NilVal, nil, false
		}
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return cty.NilVal, a, false
		}
		v, _ = v.UnmarkDeep() // connection details are not shown in plans

		if !v.IsWhollyKnown() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Node argument not known in advance",
				Detail:  fmt.Sprintf("The node's %s must be known before anything is applied, because sparkform connects to the node to read its state. Use a variable or a literal instead of a resource attribute.", name),
				Subject: a.Expr.Range().Ptr(), Expression: a.Expr, EvalContext: ctx})
			return cty.NilVal, a, false
		}
		if v.IsNull() {
			return cty.NilVal, a, false // null means "use the default"
		}
		cv, err := convert.Convert(v, ty)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node argument",
				Detail:  fmt.Sprintf("The node's %s must be a %s: %s.", name, ty.FriendlyName(), err),
				Subject: a.Expr.Range().Ptr(), Expression: a.Expr, EvalContext: ctx})
			return cty.NilVal, a, false
		}
		return cv, a, true
	}
	str := func(name string, dst *string) *hcl.Attribute {
		v, a, ok := get(name, cty.String)
		if ok {
			*dst = v.AsString()
		}
		return a
	}

	tAttr := str("transport", &nc.Transport)
	if nc.Transport != "ssh" && nc.Transport != "local" {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node transport",
			Detail:  fmt.Sprintf("transport %q is not supported: use \"ssh\" (the default) or \"local\" (this machine, no SSH).", nc.Transport),
			Subject: rangeOf(tAttr, body)})
	}
	hAttr := str("host", &nc.Host)
	if v, a, ok := get("port", cty.Number); ok {
		bf := v.AsBigFloat()
		p, _ := bf.Int64()
		if !bf.IsInt() || p < 1 || p > 65535 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node port",
				Detail: fmt.Sprintf("port must be a whole number from 1 to 65535, not %s.", bf.Text('f', -1)), Subject: a.Expr.Range().Ptr()})
		} else {
			nc.Port = int(p)
		}
	}
	str("user", &nc.User)
	str("identity_file", &nc.IdentityFile)
	str("known_hosts", &nc.KnownHosts)
	if v, _, ok := get("become", cty.Bool); ok {
		nc.Become = v.True()
	}
	var timeout string
	if a := str("timeout", &timeout); a != nil && timeout != "" {
		d, err := time.ParseDuration(timeout)
		if err != nil || d <= 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node timeout",
				Detail: fmt.Sprintf("timeout %q is not a positive duration: write it like \"15s\", \"2m\" or \"1m30s\".", timeout), Subject: a.Expr.Range().Ptr()})
		} else {
			nc.Timeout = d
		}
	}
	if nc.Transport == "ssh" && nc.Host == "" {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing node host",
			Detail:  "An ssh node needs host = \"NAME_OR_ADDRESS\". For this machine without SSH, set transport = \"local\".",
			Subject: rangeOf(hAttr, body)})
	}
	if nc.User == "" {
		nc.User = currentUser()
	}
	if nc.KnownHosts == "" && nc.Transport == "ssh" {
		nc.KnownHosts = "~/.ssh/known_hosts"
	}
	nc.KnownHosts = expandHome(nc.KnownHosts)
	nc.IdentityFile = expandHome(nc.IdentityFile)
	return nc, diags
}

// rangeOf points at an attribute's value, or else at the block body.
func rangeOf(a *hcl.Attribute, body hcl.Body) *hcl.Range {
	if a != nil {
		return a.Expr.Range().Ptr()
	}
	if r := bodyRange(body); r != nil {
		return r
	}
	return nil
}

// bodyRange is the range of a body when it knows one.
func bodyRange(body hcl.Body) *hcl.Range {
	if body == nil {
		return nil
	}
	r := body.MissingItemRange()
	return &r
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// expandHome replaces a leading ~ with the home directory.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}

// NodeValue is the object bound to node.NAME (or node.NAME[KEY]) in
// expressions; name is its address, e.g. `node.spark["a"]`. Timeout is a
// duration string ("15s").
func NodeValue(name string, nc NodeConfig) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"name":          cty.StringVal(name),
		"transport":     cty.StringVal(nc.Transport),
		"host":          cty.StringVal(nc.Host),
		"port":          cty.NumberIntVal(int64(nc.Port)),
		"user":          cty.StringVal(nc.User),
		"identity_file": cty.StringVal(nc.IdentityFile),
		"known_hosts":   cty.StringVal(nc.KnownHosts),
		"become":        cty.BoolVal(nc.Become),
		"timeout":       cty.StringVal(nc.Timeout.String()),
	})
}
