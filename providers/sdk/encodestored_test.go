package sdk

import (
	"bytes"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// stored is v in the state's compact form, as the engine writes it
// (engine.encodeStateValue): its own type as cty JSON, msgpack with it.
func stored(t testing.TB, v cty.Value) Stored {
	t.Helper()
	tj, err := ctyjson.MarshalType(v.Type())
	if err != nil {
		t.Fatal(err)
	}
	data, err := msgpack.Marshal(v, v.Type())
	if err != nil {
		t.Fatal(err)
	}
	return Stored{Type: tj, Data: data}
}

// A prior that comes with its stored bytes goes on the wire as exactly
// the bytes encoding it would give (the plugin keys its read priors by
// them), without walking the value, for schemas with and without dynamic
// attributes; a stored type that is not the schema's, or no stored form,
// falls back to encoding the value.
func TestEncodeStoredIsEncodeSent(t *testing.T) {
	static := (&Block{Attributes: map[string]*Attribute{
		"name": {Type: cty.String, Optional: true},
		"n":    {Type: cty.Number, Optional: true},
		"tags": {Type: cty.Map(cty.String), Optional: true},
		"id":   {Type: cty.String, Computed: true},
	}}).ImpliedType()
	dynamic := echoSchema.Block.ImpliedType()
	staticVal := cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("a"), "n": cty.NumberIntVal(300),
		"tags": cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")}), "id": cty.StringVal("x1")})
	cases := []struct {
		name string
		v    cty.Value
		ty   cty.Type
	}{
		{"static", staticVal, static},
		{"static with nulls", cty.ObjectVal(map[string]cty.Value{"name": cty.NullVal(cty.String), "n": cty.NullVal(cty.Number),
			"tags": cty.NullVal(cty.Map(cty.String)), "id": cty.StringVal("x1")}), static},
		{"dynamic string", cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("seed-1"), "id": cty.StringVal("ab")}), dynamic},
		{"dynamic object", cty.ObjectVal(map[string]cty.Value{"input": cty.ObjectVal(map[string]cty.Value{"a": cty.ListVal([]cty.Value{cty.True})}), "id": cty.StringVal("ab")}), dynamic},
		{"dynamic null", cty.ObjectVal(map[string]cty.Value{"input": cty.NullVal(cty.DynamicPseudoType), "id": cty.StringVal("ab")}), dynamic},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tj, err := c.ty.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := encodeSent(c.v, c.ty)
			if err != nil {
				t.Fatal(err)
			}
			st := stored(t, c.v)
			got, sent, err := encodeStored(c.v, st, c.ty, tj)
			if err != nil || !bytes.Equal(got, want) || !sent.RawEquals(c.v) {
				t.Fatalf("encodeStored = %x, %#v, %v; want %x and the value", got, sent, err, want)
			}
			if back, err := decodeValue(got, c.ty); err != nil || !back.RawEquals(c.v) {
				t.Errorf("decoded %#v, %v; want %#v", back, err, c.v)
			}
			if !c.ty.HasDynamicTypes() {
				// The stored bytes are sent as they are.
				if &got[0] != &st.Data[0] {
					t.Errorf("the stored bytes were copied or encoded again")
				}
				if n := testing.AllocsPerRun(100, func() { _, _, _ = encodeStored(c.v, st, c.ty, tj) }); n != 0 {
					t.Errorf("%v allocations; want 0", n)
				}
			} else if n := testing.AllocsPerRun(100, func() { _, _, _ = encodeStored(c.v, st, c.ty, tj) }); n > 1 {
				t.Errorf("%v allocations; want 1 (the message)", n)
			}
		})
	}
	t.Run("fallbacks", func(t *testing.T) {
		tj, _ := static.MarshalJSON()
		want, _, _ := encodeSent(staticVal, static)
		other := stored(t, cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("a")}))
		for name, st := range map[string]Stored{"none": {}, "another type": {Type: other.Type, Data: stored(t, staticVal).Data}} {
			if got, _, err := encodeStored(staticVal, st, static, tj); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %x, %v; want %x", name, got, err, want)
			}
		}
		if got, _, err := encodeStored(cty.NullVal(static), stored(t, staticVal), static, tj); err != nil || got != nil {
			t.Errorf("null prior: %x, %v; want no bytes", got, err)
		}
	})
}
