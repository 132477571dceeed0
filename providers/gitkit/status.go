package gitkit

import (
	"context"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
)

var _ sdk.StatusResource = (*Checkout)(nil)

// Status implements sdk.StatusResource from what the refresh just read (no
// round trip of its own): the commit the kit on the node is at.
func (c *Checkout) Status(_ context.Context, _ sdk.Node, items []sdk.StatusItem) ([]sdk.StatusResult, int, sdk.Diagnostics) {
	out := make([]sdk.StatusResult, len(items))
	for i, it := range items {
		switch {
		case !it.ObservedKnown:
		case it.Observed.IsNull():
			out[i] = sdk.StatusResult{Health: sdk.HealthDown, Summary: "missing", Facts: []sdk.Fact{{Name: "path", Value: ctyval.Str(ctyval.Attr(it.State, attrPath))}}}
		default:
			commit := ctyval.Str(ctyval.Attr(it.Observed, attrCommit))
			out[i] = sdk.StatusResult{Health: sdk.HealthOK, Summary: "at " + short(commit), Facts: []sdk.Fact{
				{Name: "commit", Value: commit},
				{Name: "path", Value: ctyval.Str(ctyval.Attr(it.Observed, attrPath))},
			}}
		}
	}
	return out, 0, nil
}

// short is a commit's first 7 characters, as git shows it.
func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}
