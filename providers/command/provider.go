package command

import (
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Name is the provider's name: its resource types start with "node_".
const Name = "node"

// TypeCommand is the resource type name of a node command.
const TypeCommand = "node_command"

// New returns the provider. It keeps one connection per node for its
// lifetime (one provider process).
func New() sdk.Provider { return NewWithPool(node.NewPool()) }

// NewWithPool returns the provider reaching nodes through pool, which a
// plugin process serving several providers shares among them.
func NewWithPool(pool *node.Pool) sdk.Provider {
	return &sdk.Router{
		Name: Name,
		Resources: map[string]sdk.Resource{
			TypeCommand:   &Command{pool: pool},
			TypeMemoryFit: &MemoryFit{pool: pool},
		},
	}
}
