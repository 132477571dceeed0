package hubstage

import (
	"context"

	gounits "github.com/docker/go-units"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
)

var _ sdk.StatusResource = (*manifest)(nil)

// Status implements sdk.StatusResource from what the refresh just read (no
// round trip of its own): the snapshot commit the manifest binds, and how
// many files and bytes.
func (m *manifest) Status(_ context.Context, _ sdk.Node, items []sdk.StatusItem) ([]sdk.StatusResult, int, sdk.Diagnostics) {
	out := make([]sdk.StatusResult, len(items))
	for i, it := range items {
		switch {
		case !it.ObservedKnown:
		case it.Observed.IsNull():
			out[i] = sdk.StatusResult{Health: sdk.HealthDown, Summary: "missing"}
		default:
			commit := ctyval.Str(ctyval.Attr(it.Observed, "commit"))
			res := sdk.StatusResult{Health: sdk.HealthOK, Facts: []sdk.Fact{{Name: "commit", Value: commit}}}
			res.Summary = "at " + commit
			if len(commit) > 7 {
				res.Summary = "at " + commit[:7]
			}
			if n := ctyval.Attr(it.Observed, "file_count"); ctyval.Known(n) && !n.IsNull() {
				res.Facts = append(res.Facts, sdk.Fact{Name: "files", Value: n.AsBigFloat().Text('f', 0)})
			}
			if b := ctyval.Attr(it.Observed, "total_bytes"); ctyval.Known(b) && !b.IsNull() {
				f, _ := b.AsBigFloat().Float64()
				res.Facts = append(res.Facts, sdk.Fact{Name: "bytes", Value: gounits.BytesSize(f)})
			}
			out[i] = res
		}
	}
	return out, 0, nil
}
