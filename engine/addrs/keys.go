package addrs

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode"

	"github.com/zclconf/go-cty/cty"
)

// InstanceKey identifies one instance of a block expanded with for_each
// (StringKey) or count (IntKey), or the only instance of a plain block
// (NoKey).
type InstanceKey interface {
	// String renders the key as an index suffix: "", "[0]", `["a"]`.
	String() string
	// Value is the key as each.key / count.index see it; cty.NilVal for NoKey.
	Value() cty.Value
}

// NoKey is the key of the single instance of a block without for_each or
// count. It is not nil, so String() is always safe to call.
var NoKey InstanceKey = noKey{}

type noKey struct{}

func (noKey) String() string   { return "" }
func (noKey) Value() cty.Value { return cty.NilVal }

// IntKey is a count index.
type IntKey int

func (k IntKey) String() string   { return "[" + strconv.Itoa(int(k)) + "]" }
func (k IntKey) Value() cty.Value { return cty.NumberIntVal(int64(k)) }

// StringKey is a for_each key.
type StringKey string

func (k StringKey) String() string   { return "[" + quoteHCL(string(k)) + "]" }
func (k StringKey) Value() cty.Value { return cty.StringVal(string(k)) }

var (
	_ InstanceKey = noKey{}
	_ InstanceKey = IntKey(0)
	_ InstanceKey = StringKey("")
)

// keyString renders k, treating nil as NoKey.
func keyString(k InstanceKey) string {
	if k == nil {
		return ""
	}
	return k.String()
}

// KeyFromValue converts an index value (a string or a whole number) into
// an InstanceKey.
func KeyFromValue(v cty.Value) (InstanceKey, error) {
	if v.IsNull() || !v.IsKnown() {
		return nil, fmt.Errorf("an instance key must be a known string or number")
	}
	switch v.Type() {
	case cty.String:
		return StringKey(v.AsString()), nil
	case cty.Number:
		bf := v.AsBigFloat()
		if !bf.IsInt() || bf.Sign() < 0 {
			return nil, fmt.Errorf("an instance index must be a whole number >= 0, not %s", bf.Text('f', -1))
		}
		i, acc := bf.Int64()
		if acc != big.Exact || i > int64(^uint32(0)>>1) {
			return nil, fmt.Errorf("instance index %s is too large", bf.Text('f', -1))
		}
		return IntKey(int(i)), nil
	}
	return nil, fmt.Errorf("an instance key must be a string or number, not %s", v.Type().FriendlyName())
}

// quoteHCL quotes s as an HCL string literal, so that the result parses
// back to s (HCL has no \x escapes and treats ${ and %{ as templates).
func quoteHCL(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case (r == '$' || r == '%') && i+1 < len(s) && s[i+1] == '{':
			b.WriteRune(r)
			b.WriteRune(r)
		case !unicode.IsPrint(r):
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
