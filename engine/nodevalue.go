// This file holds how a node block's value (what node = node.x[k] gives a
// resource) is read back into the connection details providers get.

package engine

import (
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// nodeFromValue reads the connection details out of a node object; the
// reading lives in sdk.NodeFromValue, which providers that take another
// node as an argument (a copy's source) use too.
func nodeFromValue(v cty.Value) (sdk.Node, error) { return sdk.NodeFromValue(v) }
