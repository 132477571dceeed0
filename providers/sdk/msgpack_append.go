package sdk

import (
	"encoding/binary"
	"math"
	"math/big"
	"sort"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// appendValue appends the msgpack encoding of v as type ty to b, byte for
// byte what cty's msgpack.Marshal writes, for the values plans and applies
// carry: known strings, bools, whole numbers, nulls, collections, tuples and
// objects whose type is ty exactly. It reports false, having appended
// nothing useful, for anything else (a value whose type differs from ty
// and would need converting, marks, fractional or huge numbers, a value
// of a dynamic attribute that is not itself dynamic), which the caller
// then encodes with msgpack.Marshal. cty's encoder checks the whole
// value's conformance first, then normalises every attribute name twice
// through Unicode NFC and builds a path as it goes: a third of the
// engine's cost of a plan call.
func appendValue(b []byte, v cty.Value, ty cty.Type) ([]byte, bool) {
	if v.IsMarked() {
		return b, false
	}
	if ty == cty.DynamicPseudoType {
		if v.Type() != cty.DynamicPseudoType {
			return b, false // msgpack.Marshal wraps it with its type
		}
		if v.IsNull() {
			return append(b, 0xc0), true
		}
		return append(b, 0xd4, 0, 0), true // cty.DynamicVal
	}
	if !v.IsKnown() {
		// An unknown string or bool with no refinements is msgpack's
		// fixext 0 (what unknown ids and outputs are in a plan); cty
		// writes any other unknown, with what refines it.
		if (ty == cty.String || ty == cty.Bool) && v.Type() == ty {
			if rng := v.Range(); !rng.DefinitelyNotNull() && (ty == cty.Bool || rng.StringPrefix() == "") {
				return append(b, 0xd4, 0, 0), true
			}
		}
		if !v.Type().Equals(ty) {
			return b, false
		}
		enc, err := msgpack.Marshal(v, ty)
		if err != nil {
			return b, false
		}
		return append(b, enc...), true
	}
	switch {
	case ty.IsPrimitiveType():
		if v.Type() != ty {
			return b, false
		}
		if v.IsNull() {
			return append(b, 0xc0), true
		}
		switch ty {
		case cty.String:
			return appendString(b, v.AsString()), true
		case cty.Bool:
			if v.True() {
				return append(b, 0xc3), true
			}
			return append(b, 0xc2), true
		case cty.Number:
			bf := v.AsBigFloat()
			if bf.IsInf() {
				return b, false
			}
			n, acc := bf.Int64()
			if acc != big.Exact {
				return b, false
			}
			return appendInt(b, n), true
		}
		return b, false
	case ty.IsListType(), ty.IsSetType():
		vt := v.Type()
		if ty.IsListType() && !vt.IsListType() || ty.IsSetType() && !vt.IsSetType() {
			return b, false
		}
		if v.IsNull() {
			return append(b, 0xc0), true
		}
		ety := ty.ElementType()
		b = appendLen(b, v.LengthInt(), 0x90, 0xdc)
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			var ok bool
			if b, ok = appendValue(b, ev, ety); !ok {
				return b, false
			}
		}
		return b, true
	case ty.IsMapType():
		if !v.Type().IsMapType() {
			return b, false
		}
		if v.IsNull() {
			return append(b, 0xc0), true
		}
		ety := ty.ElementType()
		b = appendLen(b, v.LengthInt(), 0x80, 0xde)
		for it := v.ElementIterator(); it.Next(); {
			ek, ev := it.Element()
			b = appendString(b, ek.AsString())
			var ok bool
			if b, ok = appendValue(b, ev, ety); !ok {
				return b, false
			}
		}
		return b, true
	case ty.IsTupleType():
		vt := v.Type()
		etys := ty.TupleElementTypes()
		if !vt.IsTupleType() || len(vt.TupleElementTypes()) != len(etys) {
			return b, false
		}
		if v.IsNull() {
			return append(b, 0xc0), true
		}
		b = appendLen(b, len(etys), 0x90, 0xdc)
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, ev := it.Element()
			var ok bool
			if b, ok = appendValue(b, ev, etys[i]); !ok {
				return b, false
			}
		}
		return b, true
	case ty.IsObjectType():
		vt := v.Type()
		if !vt.IsObjectType() || len(ty.OptionalAttributes()) > 0 {
			return b, false
		}
		atys := ty.AttributeTypes()
		if len(vt.AttributeTypes()) != len(atys) {
			return b, false
		}
		if v.IsNull() {
			return append(b, 0xc0), true
		}
		names := make([]string, 0, len(atys))
		for k := range atys {
			if !vt.HasAttribute(k) {
				return b, false
			}
			names = append(names, k)
		}
		sort.Strings(names)
		b = appendLen(b, len(names), 0x80, 0xde)
		for _, k := range names {
			b = appendString(b, k)
			var ok bool
			if b, ok = appendValue(b, v.GetAttr(k), atys[k]); !ok {
				return b, false
			}
		}
		return b, true
	}
	return b, false // capsules: msgpack.Marshal says why not
}

// appendLen appends an array (fix 0x90, 0xdc) or map (fix 0x80, 0xde)
// header of n elements, as vmihailenco/msgpack writes it.
func appendLen(b []byte, n int, fix, code16 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, code16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, code16+1), uint32(n))
}

func appendString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 256:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// appendInt writes n in the fewest bytes, as msgpack's EncodeInt with
// compact ints does.
func appendInt(b []byte, n int64) []byte {
	if n >= 0 {
		u := uint64(n)
		switch {
		case u <= math.MaxInt8:
			return append(b, byte(u))
		case u <= math.MaxUint8:
			return append(b, 0xcc, byte(u))
		case u <= math.MaxUint16:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(u))
		case u <= math.MaxUint32:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(u))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcf), u)
	}
	switch {
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}
