package hubstage

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

func TestCommitStatus(t *testing.T) {
	obj := func(commit string, files, bytes int64) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"commit": cty.StringVal(commit), "file_count": cty.NumberIntVal(files),
			"total_bytes": cty.NumberIntVal(bytes), "snapshot_dir": cty.StringVal("/hub/models--org--m/snapshots/" + commit)})
	}
	c := "878e0eecd893fadc69ad2d58b2df0fabb0fae2ee"
	got := commitStatus([]sdk.StatusItem{
		{State: obj(c, 51, 3<<30), Observed: obj(c, 51, 3<<30), ObservedKnown: true},
		{State: obj(c, 51, 3<<30), Observed: cty.NullVal(obj(c, 1, 1).Type()), ObservedKnown: true},
		{State: obj(c, 51, 3<<30)},
	}, []string{"snapshot_dir"})
	if got[0].Health != sdk.HealthOK || got[0].Summary != "at 878e0ee" {
		t.Errorf("present: %+v", got[0])
	}
	want := []sdk.Fact{{Name: "commit", Value: c}, {Name: "files", Value: "51"}, {Name: "bytes", Value: "3GiB"},
		{Name: "snapshot_dir", Value: "/hub/models--org--m/snapshots/" + c}}
	if len(got[0].Facts) != len(want) {
		t.Fatalf("facts %v; want %v", got[0].Facts, want)
	}
	for i := range want {
		if got[0].Facts[i] != want[i] {
			t.Errorf("fact %d = %v; want %v", i, got[0].Facts[i], want[i])
		}
	}
	if got[1].Health != sdk.HealthDown || got[1].Summary != "missing" {
		t.Errorf("gone: %+v", got[1])
	}
	if got[2].Health != "" || len(got[2].Facts) != 0 {
		t.Errorf("not read: %+v", got[2])
	}
}
