package sdk

import (
	"errors"
	"fmt"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// NodeFromValue reads the connection details out of a node value: the
// object an expression such as node.spark["a"] gives (engine/config's
// NodeValue). A provider whose argument names another node (a copy's
// source) turns it into the Node its pool dials with this, exactly as
// the engine reads a resource's own node.
func NodeFromValue(v cty.Value) (Node, error) {
	var n Node
	if v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() {
		return n, fmt.Errorf("the value is not a node (got %s)", v.Type().FriendlyName())
	}
	get := func(name string) (cty.Value, bool) {
		if !v.Type().HasAttribute(name) {
			return cty.NilVal, false
		}
		a := v.GetAttr(name)
		if a.IsNull() || !a.IsKnown() {
			return cty.NilVal, false
		}
		return a, true
	}
	str := func(name string) string {
		if a, ok := get(name); ok && a.Type() == cty.String {
			return a.AsString()
		}
		return ""
	}
	if _, ok := get("transport"); !ok {
		return n, errors.New("the value is an object without the attributes of a node")
	}
	n.Name = str("name")
	n.Transport = str("transport")
	n.Host = str("host")
	n.HostAlias = str("host_alias")
	n.User = str("user")
	n.IdentityFile = str("identity_file")
	n.KnownHosts = str("known_hosts")
	if a, ok := get("port"); ok && a.Type() == cty.Number {
		p, _ := a.AsBigFloat().Int64()
		n.Port = int(p)
	}
	if a, ok := get("become"); ok && a.Type() == cty.Bool {
		n.Become = a.True()
	}
	if a, ok := get("identities_only"); ok && a.Type() == cty.Bool {
		n.IdentitiesOnly = a.True()
	}
	n.IdentityFiles = stringsOf(v, "identity_files")
	if s := str("timeout"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			n.Timeout = d
		}
	}
	if a, ok := get("proxy_jump"); ok && a.CanIterateElements() {
		n.ProxyJump = proxyJumps(n, a)
	}
	return n, nil
}

// proxyJumps reads a node value's proxy_jump hops; each is reached with
// the node's known_hosts and timeout.
func proxyJumps(n Node, hops cty.Value) []Node {
	var out []Node
	for it := hops.ElementIterator(); it.Next(); {
		_, h := it.Element()
		hop := Node{Name: n.Name + " via " + h.GetAttr("host").AsString(), Transport: "ssh",
			Host: h.GetAttr("host").AsString(), HostAlias: optString(h, "alias"), User: h.GetAttr("user").AsString(),
			IdentityFiles: stringsOf(h, "identity_files"), IdentitiesOnly: h.GetAttr("identities_only").True(),
			KnownHosts: n.KnownHosts, Timeout: n.Timeout}
		p, _ := h.GetAttr("port").AsBigFloat().Int64()
		hop.Port = int(p)
		out = append(out, hop)
	}
	return out
}

// stringsOf reads a list-of-strings attribute of an object, if it has one.
func stringsOf(v cty.Value, name string) []string {
	if !v.Type().IsObjectType() || !v.Type().HasAttribute(name) {
		return nil
	}
	l := v.GetAttr(name)
	if l.IsNull() || !l.IsKnown() || !l.CanIterateElements() {
		return nil
	}
	var out []string
	for it := l.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.Type() == cty.String && e.IsKnown() && !e.IsNull() {
			out = append(out, e.AsString())
		}
	}
	return out
}

// optString is an object's string attribute, "" when it has none (a value
// made before the attribute existed) or it is null or unknown.
func optString(v cty.Value, name string) string {
	if !v.Type().HasAttribute(name) {
		return ""
	}
	a := v.GetAttr(name)
	if a.IsNull() || !a.IsKnown() || a.Type() != cty.String {
		return ""
	}
	return a.AsString()
}
