package ctyval

import (
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestReaders(t *testing.T) {
	unknownStr := cty.UnknownVal(cty.String)
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"Str string", Str(cty.StringVal("a")), "a"},
		{"Str null", Str(cty.NullVal(cty.String)), ""},
		{"Str unknown", Str(unknownStr), ""},
		{"Str wrong type", Str(cty.True), ""},
		{"Bool default on null", Bool(cty.NullVal(cty.Bool), true), true},
		{"Bool value", Bool(cty.False, true), false},
		{"Number", Number(cty.NumberFloatVal(1.5)), 1.5},
		{"Number null", Number(cty.NullVal(cty.Number)), 0.0},
		{"StrList null is nil", StrList(cty.NullVal(cty.List(cty.String))) == nil, true},
		{"StrList", StrList(cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")})), []string{"a", "b"}},
		{"StrList empty is empty", StrList(cty.ListValEmpty(cty.String)), []string{}},
		{"StrMap null is nil", StrMap(cty.NullVal(cty.Map(cty.String))) == nil, true},
		{"StrMap leaves out null elements", StrMap(cty.MapVal(map[string]cty.Value{"a": cty.StringVal("1"), "b": cty.NullVal(cty.String)})), map[string]string{"a": "1"}},
		{"StrMap leaves out unknown elements", StrMap(cty.MapVal(map[string]cty.Value{"a": unknownStr})), map[string]string{}},
		{"Attr of null object is unknown", Attr(cty.NullVal(cty.Object(map[string]cty.Type{"x": cty.String})), "x").IsKnown(), false},
		{"Known", Known(cty.ListVal([]cty.Value{unknownStr})), false},
		{"IsSet unknown", IsSet(unknownStr), false},
		{"Elems", len(Elems(cty.TupleVal([]cty.Value{cty.True, cty.False}))), 2},
		{"SortedKeys", SortedKeys(map[string]string{"b": "", "a": ""}), []string{"a", "b"}},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s: got %#v, want %#v", tt.name, tt.got, tt.want)
		}
	}
}

func TestBuilders(t *testing.T) {
	tests := []struct {
		name string
		got  cty.Value
		want cty.Value
	}{
		{"ListVal nil is empty", ListVal(nil), cty.ListValEmpty(cty.String)},
		{"ListOrNull nil is null", ListOrNull(nil), cty.NullVal(cty.List(cty.String))},
		{"ListOrNull empty is empty", ListOrNull([]string{}), cty.ListValEmpty(cty.String)},
		{"ListOrNull", ListOrNull([]string{"a"}), cty.ListVal([]cty.Value{cty.StringVal("a")})},
		{"SetOrNull nil", SetOrNull(nil), cty.NullVal(cty.Set(cty.String))},
		{"SetOrNull empty", SetOrNull([]string{}), cty.SetValEmpty(cty.String)},
		{"MapVal nil is empty", MapVal(nil), cty.MapValEmpty(cty.String)},
		{"MapOrNull nil is null", MapOrNull(nil), cty.NullVal(cty.Map(cty.String))},
		{"MapOrNull", MapOrNull(map[string]string{"k": "v"}), cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")})},
		{"StrOrNull empty", StrOrNull(""), cty.NullVal(cty.String)},
		{"NumVal", NumVal(2), cty.NumberIntVal(2)},
		{"With replaces and adds", With(cty.ObjectVal(map[string]cty.Value{"a": cty.True}), map[string]cty.Value{"a": cty.False, "b": cty.True}),
			cty.ObjectVal(map[string]cty.Value{"a": cty.False, "b": cty.True})},
	}
	for _, tt := range tests {
		if !tt.got.RawEquals(tt.want) {
			t.Errorf("%s: got %#v, want %#v", tt.name, tt.got, tt.want)
		}
	}
}
