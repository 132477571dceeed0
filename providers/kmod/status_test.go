package kmod

import (
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

func TestModuleStatus(t *testing.T) {
	ty := (&moduleResource{}).Schema().Block.ImpliedType()
	val := func(state string, loaded bool, params, observed map[string]string) cty.Value {
		m := map[string]cty.Value{}
		for name, at := range ty.AttributeTypes() {
			m[name] = cty.NullVal(at)
		}
		m["name"] = cty.StringVal("nvidia_drm")
		if state != "" {
			m["state"] = cty.StringVal(state)
		}
		m["loaded"] = cty.BoolVal(loaded)
		mapOf := func(kv map[string]string) cty.Value {
			if kv == nil {
				return cty.NullVal(cty.Map(cty.String))
			}
			vs := map[string]cty.Value{}
			for k, v := range kv {
				vs[k] = cty.StringVal(v)
			}
			return cty.MapVal(vs)
		}
		m["params"], m["observed_params"] = mapOf(params), mapOf(observed)
		return cty.ObjectVal(m)
	}
	want := map[string]string{"modeset": "1", "fbdev": "0"}
	state := val("", true, want, map[string]string{"modeset": "Y", "fbdev": "N"})
	for _, c := range []struct {
		name     string
		item     sdk.StatusItem
		health   sdk.Health
		summary  string
		params   string
		notKnown bool
	}{
		{name: "as wanted", item: sdk.StatusItem{State: state, Observed: state, ObservedKnown: true},
			health: sdk.HealthOK, summary: "loaded, params as wanted", params: "fbdev=N modeset=Y"},
		{name: "reloaded plain", item: sdk.StatusItem{State: state, Observed: val("", true, want, map[string]string{"modeset": "N", "fbdev": "N"}), ObservedKnown: true},
			health: sdk.HealthOK, summary: "loaded, params differ", params: "fbdev=N modeset=N"},
		{name: "unloaded", item: sdk.StatusItem{State: state, Observed: val("", false, want, nil), ObservedKnown: true},
			health: sdk.HealthDown, summary: "not loaded (wanted loaded)", params: "fbdev=? modeset=?"},
		{name: "unloaded as wanted", item: sdk.StatusItem{State: val("unloaded", false, nil, nil), Observed: val("unloaded", false, nil, nil), ObservedKnown: true},
			health: sdk.HealthOK, summary: "not loaded"},
		{name: "not read", item: sdk.StatusItem{State: state}, notKnown: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := moduleStatus(c.item)
			if c.notKnown {
				if !reflect.DeepEqual(r, sdk.StatusResult{}) {
					t.Errorf("an unread module has status %+v", r)
				}
				return
			}
			got := map[string]string{}
			for _, f := range r.Facts {
				got[f.Name] = f.Value
			}
			if r.Health != c.health || r.Summary != c.summary || got["params"] != c.params {
				t.Errorf("health %q summary %q params %q; want %q %q %q", r.Health, r.Summary, got["params"], c.health, c.summary, c.params)
			}
			if c.params != "" && got["wanted"] != "fbdev=0 modeset=1" {
				t.Errorf("wanted %q", got["wanted"])
			}
		})
	}
}
