package engine

import (
	"math/big"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// stateValues are values of the shapes providers return: objects with
// dynamic attributes, maps, lists, sets, tuples, numbers beyond float64,
// nulls and unknowns (stored as nulls), marks (dropped).
func stateValues() map[string]cty.Value {
	big, _ := new(big.Float).SetString("123456789012345678901234567890.123456789")
	return map[string]cty.Value{
		"data": cty.ObjectVal(map[string]cty.Value{
			"id": cty.StringVal("42cdc60b4ad6b1f6"), "input": cty.StringVal("seed-0"),
			"output": cty.StringVal("seed-0"), "triggers_replace": cty.NullVal(cty.DynamicPseudoType),
		}),
		"nested": cty.ObjectVal(map[string]cty.Value{
			"params": cty.MapVal(map[string]cty.Value{"modeset": cty.StringVal("1"), "fbdev": cty.StringVal("0")}),
			"files":  cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
			"set":    cty.SetVal([]cty.Value{cty.NumberIntVal(3), cty.NumberIntVal(1)}),
			"tuple":  cty.TupleVal([]cty.Value{cty.True, cty.StringVal("x"), cty.NumberFloatVal(0.5)}),
			"empty":  cty.ListValEmpty(cty.String),
			"big":    cty.NumberVal(big),
			"dyn":    cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(-7)}),
			"nulls":  cty.NullVal(cty.Map(cty.String)),
		}),
		"marked":  cty.ObjectVal(map[string]cty.Value{"secret": cty.StringVal("s").Mark("sensitive")}),
		"unknown": cty.ObjectVal(map[string]cty.Value{"id": cty.UnknownVal(cty.String), "n": cty.NumberIntVal(1)}),
		"null":    cty.NullVal(cty.Object(map[string]cty.Type{"id": cty.String})),
	}
}

// The compact state encoding gives back what the JSON one (state format
// 1) gave, and JSONForm turns one into the other.
func TestStateValueEncodings(t *testing.T) {
	for name, v := range stateValues() {
		t.Run(name, func(t *testing.T) {
			obj := &stateObject{Addr: "sparkform_data.x", Type: "sparkform_data", Value: v, Node: sdk.Node{Name: "n"}}
			rec, err := obj.record()
			if err != nil {
				t.Fatal(err)
			}
			if rec.ValueType == nil {
				t.Fatalf("record() did not use the compact form")
			}
			got, err := ResourceValue(rec)
			if err != nil {
				t.Fatal(err)
			}
			js, err := EncodeValue(v)
			if err != nil {
				t.Fatal(err)
			}
			want, err := DecodeValue(js)
			if err != nil {
				t.Fatal(err)
			}
			if !got.RawEquals(want) {
				t.Errorf("compact: %#v\nJSON:    %#v", got, want)
			}
			jf, err := JSONForm(rec)
			if err != nil {
				t.Fatal(err)
			}
			if jf.ValueType != nil || string(jf.Value) != string(js) {
				t.Errorf("JSONForm: %s, want %s", jf.Value, js)
			}
			back, err := stateObjectFromRecord(rec)
			if err != nil || back.Node.Name != "n" || !back.Value.RawEquals(want) {
				t.Errorf("stateObjectFromRecord: %+v, %v", back, err)
			}
		})
	}
}

// BenchmarkDecodeState: reading one sparkform_data instance's record into
// the engine's object (what every plan does per instance), in the state
// format 1 encoding (cty JSON with the type in every value) and the
// compact one (msgpack, type shared). -benchmem shows the allocations.
func BenchmarkDecodeState(b *testing.B) {
	v := stateValues()["data"]
	obj := &stateObject{Addr: "sparkform_data.c0_1", Type: "sparkform_data", Provider: "sparkform", Value: v,
		Node: sdk.Node{Name: "node.local", Transport: "local", Port: 22, User: "root"}, Dependencies: []string{"sparkform_data.c0_0"}}
	compact, err := obj.record()
	if err != nil {
		b.Fatal(err)
	}
	format1 := *compact
	format1.ValueType = nil
	if format1.Value, err = EncodeValue(v); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rec  *state.Resource
	}{{"format=1", &format1}, {"format=2", compact}} {
		b.Run(c.name, func(b *testing.B) {
			nodes := nodeCache{}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeStateObject(c.rec, nodes); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(c.rec.Value)+len(c.rec.ValueType)), "value-bytes")
		})
	}
}

// BenchmarkEncodeState: making one sparkform_data instance's record (what
// apply does twice per instance: the journal intent and the result).
func BenchmarkEncodeState(b *testing.B) {
	v := stateValues()["data"]
	obj := &stateObject{Addr: "sparkform_data.c0_1", Type: "sparkform_data", Provider: "sparkform", Value: v,
		Node: sdk.Node{Name: "node.local", Transport: "local", Port: 22, User: "root"}, Dependencies: []string{"sparkform_data.c0_0"}}
	b.Run("format=1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeValue(obj.Value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("format=2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := obj.record(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
