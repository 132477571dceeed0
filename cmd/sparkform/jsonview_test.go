package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestJSONResource(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want map[string]any
	}{
		{`gitkit_checkout.kit["a"]`, map[string]any{"addr": `gitkit_checkout.kit["a"]`, "module": "", "resource": `gitkit_checkout.kit["a"]`,
			"resource_type": "gitkit_checkout", "resource_name": "kit", "resource_key": "a", "implied_provider": "gitkit", "node": `node.n["a"]`}},
		{`kmod_module.drm[0]`, map[string]any{"addr": `kmod_module.drm[0]`, "module": "", "resource": `kmod_module.drm[0]`,
			"resource_type": "kmod_module", "resource_name": "drm", "resource_key": float64(0), "implied_provider": "gitkit", "node": `node.n["a"]`}},
		{`module.serve["b"].docker_container.c`, map[string]any{"addr": `module.serve["b"].docker_container.c`, "module": `module.serve["b"]`,
			"resource": "docker_container.c", "resource_type": "docker_container", "resource_name": "c", "resource_key": nil,
			"implied_provider": "gitkit", "node": `node.n["a"]`}},
	} {
		b, _ := json.Marshal(jsonResource(tc.addr, "gitkit", `node.n["a"]`))
		var got map[string]any
		json.Unmarshal(b, &got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("jsonResource(%s) = %v\nwant %v", tc.addr, got, tc.want)
		}
	}
}
