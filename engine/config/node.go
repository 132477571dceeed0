package config

import (
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/sparkform/sparkform/internal/sshconfig"
)

// NodeConfig is one node instance's connection details, after ssh_config
// (see DecodeNode).
type NodeConfig struct {
	Transport, Host string
	// HostAlias is the host the block wrote when ssh_config resolved it to
	// another (a Host alias); "" otherwise. For messages.
	HostAlias                      string
	Port                           int
	User, IdentityFile, KnownHosts string
	// SSHConfig is the ssh_config file read ("none": none).
	SSHConfig string
	// IdentityFiles and IdentitiesOnly come from ssh_config; they are
	// used when IdentityFile is not set.
	IdentityFiles  []string
	IdentitiesOnly bool
	// ProxyJump are the hops to the node, the first dialled first.
	ProxyJump []Hop
	Become    bool
	Timeout   time.Duration
}

// Hop is one ProxyJump host, resolved through ssh_config.
type Hop struct {
	Host           string
	Alias          string // the name ProxyJump gave, when it is not Host
	Port           int
	User           string
	IdentityFiles  []string
	IdentitiesOnly bool
}

// DefaultSSHConfig is read when a node does not name an ssh_config file;
// it may be missing.
const DefaultSSHConfig = "~/.ssh/config"

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
		{Name: "ssh_config"},
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
//
// For ssh, host is looked up in the ssh_config file (ssh_config, default
// ~/.ssh/config, "none" for none) as OpenSSH does: an alias gives its
// HostName, and Port, User, IdentityFile, IdentitiesOnly,
// UserKnownHostsFile and ProxyJump apply where the node block does not set
// port, user, identity_file or known_hosts: the block wins.
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
	if d := checkTransport(nc.Transport, rangeOf(tAttr, body)); d != nil {
		diags = append(diags, d)
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
	uAttr := str("user", &nc.User)
	idAttr := str("identity_file", &nc.IdentityFile)
	khAttr := str("known_hosts", &nc.KnownHosts)
	portSet := false
	if a := content.Attributes["port"]; a != nil {
		if v, d := a.Expr.Value(ctx); !d.HasErrors() && !v.IsNull() {
			portSet = true
		}
	}
	scAttr := str("ssh_config", &nc.SSHConfig)
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
	if nc.Transport == "ssh" && nc.Host != "" && !diags.HasErrors() {
		diags = append(diags, applySSHConfig(&nc, body, scAttr, hAttr, portSet, uAttr != nil && nc.User != "", idAttr != nil && nc.IdentityFile != "", khAttr != nil && nc.KnownHosts != "")...)
	}
	if nc.User == "" {
		nc.User = currentUser()
	}
	if nc.KnownHosts == "" && nc.Transport == "ssh" {
		nc.KnownHosts = "~/.ssh/known_hosts"
	}
	nc.KnownHosts = sshconfig.ExpandHome(nc.KnownHosts)
	nc.IdentityFile = sshconfig.ExpandHome(nc.IdentityFile)
	return nc, diags
}

// applySSHConfig looks nc.Host up in the node's ssh_config file and fills
// in what the block left unset.
func applySSHConfig(nc *NodeConfig, body hcl.Body, scAttr, hAttr *hcl.Attribute, portSet, userSet, idSet, khSet bool) hcl.Diagnostics {
	path, explicit := nc.SSHConfig, nc.SSHConfig != ""
	if !explicit {
		path = DefaultSSHConfig
	}
	if path == "none" {
		return nil
	}
	bad := func(err error, at *hcl.Attribute) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot use the ssh_config file",
			Detail:  fmt.Sprintf("%s. Fix the file, name another with ssh_config = \"PATH\", or set ssh_config = \"none\" to connect with the node block's settings only.", err),
			Subject: rangeOf(at, body)}}
	}
	cfg, err := sshconfig.Load(path, explicit)
	if err != nil {
		return bad(err, scAttr)
	}
	nc.SSHConfig = cfg.Path
	h, err := cfg.Resolve(nc.Host)
	if err != nil {
		if scAttr == nil {
			return bad(err, hAttr)
		}
		return bad(err, scAttr)
	}
	if h.HostName != h.Alias {
		nc.HostAlias = h.Alias
	}
	nc.Host = h.HostName
	if !portSet && h.Port != 0 {
		nc.Port = h.Port
	}
	if !userSet {
		nc.User = h.User
	}
	if !idSet {
		nc.IdentityFiles, nc.IdentitiesOnly = h.IdentityFiles, h.IdentitiesOnly
	}
	if !khSet && h.KnownHostsFile != "" {
		nc.KnownHosts = h.KnownHostsFile
	}
	for _, j := range h.Jumps {
		hop := Hop{Host: j.HostName, Port: j.Port, User: j.User, IdentityFiles: j.IdentityFiles, IdentitiesOnly: j.IdentitiesOnly}
		if j.HostName != j.Alias {
			hop.Alias = j.Alias
		}
		if hop.Port == 0 {
			hop.Port = DefaultPort
		}
		if hop.User == "" {
			hop.User = currentUser()
		}
		nc.ProxyJump = append(nc.ProxyJump, hop)
	}
	return nil
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

// checkTransport is the error for a transport sparkform does not have.
func checkTransport(t string, subject *hcl.Range) *hcl.Diagnostic {
	if t == "ssh" || t == "local" {
		return nil
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid node transport",
		Detail:  fmt.Sprintf("transport %q is not supported: use \"ssh\" (the default) or \"local\" (this machine, no SSH).", t),
		Subject: subject}
}

// CheckNodeStatic checks what a node block says without values (for
// validate): a transport that is known there must be one sparkform has.
// ctx is a context where every name is unknown.
func CheckNodeStatic(n *Node, ctx *hcl.EvalContext) hcl.Diagnostics {
	content, _, _ := n.Config.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "transport"}}})
	a := content.Attributes["transport"]
	if a == nil {
		return nil
	}
	if n.Scope != nil {
		ctx = n.Scope.BodyContext(n.Config, ctx)
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || v.Type() != cty.String {
		return nil // the plan's decoding says what is wrong
	}
	if d := checkTransport(v.AsString(), a.Expr.Range().Ptr()); d != nil {
		return hcl.Diagnostics{d}
	}
	return nil
}

// NodeValue is the object bound to node.NAME (or node.NAME[KEY]) in
// expressions; name is its address, e.g. `node.spark["a"]`. Timeout is a
// duration string ("15s").
func NodeValue(name string, nc NodeConfig) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"name":            cty.StringVal(name),
		"transport":       cty.StringVal(nc.Transport),
		"host":            cty.StringVal(nc.Host),
		"host_alias":      cty.StringVal(nc.HostAlias),
		"port":            cty.NumberIntVal(int64(nc.Port)),
		"user":            cty.StringVal(nc.User),
		"identity_file":   cty.StringVal(nc.IdentityFile),
		"known_hosts":     cty.StringVal(nc.KnownHosts),
		"become":          cty.BoolVal(nc.Become),
		"timeout":         cty.StringVal(nc.Timeout.String()),
		"ssh_config":      cty.StringVal(nc.SSHConfig),
		"identity_files":  stringList(nc.IdentityFiles),
		"identities_only": cty.BoolVal(nc.IdentitiesOnly),
		"proxy_jump":      hopList(nc.ProxyJump),
	})
}

// HopType is the type of one element of a node value's proxy_jump.
var HopType = cty.Object(map[string]cty.Type{
	"host": cty.String, "alias": cty.String, "port": cty.Number, "user": cty.String,
	"identity_files": cty.List(cty.String), "identities_only": cty.Bool,
})

func hopList(hops []Hop) cty.Value {
	if len(hops) == 0 {
		return cty.ListValEmpty(HopType)
	}
	vals := make([]cty.Value, len(hops))
	for i, h := range hops {
		vals[i] = cty.ObjectVal(map[string]cty.Value{
			"host": cty.StringVal(h.Host), "alias": cty.StringVal(h.Alias), "port": cty.NumberIntVal(int64(h.Port)), "user": cty.StringVal(h.User),
			"identity_files": stringList(h.IdentityFiles), "identities_only": cty.BoolVal(h.IdentitiesOnly),
		})
	}
	return cty.ListVal(vals)
}

func stringList(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vals := make([]cty.Value, len(ss))
	for i, s := range ss {
		vals[i] = cty.StringVal(s)
	}
	return cty.ListVal(vals)
}
