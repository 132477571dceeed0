package hubstage

import (
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TypeManifest is the resource type this provider serves.
const TypeManifest = "hubstage_manifest"

// SummaryAttribute names the computed attribute that summarises a change
// of "files" in one line; plan renderers show it instead of the list.
const SummaryAttribute = sdk.SummaryAttribute

// fileType is one bind: what docker_container.bind_files consumes.
var fileType = cty.Object(map[string]cty.Type{"source": cty.String, "target": cty.String})

// New returns the hubstage provider.
func New() sdk.Provider { return NewWithPool(node.NewPool()) }

// NewWithPool returns the hubstage provider reaching nodes through pool,
// which a plugin process serving several providers shares among them.
func NewWithPool(pool *node.Pool) sdk.Provider {
	return &sdk.Router{Name: "hubstage", Resources: map[string]sdk.Resource{
		TypeManifest: &manifest{conn: pool.Get},
		TypeSnapshot: &snapshot{conn: pool.Get},
	}}
}
