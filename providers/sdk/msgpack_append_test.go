package sdk

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// appendValue writes exactly what cty's msgpack.Marshal writes, at every
// size boundary of the format, or declines.
func TestAppendValueMatchesCty(t *testing.T) {
	type tc struct {
		v  cty.Value
		ty cty.Type
	}
	var cases []tc
	add := func(v cty.Value) { cases = append(cases, tc{v, v.Type()}) }
	for _, n := range []int{0, 1, 31, 32, 255, 256, 65535, 65536} {
		add(cty.StringVal(strings.Repeat("x", n)))
	}
	add(cty.StringVal("héllo wörld ✓"))
	for _, n := range []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64} {
		add(cty.NumberIntVal(n))
	}
	add(cty.NumberFloatVal(2.5))
	add(cty.MustParseNumberVal("123456789012345678901234567890"))
	add(cty.PositiveInfinity)
	add(cty.True)
	add(cty.False)
	add(cty.NullVal(cty.String))
	add(cty.UnknownVal(cty.String))
	add(cty.UnknownVal(cty.Bool))
	add(cty.UnknownVal(cty.Bool).RefineNotNull())
	add(cty.UnknownVal(cty.Number))
	add(cty.UnknownVal(cty.List(cty.String)).Refine().CollectionLengthLowerBound(1).NewValue())
	add(cty.UnknownVal(cty.String).RefineNotNull())
	add(cty.UnknownVal(cty.String).Refine().StringPrefix("abc").NewValue())
	add(cty.UnknownVal(cty.Number).Refine().NumberRangeLowerBound(cty.NumberIntVal(3), true).NewValue())
	add(cty.DynamicVal)
	for _, n := range []int{0, 1, 15, 16, 70000} {
		l := make([]cty.Value, n)
		m := map[string]cty.Value{}
		for i := range l {
			l[i] = cty.NumberIntVal(int64(i))
			m[strings.Repeat("k", i%40)+string(rune('a'+i%26))+strings.Repeat("z", i/1000)] = cty.StringVal("v")
		}
		if n == 0 {
			add(cty.ListValEmpty(cty.Number))
			add(cty.SetValEmpty(cty.Number))
			add(cty.MapValEmpty(cty.String))
			add(cty.EmptyTupleVal)
			add(cty.EmptyObjectVal)
			continue
		}
		add(cty.ListVal(l))
		if n > 1000 {
			continue // the 32-bit array header; sets, maps and tuples share the code
		}
		add(cty.SetVal(l))
		add(cty.MapVal(m))
		add(cty.TupleVal(l))
		if n < 100 {
			obj := map[string]cty.Value{}
			for k, v := range m {
				obj[k] = v
			}
			add(cty.ObjectVal(obj))
		}
	}
	obj := cty.ObjectVal(map[string]cty.Value{
		"name":   cty.StringVal("a"),
		"id":     cty.UnknownVal(cty.String),
		"tags":   cty.MapVal(map[string]cty.Value{"b": cty.StringVal("2"), "a": cty.StringVal("1")}),
		"nested": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"x": cty.NullVal(cty.Number), "y": cty.SetVal([]cty.Value{cty.True, cty.False})})}),
		"tuple":  cty.TupleVal([]cty.Value{cty.StringVal("s"), cty.NumberIntVal(-7), cty.NullVal(cty.DynamicPseudoType)}),
		"dyn":    cty.NullVal(cty.DynamicPseudoType),
	})
	add(obj)
	add(cty.NullVal(obj.Type()))
	add(cty.UnknownVal(obj.Type()))
	// Against a schema type with dynamic parts, and against another type
	// (the value needs converting): appendValue declines, Marshal decides.
	dynTy := cty.Object(map[string]cty.Type{"input": cty.DynamicPseudoType, "id": cty.String})
	cases = append(cases,
		tc{cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("x"), "id": cty.StringVal("i")}), dynTy},
		tc{cty.ObjectVal(map[string]cty.Value{"input": cty.NullVal(cty.DynamicPseudoType), "id": cty.StringVal("i")}), dynTy},
		tc{cty.ObjectVal(map[string]cty.Value{"input": cty.DynamicVal, "id": cty.NullVal(cty.String)}), dynTy},
		tc{cty.TupleVal([]cty.Value{cty.StringVal("a")}), cty.List(cty.String)},
		tc{cty.NumberIntVal(1), cty.String},
		tc{cty.NullVal(cty.DynamicPseudoType), cty.String},
		tc{cty.StringVal("s").Mark("sensitive"), cty.String},
		tc{cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x").Mark("m")}), cty.Object(map[string]cty.Type{"a": cty.String})},
	)
	fast := 0
	for i, c := range cases {
		want, werr := msgpack.Marshal(c.v, c.ty)
		got, ok := appendValue(nil, c.v, c.ty)
		if !ok {
			continue
		}
		fast++
		if werr != nil {
			t.Errorf("case %d (%#v as %s): appendValue wrote %x where msgpack.Marshal fails: %v", i, c.v, c.ty.FriendlyName(), got, werr)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("case %d (%.200s as %s):\n got %x\nwant %x", i, c.v.GoString(), c.ty.FriendlyName(), trim(got), trim(want))
		}
	}
	if fast < len(cases)-12 {
		t.Errorf("appendValue took only %d of %d cases", fast, len(cases))
	}
}

func trim(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// The fallback is right too: every case round-trips through
// encodeValue/decodeValue.
func TestEncodeValueRoundTripsWithFastPath(t *testing.T) {
	ty := cty.Object(map[string]cty.Type{"input": cty.DynamicPseudoType, "output": cty.DynamicPseudoType, "id": cty.String, "n": cty.Number})
	for _, v := range []cty.Value{
		cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("x"), "output": cty.MapVal(map[string]cty.Value{"a": cty.NumberIntVal(1)}), "id": cty.UnknownVal(cty.String), "n": cty.NumberFloatVal(0.5)}),
		cty.ObjectVal(map[string]cty.Value{"input": cty.NullVal(cty.DynamicPseudoType), "output": cty.DynamicVal, "id": cty.StringVal("i"), "n": cty.NumberIntVal(-3)}),
		cty.NullVal(ty),
	} {
		b, err := encodeValue(v, ty)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeValue(b, ty)
		if err != nil {
			t.Fatal(err)
		}
		if !got.RawEquals(v) {
			t.Errorf("round trip of %#v gave %#v", v, got)
		}
	}
}

func BenchmarkEncodeValue(b *testing.B) {
	ty := cty.Object(map[string]cty.Type{"input": cty.DynamicPseudoType, "output": cty.DynamicPseudoType, "triggers_replace": cty.DynamicPseudoType, "id": cty.String})
	v := cty.ObjectVal(map[string]cty.Value{"input": cty.StringVal("seed-1"), "output": cty.StringVal("seed-1"), "triggers_replace": cty.NullVal(cty.DynamicPseudoType), "id": cty.StringVal("0123456789abcdef")})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeValue(v, ty); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzAppendValue: any value a plugin could send, decoded, encodes the
// same through appendValue as through msgpack.Marshal (or is declined).
func FuzzAppendValue(f *testing.F) {
	ty := cty.Object(map[string]cty.Type{
		"s": cty.String, "n": cty.Number, "b": cty.Bool, "l": cty.List(cty.String), "set": cty.Set(cty.Number),
		"m": cty.Map(cty.Bool), "t": cty.Tuple([]cty.Type{cty.String, cty.Number}), "d": cty.DynamicPseudoType,
	})
	for _, v := range []cty.Value{
		cty.NullVal(ty), cty.UnknownVal(ty),
		cty.ObjectVal(map[string]cty.Value{"s": cty.StringVal("x"), "n": cty.NumberIntVal(300), "b": cty.True,
			"l": cty.ListVal([]cty.Value{cty.StringVal("a")}), "set": cty.SetVal([]cty.Value{cty.NumberIntVal(1), cty.NumberFloatVal(1.5)}),
			"m": cty.MapVal(map[string]cty.Value{"k": cty.False}), "t": cty.TupleVal([]cty.Value{cty.StringVal(""), cty.NumberIntVal(-70000)}),
			"d": cty.ListVal([]cty.Value{cty.NumberIntVal(2)})}),
	} {
		b, err := msgpack.Marshal(v, ty)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeValue(b, ty)
		if err != nil {
			return
		}
		want, err := msgpack.Marshal(v, ty)
		got, ok := appendValue(nil, v, ty)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("appendValue wrote %x where msgpack.Marshal fails: %v", got, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("value %#v:\n got %x\nwant %x", v, got, want)
		}
	})
}
