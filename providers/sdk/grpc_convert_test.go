package sdk

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// Values of a schema with dynamic parts travel in the concrete-type form;
// every kind of value comes back equal, with the same type.
func TestConcreteEncodingRoundTrip(t *testing.T) {
	schema := cty.Object(map[string]cty.Type{
		"input": cty.DynamicPseudoType, "id": cty.String,
		"list": cty.List(cty.DynamicPseudoType),
	})
	obj := func(input, id, list cty.Value) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"input": input, "id": id, "list": list})
	}
	nullList := cty.NullVal(cty.List(cty.DynamicPseudoType))
	cases := map[string]cty.Value{
		"string input":      obj(cty.StringVal("seed-1"), cty.StringVal("ab12"), nullList),
		"unknown id":        obj(cty.StringVal("x"), cty.UnknownVal(cty.String), nullList),
		"unknown input":     obj(cty.DynamicVal, cty.UnknownVal(cty.String), nullList),
		"null input":        obj(cty.NullVal(cty.DynamicPseudoType), cty.StringVal("a"), nullList),
		"nested object":     obj(cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1), "b": cty.ListVal([]cty.Value{cty.True})}), cty.StringVal("a"), nullList),
		"list of dynamic":   obj(cty.StringVal("x"), cty.StringVal("a"), cty.ListVal([]cty.Value{cty.StringVal("p"), cty.StringVal("q")})),
		"unknown object":    cty.UnknownVal(schema),
		"null object":       cty.NullVal(schema),
		"same type twice":   obj(cty.StringVal("seed-2"), cty.StringVal("cd34"), nullList),
		"sensitive removed": obj(cty.StringVal("secret").Mark("sensitive"), cty.StringVal("a"), nullList),
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := encodeValue(v, schema)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			switch {
			case v.IsNull():
				if len(b) != 0 {
					t.Fatalf("a null encodes as % x; want nothing (empty means null)", b)
				}
			case len(b) == 0 || b[0] != concreteMarker:
				t.Fatalf("encoded form does not start with the concrete marker: % x", b[:min(len(b), 8)])
			}
			got, err := decodeValue(b, schema)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			want, _ := v.UnmarkDeep()
			if !got.RawEquals(want) {
				t.Errorf("round trip: got %#v, want %#v", got, want)
			}
		})
	}
}

// A value that does not fit the schema is refused on encode and on decode
// with an error that names both types; plain msgpack (no dynamic parts, or
// an older peer) still decodes.
func TestConcreteEncodingChecksConformance(t *testing.T) {
	schema := cty.Object(map[string]cty.Type{"input": cty.DynamicPseudoType, "id": cty.String})
	bad := cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("x")}) // no id
	if _, err := encodeValue(bad, schema); err == nil || !strings.Contains(err.Error(), "does not conform") {
		t.Errorf("encoding a value without id: %v, want a conformance error", err)
	}
	other := cty.Object(map[string]cty.Type{"input": cty.DynamicPseudoType})
	b, err := encodeValue(bad, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeValue(b, schema); err == nil || !strings.Contains(err.Error(), "does not conform") {
		t.Errorf("decoding a value without id: %v, want a conformance error", err)
	}
	if _, err := decodeValue([]byte{concreteMarker, 0x7f, '"'}, schema); err == nil {
		t.Error("a truncated value decoded without error")
	}

	good := cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("x"), "id": cty.StringVal("a")})
	plain, err := msgpack.Marshal(good, schema)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeValue(plain, schema)
	if err != nil || !got.RawEquals(good) {
		t.Errorf("plain msgpack: %#v %v, want %#v", got, err, good)
	}
	fixed := cty.Object(map[string]cty.Type{"id": cty.String})
	if b, _ := encodeValue(cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("a")}), fixed); len(b) == 0 || b[0] == concreteMarker {
		t.Errorf("a schema without dynamic parts should use plain msgpack, got % x", b)
	}
}

// BenchmarkDecodeDynamic: the wire cost of one sparkform_data-shaped value.
func BenchmarkDecodeDynamic(b *testing.B) {
	schema := cty.Object(map[string]cty.Type{"input": cty.DynamicPseudoType, "output": cty.DynamicPseudoType,
		"triggers_replace": cty.DynamicPseudoType, "id": cty.String})
	v := cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("seed-1"), "output": cty.StringVal("seed-1"),
		"triggers_replace": cty.NullVal(cty.DynamicPseudoType), "id": cty.StringVal("0123456789abcdef")})
	plain, _ := msgpack.Marshal(v, schema)
	concrete, _ := encodeValue(v, schema)
	for name, enc := range map[string][]byte{"plain": plain, "concrete": concrete} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeValue(enc, schema); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
