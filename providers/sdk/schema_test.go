package sdk

import (
	"slices"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestSummarizedAttrs: only a schema that declares a computed string
// change_summary summarises, and then only its computed-only collections.
func TestSummarizedAttrs(t *testing.T) {
	list := cty.List(cty.String)
	for _, tc := range []struct {
		name  string
		attrs map[string]*Attribute
		want  []string
	}{
		{"no summary attribute", map[string]*Attribute{"files": {Type: list, Computed: true}}, nil},
		{"summary not computed", map[string]*Attribute{"files": {Type: list, Computed: true}, SummaryAttribute: {Type: cty.String, Optional: true}}, nil},
		{"summary not a string", map[string]*Attribute{"files": {Type: list, Computed: true}, SummaryAttribute: {Type: cty.Number, Computed: true}}, nil},
		{"computed collections only", map[string]*Attribute{
			SummaryAttribute: {Type: cty.String, Computed: true},
			"files":          {Type: list, Computed: true},
			"blobs":          {Type: cty.Set(cty.String), Computed: true},
			"sizes":          {Type: cty.Map(cty.Number), Computed: true},
			"include":        {Type: list, Optional: true},
			"args":           {Type: list, Optional: true, Computed: true},
			"commit":         {Type: cty.String, Computed: true},
		}, []string{"blobs", "files", "sizes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (&ResourceSchema{Block: &Block{Attributes: tc.attrs}}).SummarizedAttrs()
			if !slices.Equal(got, tc.want) {
				t.Errorf("SummarizedAttrs = %q, want %q", got, tc.want)
			}
		})
	}
	if got := (*ResourceSchema)(nil).SummarizedAttrs(); got != nil {
		t.Errorf("nil schema: %q", got)
	}
}
