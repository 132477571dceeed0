package sdk

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// Every value cty writes passes the bound check: it refuses only what no
// encoder writes.
func TestCheckMsgpackAcceptsCtyValues(t *testing.T) {
	big := make([]cty.Value, 70000)
	for i := range big {
		big[i] = cty.NumberIntVal(int64(i) * 1e12)
	}
	long := strings.Repeat("x", 70000)
	for name, v := range map[string]cty.Value{
		"object": cty.ObjectVal(map[string]cty.Value{
			"s": cty.StringVal("a"), "n": cty.NumberFloatVal(1.5), "b": cty.True, "null": cty.NullVal(cty.String),
			"unknown": cty.UnknownVal(cty.List(cty.String)), "neg": cty.NumberIntVal(-1 << 40),
			"map": cty.MapVal(map[string]cty.Value{"k": cty.StringVal(long)}),
			"set": cty.SetVal([]cty.Value{cty.StringVal("p")}),
		}),
		"long list":    cty.ListVal(big),
		"long string":  cty.StringVal(long),
		"dynamic":      cty.DynamicVal,
		"tuple":        cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(2)}),
		"huge number":  cty.MustParseNumberVal("1e400"),
		"empty string": cty.StringVal(""),
	} {
		for _, ty := range []cty.Type{v.Type(), cty.DynamicPseudoType} {
			b, err := msgpack.Marshal(v, ty)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := CheckMsgpack(b); err != nil {
				t.Errorf("%s as %s: %v", name, ty.FriendlyName(), err)
			}
		}
	}
}

func TestCheckMsgpackRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"array32 of 2^31-1", []byte{0xdd, 0x7f, 0xff, 0xff, 0xff}, "2147483647 values declared"},
		{"map32 of 2^32-1", []byte{0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0}, "values declared"},
		{"str32 of 2^31", []byte{0xdb, 0x80, 0, 0, 0, 'a'}, "bytes declared"},
		{"bin16 short", []byte{0xc5, 0x01, 0x00}, "bytes declared"},
		{"ext32", []byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x00}, "bytes declared"},
		{"truncated length", []byte{0xdd, 0x00}, "truncated length"},
		{"missing element", []byte{0x92, 0x01}, "2 values declared at byte 1, only 1 bytes left"},
		{"missing element after a nested one", []byte{0x92, 0x91, 0x01}, "truncated at byte 3"},
		{"never-used byte", []byte{0xc1}, "not msgpack"},
		{"trailing", []byte{0x01, 0x02}, "1 trailing bytes"},
		{"empty", nil, "truncated"},
		{"too deep", append(repeat(0x91, MaxValueDepth+1), 0xc0), "nested deeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckMsgpack(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckMsgpack(% x): %v, want %q", tc.b[:min(len(tc.b), 12)], err, tc.want)
			}
		})
	}
}

func repeat(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

// A plugin reply that declares 2^31-1 list elements in 26 bytes is an
// error for that reply (it used to run the CLI out of memory).
func TestPluginReplyDeclaringHugeList(t *testing.T) {
	schema := cty.Object(map[string]cty.Type{"items": cty.List(cty.String)})
	reply := []byte{0x81, 0xa5, 'i', 't', 'e', 'm', 's', 0xdd, 0x7f, 0xff, 0xff, 0xff}
	if _, err := decodeValue(reply, schema); err == nil || !strings.Contains(err.Error(), "2147483647 values declared") {
		t.Fatalf("decodeValue: %v", err)
	}
	dyn := cty.Object(map[string]cty.Type{"items": cty.DynamicPseudoType})
	tj := `{"items":["list","string"]}`
	concrete := append(append([]byte{concreteMarker, byte(len(`["object",`) + len(tj) + 1)}, `["object",`+tj+`]`...), reply...)
	if _, err := decodeValue(concrete, dyn); err == nil || !strings.Contains(err.Error(), "values declared") {
		t.Fatalf("decodeValue(concrete): %v", err)
	}
}

// A reply whose object lacks schema attributes (an empty map, found by
// FuzzPluginReply) is an error, not a value of another type.
func TestPluginReplyMissingAttributes(t *testing.T) {
	schema := cty.Object(map[string]cty.Type{"id": cty.String, "n": cty.Number})
	if v, err := decodeValue([]byte{0x80}, schema); err == nil || !strings.Contains(err.Error(), "does not conform") {
		t.Errorf("decodeValue(empty map) = %#v, %v; want a conformance error", v, err)
	}
	if v, err := decodeValue([]byte{0x81, 0xa2, 'i', 'd', 0xa1, 'x'}, schema); err == nil {
		t.Errorf("decodeValue(map without n) = %#v; want an error", v)
	}
}
