package config

import (
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/zclconf/go-cty/cty"
)

func ctyJSON(v cty.Value) (string, error) {
	b, err := ctyjson.Marshal(v, v.Type())
	return string(b), err
}
