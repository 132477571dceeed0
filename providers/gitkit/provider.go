package gitkit

import (
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TypeCheckout is the resource type name of a checkout.
const TypeCheckout = "gitkit_checkout"

// New returns the gitkit provider. It keeps one connection per node for
// its lifetime (one provider process).
func New() sdk.Provider { return NewWithPool(node.NewPool()) }

// NewWithPool returns the gitkit provider reaching nodes through pool,
// which a plugin process serving several providers shares among them.
func NewWithPool(pool *node.Pool) sdk.Provider {
	return &sdk.Router{
		Name: "gitkit",
		Resources: map[string]sdk.Resource{
			TypeCheckout: NewCheckout(pool),
		},
	}
}
