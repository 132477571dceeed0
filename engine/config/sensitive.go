package config

import (
	"sort"

	"github.com/zclconf/go-cty/cty"
)

// TakeSensitive takes the marks off a resource configuration (an object)
// and names the top-level attributes that held a sensitive() value
// anywhere inside: the plan hides those. The engine keeps no marks past
// this point (providers and state take plain values).
func TakeSensitive(v cty.Value) (cty.Value, []string) {
	if !v.ContainsMarked() {
		return v, nil
	}
	whole := v.HasMark(SensitiveMark)
	plain, _ := v.UnmarkDeep()
	if !plain.Type().IsObjectType() {
		return plain, nil
	}
	var names []string
	for name := range plain.Type().AttributeTypes() {
		if whole || HasSensitive(v.GetAttr(name)) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return plain, names
}

// HasSensitive reports whether v or anything inside it came from
// sensitive().
func HasSensitive(v cty.Value) bool {
	_, pvm := v.UnmarkDeepWithPaths()
	for _, pm := range pvm {
		if _, ok := pm.Marks[SensitiveMark]; ok {
			return true
		}
	}
	return false
}
