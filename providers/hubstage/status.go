package hubstage

import (
	"context"

	gounits "github.com/docker/go-units"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
)

var (
	_ sdk.StatusResource = (*manifest)(nil)
	_ sdk.StatusResource = (*snapshot)(nil)
)

// Status implements sdk.StatusResource from what the refresh just read (no
// round trip of its own): the snapshot commit the manifest binds, and how
// many files and bytes.
func (m *manifest) Status(_ context.Context, _ sdk.Node, items []sdk.StatusItem) ([]sdk.StatusResult, int, sdk.Diagnostics) {
	return commitStatus(items, nil), 0, nil
}

// Status implements sdk.StatusResource from what the refresh just read:
// the commit the snapshot on the node is at, its files and bytes, and its
// folder.
func (s *snapshot) Status(_ context.Context, _ sdk.Node, items []sdk.StatusItem) ([]sdk.StatusResult, int, sdk.Diagnostics) {
	return commitStatus(items, []string{"snapshot_dir"}), 0, nil
}

// commitStatus is the status of hub objects: the commit, file_count,
// total_bytes, and the extra string attributes named, from each item's
// observed value; missing when the refresh found none.
func commitStatus(items []sdk.StatusItem, extra []string) []sdk.StatusResult {
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
			for _, name := range extra {
				if v := ctyval.Str(ctyval.Attr(it.Observed, name)); v != "" {
					res.Facts = append(res.Facts, sdk.Fact{Name: name, Value: v})
				}
			}
			out[i] = res
		}
	}
	return out
}
