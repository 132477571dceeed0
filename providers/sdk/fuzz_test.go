package sdk

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// fuzzSchema is shaped like a real resource: plain and dynamic attributes,
// collections and a nested object.
var fuzzSchema = cty.Object(map[string]cty.Type{
	"id": cty.String, "input": cty.DynamicPseudoType, "count": cty.Number, "ok": cty.Bool,
	"files":  cty.List(cty.Object(map[string]cty.Type{"path": cty.String, "size": cty.Number})),
	"params": cty.Map(cty.String), "tags": cty.Set(cty.String),
})

// FuzzPluginReply: any bytes as a plugin's reply value decode to a value
// of the schema's type or an error, never a panic or an allocation a
// declared length asks for. Corpus: testdata/fuzz/FuzzPluginReply.
func FuzzPluginReply(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decodeValue(data, fuzzSchema)
		if err != nil {
			return
		}
		if errs := v.Type().TestConformance(fuzzSchema); len(errs) > 0 && !v.IsNull() {
			t.Fatalf("decoded value of type %s does not conform: %v", v.Type().FriendlyName(), errs[0])
		}
		if _, err := encodeValue(v, fuzzSchema); err != nil {
			t.Fatalf("decoded value does not encode again: %v", err)
		}
	})
}
