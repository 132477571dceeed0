package sdk

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Node says how a provider reaches the machine a resource lives on. It is
// the evaluated `node` block and travels with every request; providers keep
// one connection per distinct Node for the life of the plugin process.
type Node struct {
	// Name is the node's address in config, e.g. `node.spark["spark-01"]`.
	Name string
	// Transport is "ssh" or "local".
	Transport string
	Host      string
	Port      int
	// HostAlias is the host as the configuration wrote it when ssh_config
	// resolved it to another Host (a `Host` alias, e.g. spark-01 for
	// 127.0.0.1 port 2412); empty when Host is what was written. Messages
	// name the node by it, with the address; it never changes how the node
	// is reached.
	HostAlias string
	User      string
	// IdentityFile is the node block's key: when set, it is the only key
	// offered. Otherwise IdentityFiles (from ssh_config) are offered, with
	// the ssh-agent's keys unless IdentitiesOnly.
	IdentityFile   string
	IdentityFiles  []string
	IdentitiesOnly bool
	KnownHosts     string
	// ProxyJump are the hops to go through, the first dialled first (from
	// ssh_config's ProxyJump). Each hop's host key is checked against
	// KnownHosts as the node's is; a hop's own ProxyJump is unused.
	ProxyJump []Node
	// Become runs privileged work through `sudo -n`.
	Become  bool
	Timeout time.Duration
}

// Equal reports whether n and o agree in every field: two nodes that
// differ in any one are two machines, or two ways to reach one.
// (reflect.DeepEqual boxed both, two allocations per call;
// TestNodeEqualEveryField holds this to every field.)
func (n *Node) Equal(o *Node) bool {
	return n.Name == o.Name && n.Transport == o.Transport && n.Host == o.Host && n.Port == o.Port && n.HostAlias == o.HostAlias &&
		n.User == o.User && n.IdentityFile == o.IdentityFile && slices.Equal(n.IdentityFiles, o.IdentityFiles) &&
		n.IdentitiesOnly == o.IdentitiesOnly && n.KnownHosts == o.KnownHosts && n.Become == o.Become &&
		n.Timeout == o.Timeout && slices.EqualFunc(n.ProxyJump, o.ProxyJump, func(x, y Node) bool { return x.Equal(&y) })
}

// Key identifies the connection a Node needs: two Nodes with the same Key
// share one connection.
func (n Node) Key() string {
	if n.Transport == "local" {
		return "local"
	}
	var b strings.Builder
	b.WriteString(n.Transport + "://" + n.User + "@" + n.Host + ":" + strconv.Itoa(n.Port) + "?id=" + n.IdentityFile + "&kh=" + n.KnownHosts)
	if len(n.IdentityFiles) > 0 || n.IdentitiesOnly {
		b.WriteString("&ids=" + strings.Join(n.IdentityFiles, ",") + "&only=" + strconv.FormatBool(n.IdentitiesOnly))
	}
	for _, j := range n.ProxyJump {
		b.WriteString("&via=" + j.User + "@" + j.Host + ":" + strconv.Itoa(j.Port) + "/" + strings.Join(j.IdentityFiles, ",") + "/" + strconv.FormatBool(j.IdentitiesOnly))
	}
	return b.String()
}
