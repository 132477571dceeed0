package kmod

import (
	"context"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
)

var _ sdk.StatusResource = (*moduleResource)(nil)

// Status implements sdk.StatusResource from what the refresh just read
// (no round trip of its own): whether the module is loaded, and its
// parameters as the kernel shows them against the wanted ones.
func (r *moduleResource) Status(_ context.Context, _ sdk.Node, items []sdk.StatusItem) ([]sdk.StatusResult, int, sdk.Diagnostics) {
	out := make([]sdk.StatusResult, len(items))
	for i, it := range items {
		out[i] = moduleStatus(it)
	}
	return out, 0, nil
}

// moduleStatus puts one module's observation into words.
func moduleStatus(it sdk.StatusItem) sdk.StatusResult {
	if !it.ObservedKnown {
		return sdk.StatusResult{}
	}
	wantLoaded := ctyval.Str(ctyval.Attr(it.State, "state")) != "unloaded"
	want := ctyval.StrMap(ctyval.Attr(it.State, "params"))
	obs := it.Observed
	loaded := false
	if !obs.IsNull() {
		l := ctyval.Attr(obs, "loaded")
		loaded = ctyval.Known(l) && !l.IsNull() && l.True()
	}
	res := sdk.StatusResult{Health: sdk.HealthOK}
	if loaded {
		res.Summary = "loaded"
	} else {
		res.Summary = "not loaded"
	}
	res.Facts = append(res.Facts, sdk.Fact{Name: "loaded", Value: boolWord(loaded)})
	if wantLoaded != loaded {
		res.Health = sdk.HealthDown
		res.Summary += " (wanted " + map[bool]string{true: "loaded", false: "unloaded"}[wantLoaded] + ")"
	}
	if len(want) > 0 {
		var got cty.Value
		if !obs.IsNull() {
			got = ctyval.Attr(obs, "observed_params")
		}
		have := ctyval.StrMap(got)
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var w, h []string
		differ := false
		for _, k := range keys {
			w = append(w, k+"="+want[k])
			v, ok := have[k]
			if !ok {
				v = "?"
			}
			h = append(h, k+"="+v)
			if !ok || !paramEqual(want[k], v) {
				differ = true
			}
		}
		res.Facts = append(res.Facts, sdk.Fact{Name: "params", Value: strings.Join(h, " ")}, sdk.Fact{Name: "wanted", Value: strings.Join(w, " ")})
		if loaded && wantLoaded {
			if differ {
				res.Summary += ", params differ"
			} else {
				res.Summary += ", params as wanted"
			}
		}
	}
	return res
}

func boolWord(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
