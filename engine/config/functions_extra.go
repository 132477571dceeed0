package config

// The functions here are sparkform's own code because no importable,
// well-kept implementation exists: OpenTofu keeps them in an internal
// package, and go-cty's stdlib and go-cty-funcs do not have them. Each
// follows OpenTofu v1.12.6's behaviour (see testdata/functions/opentofu.json
// and TestFunctionsMatchOpenTofu); the hashing, encoding and globbing
// themselves are the standard library's, golang.org/x/text's and
// go-cty-funcs'.

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net"
	"os"
	"time"

	ctycidr "github.com/hashicorp/go-cty-funcs/cidr"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	"github.com/zclconf/go-cty/cty/gocty"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/ianaindex"
)

// SensitiveMark is the cty mark sensitive() puts on a value. The engine
// takes it off where values leave the language (resource configuration,
// outputs) and treats what carried it as sensitive.
const SensitiveMark = "sensitive"

// base64Hash is base64sha256 and base64sha512: the hash's raw bytes in
// base64, not its hex digits.
func base64Hash(h func() hash.Hash) function.Function {
	return stringFunc(func(s string) (string, error) {
		d := h()
		d.Write([]byte(s))
		return base64.StdEncoding.EncodeToString(d.Sum(nil)), nil
	})
}

// fileHash is filemd5, filesha1, ..., filebase64sha512: the hash of a
// file's bytes (any bytes, not only UTF-8 text).
func fileHash(baseDir string, h func() hash.Hash, enc func([]byte) string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			b, err := os.ReadFile(resolvePath(baseDir, p))
			if err != nil {
				if os.IsNotExist(err) {
					return cty.NilVal, fmt.Errorf("no file exists at %s (relative paths start at the configuration directory; use path.module to be explicit)", p)
				}
				return cty.NilVal, err
			}
			d := h()
			d.Write(b)
			return cty.StringVal(enc(d.Sum(nil))), nil
		},
	})
}

func fileHashes(baseDir string) map[string]function.Function {
	b64 := base64.StdEncoding.EncodeToString
	return map[string]function.Function{
		"filemd5":          fileHash(baseDir, md5.New, hex.EncodeToString),
		"filesha1":         fileHash(baseDir, sha1.New, hex.EncodeToString),
		"filesha256":       fileHash(baseDir, sha256.New, hex.EncodeToString),
		"filesha512":       fileHash(baseDir, sha512.New, hex.EncodeToString),
		"filebase64sha256": fileHash(baseDir, sha256.New, b64),
		"filebase64sha512": fileHash(baseDir, sha512.New, b64),
	}
}

// base64gzipFunc gzips a string and base64-encodes the result, flushing
// before closing as OpenTofu does (the bytes differ otherwise).
var base64gzipFunc = stringFunc(func(s string) (string, error) {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	if _, err := gz.Write([]byte(s)); err != nil {
		return "", err
	}
	if err := gz.Flush(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b.Bytes()), nil
})

// textEncodeBase64Func encodes a string in a named character encoding
// (IANA names, golang.org/x/text) and base64-encodes the bytes.
var textEncodeBase64Func = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "string", Type: cty.String}, {Name: "encoding", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		enc, name, err := ianaEncoding(args[1].AsString())
		if err != nil {
			return cty.NilVal, function.NewArgError(1, err)
		}
		b, err := enc.NewEncoder().Bytes([]byte(args[0].AsString()))
		if err != nil {
			return cty.NilVal, function.NewArgErrorf(0, "the given string contains characters that cannot be represented in %s", name)
		}
		return cty.StringVal(base64.StdEncoding.EncodeToString(b)), nil
	},
})

// textDecodeBase64Func is textEncodeBase64Func's inverse.
var textDecodeBase64Func = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "source", Type: cty.String}, {Name: "encoding", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		enc, name, err := ianaEncoding(args[1].AsString())
		if err != nil {
			return cty.NilVal, function.NewArgError(1, err)
		}
		raw, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			if ce, ok := err.(base64.CorruptInputError); ok {
				return cty.NilVal, function.NewArgErrorf(0, "the given value has an invalid base64 symbol at offset %d", int(ce))
			}
			return cty.NilVal, function.NewArgErrorf(0, "invalid source string: %s", err)
		}
		b, err := enc.NewDecoder().Bytes(raw)
		if err != nil || bytes.ContainsRune(b, '\uFFFD') && !bytes.ContainsRune(raw, '\uFFFD') {
			return cty.NilVal, function.NewArgErrorf(0, "the given string contains bytes that are not valid %s", name)
		}
		return cty.StringVal(string(b)), nil
	},
})

// ianaEncoding looks up an IANA character set name or alias.
func ianaEncoding(label string) (encoding.Encoding, string, error) {
	enc, err := ianaindex.IANA.Encoding(label)
	if err != nil || enc == nil {
		return nil, "", fmt.Errorf("%q is not a supported IANA encoding name or alias", label)
	}
	name, err := ianaindex.IANA.Name(enc)
	if err != nil {
		name = label
	}
	return enc, name, nil
}

// signumFunc is signum on whole numbers only, as OpenTofu's: a fraction
// (or a number past int64) is an error, not its sign.
var signumFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "num", Type: cty.Number}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		var n int64
		if err := gocty.FromCtyValue(args[0], &n); err != nil {
			return cty.NilVal, err
		}
		switch {
		case n < 0:
			return cty.NumberIntVal(-1), nil
		case n > 0:
			return cty.NumberIntVal(1), nil
		}
		return cty.NumberIntVal(0), nil
	},
})

// lookupFunc is lookup(map, key[, default]): without a default a missing
// key is an error.
var lookupFunc = function.New(&function.Spec{
	Params: []function.Parameter{
		{Name: "inputMap", Type: cty.DynamicPseudoType, AllowMarked: true},
		{Name: "key", Type: cty.String, AllowMarked: true},
	},
	VarParam: &function.Parameter{Name: "default", Type: cty.DynamicPseudoType, AllowNull: true, AllowMarked: true, AllowUnknown: true, AllowDynamicType: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		switch len(args) {
		case 3:
			return stdlib.LookupFunc.ReturnTypeForValues(args)
		case 2:
		default:
			return cty.NilType, fmt.Errorf("lookup() takes two or three arguments, got %d", len(args))
		}
		ty := args[0].Type()
		switch {
		case ty.IsObjectType():
			if !args[1].IsKnown() {
				return cty.DynamicPseudoType, nil
			}
			k, _ := args[1].Unmark()
			if !ty.HasAttribute(k.AsString()) {
				return cty.NilType, function.NewArgErrorf(0, "the given object has no attribute %q", k.AsString())
			}
			return ty.AttributeType(k.AsString()), nil
		case ty.IsMapType():
			return ty.ElementType(), nil
		case ty == cty.DynamicPseudoType:
			return cty.DynamicPseudoType, nil
		}
		return cty.NilType, function.NewArgErrorf(0, "lookup() requires a map as the first argument")
	},
	Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
		if len(args) == 3 {
			return stdlib.LookupFunc.Call(args)
		}
		m, mm := args[0].Unmark()
		k, km := args[1].Unmark()
		if !m.IsKnown() || !k.IsKnown() {
			return cty.UnknownVal(ret).WithMarks(mm, km), nil
		}
		key := k.AsString()
		if m.Type().IsObjectType() {
			return m.GetAttr(key).WithMarks(mm, km), nil
		}
		if !m.HasIndex(k).True() {
			return cty.NilVal, function.NewArgErrorf(0, "the given map has no key %q", key)
		}
		return m.Index(k).WithMarks(mm, km), nil
	},
})

// matchkeysFunc keeps the values whose key (same position) is in the
// search set.
var matchkeysFunc = function.New(&function.Spec{
	Params: []function.Parameter{
		{Name: "values", Type: cty.List(cty.DynamicPseudoType)},
		{Name: "keys", Type: cty.List(cty.DynamicPseudoType)},
		{Name: "searchset", Type: cty.List(cty.DynamicPseudoType)},
	},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty, _ := convert.UnifyUnsafe([]cty.Type{args[1].Type(), args[2].Type()})
		if ty == cty.NilType {
			return cty.NilType, fmt.Errorf("keys and searchset must be of the same type")
		}
		return args[0].Type(), nil
	},
	Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
		values, keys, search := args[0], args[1], args[2]
		if !values.IsWhollyKnown() || !keys.IsWhollyKnown() || !search.IsWhollyKnown() {
			return cty.UnknownVal(ret), nil
		}
		if values.LengthInt() != keys.LengthInt() {
			return cty.NilVal, fmt.Errorf("length of keys and values should be equal")
		}
		var out []cty.Value
		i := 0
		for it := keys.ElementIterator(); it.Next(); i++ {
			_, key := it.Element()
			for sit := search.ElementIterator(); sit.Next(); {
				_, s := sit.Element()
				eq, err := stdlib.Equal(key, s)
				if err != nil {
					return cty.NilVal, err
				}
				if !eq.IsKnown() {
					return cty.UnknownVal(ret), nil
				}
				if eq.True() {
					out = append(out, values.Index(cty.NumberIntVal(int64(i))))
					break
				}
			}
		}
		if len(out) == 0 {
			return cty.ListValEmpty(ret.ElementType()), nil
		}
		return cty.ListVal(out), nil
	},
})

// timecmpFunc compares two RFC 3339 timestamps: -1, 0 or 1.
var timecmpFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "timestamp_a", Type: cty.String}, {Name: "timestamp_b", Type: cty.String}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		var ts [2]time.Time
		for i := range ts {
			t, err := time.Parse(time.RFC3339, args[i].AsString())
			if err != nil {
				return cty.NilVal, function.NewArgErrorf(i, "not a valid RFC3339 timestamp: %s", err)
			}
			ts[i] = t
		}
		return cty.NumberIntVal(int64(ts[0].Compare(ts[1]))), nil
	},
})

// templateStringFunc renders a template given as a string, with the same
// rules as templatefile.
func templateStringFunc(funcs map[string]function.Function) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "template", Type: cty.String}, {Name: "vars", Type: cty.DynamicPseudoType}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return renderTemplate(args[0].AsString(), "<templatestring>", args[1], funcs)
		},
	})
}

// sensitiveFunc marks a value sensitive; nonsensitiveFunc takes the mark
// off; issensitiveFunc tells whether it is there.
var sensitiveFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowUnknown: true, AllowNull: true, AllowMarked: true, AllowDynamicType: true}},
	Type:   func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil },
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return args[0].Mark(SensitiveMark), nil
	},
})

var nonsensitiveFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowUnknown: true, AllowNull: true, AllowMarked: true, AllowDynamicType: true}},
	Type:   func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil },
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v, m := args[0].Unmark()
		delete(m, SensitiveMark)
		return v.WithMarks(m), nil
	},
})

var issensitiveFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowUnknown: true, AllowNull: true, AllowMarked: true, AllowDynamicType: true}},
	Type:   function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.BoolVal(args[0].HasMark(SensitiveMark)), nil
	},
})

// renderTemplate is templatefile's and templatestring's body: every
// variable the template uses must be in vars.
func renderTemplate(src, name string, varsVal cty.Value, funcs map[string]function.Function) (cty.Value, error) {
	vt := varsVal.Type()
	if !(vt.IsMapType() || vt.IsObjectType()) {
		return cty.NilVal, function.NewArgErrorf(1, "the template variables must be a map or object, not %s", vt.FriendlyName())
	}
	if !varsVal.IsWhollyKnown() {
		return cty.UnknownVal(cty.String), nil
	}
	vars := map[string]cty.Value{}
	for it := varsVal.ElementIterator(); it.Next(); {
		k, v := it.Element()
		if !hclsyntax.ValidIdentifier(k.AsString()) {
			return cty.NilVal, function.NewArgErrorf(1, "template variable %q is not a valid name", k.AsString())
		}
		vars[k.AsString()] = v
	}
	tmpl, diags := hclsyntax.ParseTemplate([]byte(src), name, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("cannot parse template %s: %s", name, diags.Error())
	}
	for _, tr := range tmpl.Variables() {
		if _, ok := vars[tr.RootName()]; !ok {
			return cty.NilVal, function.NewArgErrorf(1, "the vars have no %q, which the template uses at %s", tr.RootName(), tr.SourceRange())
		}
	}
	v, diags := tmpl.Value(&hcl.EvalContext{Variables: vars, Functions: funcs})
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("cannot render template %s: %s", name, diags.Error())
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil || s.IsNull() {
		return cty.NilVal, fmt.Errorf("template %s must produce a string, not %s", name, v.Type().FriendlyName())
	}
	return s, nil
}

// cidrNetmaskFunc is go-cty-funcs' cidrnetmask, refusing IPv6 prefixes as
// OpenTofu does: a dotted netmask means nothing for them.
var cidrNetmaskFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "prefix", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if _, n, err := net.ParseCIDR(args[0].AsString()); err == nil && n.IP.To4() == nil {
			return cty.NilVal, fmt.Errorf("IPv6 addresses cannot have a netmask: %s", args[0].AsString())
		}
		return ctycidr.NetmaskFunc.Call(args)
	},
})
