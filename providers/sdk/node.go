package sdk

import (
	"strconv"
	"time"
)

// Node says how a provider reaches the machine a resource lives on. It is
// the evaluated `node` block and travels with every request; providers keep
// one connection per distinct Node for the life of the plugin process.
type Node struct {
	// Name is the node's address in config, e.g. `node.spark["spark-01"]`.
	Name string
	// Transport is "ssh" or "local".
	Transport    string
	Host         string
	Port         int
	User         string
	IdentityFile string
	KnownHosts   string
	// Become runs privileged work through `sudo -n`.
	Become  bool
	Timeout time.Duration
}

// Key identifies the connection a Node needs: two Nodes with the same Key
// share one connection.
func (n Node) Key() string {
	if n.Transport == "local" {
		return "local"
	}
	return n.Transport + "://" + n.User + "@" + n.Host + ":" + strconv.Itoa(n.Port) + "?id=" + n.IdentityFile + "&kh=" + n.KnownHosts
}
