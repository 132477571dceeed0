package gitkit

import (
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TypeCheckout is the resource type name of a checkout.
const TypeCheckout = "gitkit_checkout"

// New returns the gitkit provider. It keeps one connection per node for
// its lifetime (one provider process).
func New() sdk.Provider {
	return &sdk.Router{
		Name: "gitkit",
		Resources: map[string]sdk.Resource{
			TypeCheckout: NewCheckout(node.NewPool()),
		},
	}
}
