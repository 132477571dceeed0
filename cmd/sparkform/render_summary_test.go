package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestRenderSummarizedLists: a large computed list of a resource that
// declares change_summary (a hub snapshot's files) is one line in every
// kind of change and in drift, never one line per element; a list not
// named in SummaryAttrs keeps its element-by-element diff.
func TestRenderSummarizedLists(t *testing.T) {
	fileTy := cty.Object(map[string]cty.Type{"source": cty.String, "target": cty.String})
	files := func(n int, tag string) cty.Value {
		vals := make([]cty.Value, n)
		for i := range vals {
			vals[i] = cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal(fmt.Sprintf("/hub/blobs/%s%04d", tag, i)), "target": cty.StringVal(fmt.Sprintf("/model/f%04d", i))})
		}
		return cty.ListVal(vals)
	}
	obj := func(commit string, fs cty.Value, summary string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"commit": cty.StringVal(commit), "files": fs, "change_summary": cty.StringVal(summary)})
	}
	ty := obj("", cty.ListValEmpty(fileTy), "").Type()
	before := obj("aaaa", files(500, "a"), "commit aaaa: 500 files")
	after := obj("bbbb", files(510, "b"), "commit aaaa -> bbbb, +10 files, 500 changed")
	for _, tc := range []struct {
		name    string
		action  plans.Action
		b, a    cty.Value
		summary []string
		drift   bool
		want    []string
	}{
		{"update", plans.Update, before, after, []string{"files"}, false,
			[]string{"~ files", "[ 500 elements, see change_summary ] -> [ 510 elements, see change_summary ]", "commit aaaa -> bbbb, +10 files, 500 changed"}},
		{"create", plans.Create, cty.NullVal(ty), after, []string{"files"}, false, []string{"+ files", "[ 510 elements, see change_summary ]"}},
		{"delete", plans.Delete, before, cty.NullVal(ty), []string{"files"}, false, []string{"- files", "[ 500 elements, see change_summary ] -> null"}},
		{"drift", plans.NoOp, before, after, []string{"files"}, true, []string{"has changed", "[ 500 elements, see change_summary ] -> [ 510 elements, see change_summary ]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &plans.Plan{Mode: plans.NormalMode}
			if tc.action == plans.Delete {
				p.Mode = plans.DestroyMode
			}
			if tc.drift {
				p.Drift = append(p.Drift, &plans.Drift{Addr: "hubstage_manifest.m", Type: "hubstage_manifest", Before: tc.b, After: tc.a, SummaryAttrs: tc.summary})
			} else {
				p.Changes = append(p.Changes, &plans.ResourceChange{Addr: "hubstage_manifest.m", Resource: "hubstage_manifest.m", Type: "hubstage_manifest",
					Provider: "hubstage", Node: &sdk.Node{Name: "node.a"}, Action: tc.action, Before: tc.b, After: tc.a, SummaryAttrs: tc.summary})
			}
			var out bytes.Buffer
			(&meta{stdout: &out}).renderPlan(p)
			got := out.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("plan lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, "/hub/blobs/") || strings.Count(got, "\n") > 40 {
				t.Errorf("plan shows the list element by element (%d lines):\n%.2000s", strings.Count(got, "\n"), got)
			}
			// Without the summary mark the same change lists its elements:
			// the mark, not the size, is what shortens it.
			if tc.action == plans.Update && !tc.drift {
				p.Changes[0].SummaryAttrs = nil
				out.Reset()
				(&meta{stdout: &out}).renderPlan(p)
				if !strings.Contains(out.String(), "/hub/blobs/") {
					t.Errorf("an unmarked list lost its elements:\n%.2000s", out.String())
				}
			}
		})
	}
}
