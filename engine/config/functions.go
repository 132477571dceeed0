package config

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	ctycidr "github.com/hashicorp/go-cty-funcs/cidr"
	ctycrypto "github.com/hashicorp/go-cty-funcs/crypto"
	ctyenc "github.com/hashicorp/go-cty-funcs/encoding"
	ctyfs "github.com/hashicorp/go-cty-funcs/filesystem"
	ctyuuid "github.com/hashicorp/go-cty-funcs/uuid"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	ctyyaml "github.com/zclconf/go-cty-yaml"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/sparkform/sparkform/internal/sshconfig"
)

// Functions returns the function table of the language. File functions
// resolve relative paths against baseDir. Every function is deterministic
// (no uuid, timestamp): a plan must not change by itself.
func Functions(baseDir string) map[string]function.Function {
	fs := map[string]function.Function{
		// numeric
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc,
		"log": stdlib.LogFunc, "max": stdlib.MaxFunc, "min": stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc, "pow": stdlib.PowFunc, "signum": signumFunc,
		"sum": sumFunc,
		// strings
		"chomp": stdlib.ChompFunc, "format": stdlib.FormatFunc, "formatlist": stdlib.FormatListFunc,
		"indent": stdlib.IndentFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc,
		"upper": stdlib.UpperFunc, "replace": replaceFunc, "split": stdlib.SplitFunc,
		"strrev": stdlib.ReverseFunc, "substr": stdlib.SubstrFunc, "title": stdlib.TitleFunc,
		"trimspace": stdlib.TrimSpaceFunc, "trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc,
		"trimsuffix": stdlib.TrimSuffixFunc, "regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc,
		"startswith":  stringPredicate("prefix", strings.HasPrefix),
		"endswith":    stringPredicate("suffix", strings.HasSuffix),
		"strcontains": stringPredicate("substr", strings.Contains),
		"formatdate":  stdlib.FormatDateFunc, "timeadd": stdlib.TimeAddFunc,
		// collections
		"alltrue": boolFold(true), "anytrue": boolFold(false),
		"chunklist": stdlib.ChunklistFunc, "coalesce": coalesceFunc,
		"coalescelist": stdlib.CoalesceListFunc, "compact": stdlib.CompactFunc,
		"concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc, "distinct": stdlib.DistinctFunc,
		"element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc, "index": indexFunc,
		"keys": stdlib.KeysFunc, "length": lengthFunc, "lookup": lookupFunc,
		"merge": stdlib.MergeFunc, "one": oneFunc, "range": stdlib.RangeFunc,
		"reverse": stdlib.ReverseListFunc, "setintersection": stdlib.SetIntersectionFunc,
		"setproduct": stdlib.SetProductFunc, "setsubtract": stdlib.SetSubtractFunc,
		"setunion": stdlib.SetUnionFunc, "slice": stdlib.SliceFunc, "sort": stdlib.SortFunc,
		"transpose": transposeFunc, "values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
		// conversion
		"tobool": toFunc("tobool", cty.Bool), "tonumber": toFunc("tonumber", cty.Number),
		"tostring": toFunc("tostring", cty.String), "tolist": toFunc("tolist", cty.List(cty.DynamicPseudoType)),
		"toset": toFunc("toset", cty.Set(cty.DynamicPseudoType)), "tomap": toFunc("tomap", cty.Map(cty.DynamicPseudoType)),
		"try": tryfunc.TryFunc, "can": tryfunc.CanFunc,
		// encoding and hashing
		"jsonencode": stdlib.JSONEncodeFunc, "jsondecode": stdlib.JSONDecodeFunc,
		"csvdecode":    stdlib.CSVDecodeFunc,
		"base64encode": stringFunc(func(s string) (string, error) { return base64.StdEncoding.EncodeToString([]byte(s)), nil }),
		"base64decode": stringFunc(base64Decode),
		"sha256":       stringFunc(func(s string) (string, error) { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]), nil }),
		"sha1":         stringFunc(func(s string) (string, error) { h := sha1.Sum([]byte(s)); return hex.EncodeToString(h[:]), nil }),
		"md5":          stringFunc(func(s string) (string, error) { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]), nil }),
		// filesystem
		"file":       fileFunc(baseDir),
		"fileexists": fileExistsFunc(baseDir),
		"basename":   stringFunc(func(s string) (string, error) { return filepath.Base(s), nil }),
		"dirname":    stringFunc(func(s string) (string, error) { return filepath.Dir(s), nil }),
		"pathexpand": stringFunc(func(s string) (string, error) { return sshconfig.ExpandHome(s), nil }),
		// abspath takes ~ literally, as OpenTofu does; pathexpand expands it.
		"abspath": stringFunc(func(s string) (string, error) {
			if !filepath.IsAbs(s) && baseDir != "" {
				s = filepath.Join(baseDir, s)
			}
			return filepath.Abs(s)
		}),
		"filebase64": ctyfs.MakeFileFunc(baseDir, true),
		"fileset":    ctyfs.MakeFileSetFunc(baseDir),
		// encoding, hashing, ids
		"urlencode":        ctyenc.URLEncodeFunc,
		"yamlencode":       ctyyaml.YAMLEncodeFunc,
		"yamldecode":       ctyyaml.YAMLDecodeFunc,
		"textencodebase64": textEncodeBase64Func,
		"textdecodebase64": textDecodeBase64Func,
		"base64gzip":       base64gzipFunc,
		"sha512":           ctycrypto.Sha512Func,
		"base64sha256":     base64Hash(sha256.New),
		"base64sha512":     base64Hash(sha512.New),
		"uuidv5":           ctyuuid.V5Func,
		// networking
		"cidrhost": ctycidr.HostFunc, "cidrnetmask": cidrNetmaskFunc,
		"cidrsubnet": ctycidr.SubnetFunc, "cidrsubnets": ctycidr.SubnetsFunc,
		// collections, time
		"matchkeys": matchkeysFunc, "timecmp": timecmpFunc,
		// sensitivity
		"sensitive": sensitiveFunc, "nonsensitive": nonsensitiveFunc, "issensitive": issensitiveFunc,
	}
	for k, v := range fileHashes(baseDir) {
		fs[k] = v
	}
	// templatefile and templatestring see every function but themselves: a template that calls
	// templatefile could recurse forever.
	inner := make(map[string]function.Function, len(fs))
	for k, v := range fs {
		inner[k] = v
	}
	fs["templatefile"] = templateFileFunc(baseDir, inner)
	fs["templatestring"] = templateStringFunc(inner)
	return fs
}

// resolvePath makes p relative to baseDir, after ~ expansion.
func resolvePath(baseDir, p string) string {
	p = sshconfig.ExpandHome(p)
	if filepath.IsAbs(p) || baseDir == "" {
		return p
	}
	return filepath.Join(baseDir, p)
}

func stringFunc(fn func(string) (string, error)) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			s, err := fn(args[0].AsString())
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			return cty.StringVal(s), nil
		},
	})
}

func base64Decode(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("the string is not valid base64: %w", err)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("the decoded bytes are not valid UTF-8 text")
	}
	return string(b), nil
}

func stringPredicate(second string, fn func(s, x string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: second, Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(fn(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

// replaceFunc is Terraform's replace: a substring wrapped in slashes is a
// regular expression.
var replaceFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "substr", Type: cty.String}, {Name: "replace", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		sub := args[1].AsString()
		if len(sub) > 1 && strings.HasPrefix(sub, "/") && strings.HasSuffix(sub, "/") {
			return stdlib.RegexReplace(args[0], cty.StringVal(sub[1:len(sub)-1]), args[2])
		}
		return stdlib.Replace(args[0], args[1], args[2])
	},
})

// lengthFunc counts characters of a string or elements of a collection.
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true, AllowUnknown: true}},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		if ty == cty.String || ty == cty.DynamicPseudoType || ty.IsCollectionType() || ty.IsTupleType() || ty.IsObjectType() {
			return cty.Number, nil
		}
		return cty.NilType, function.NewArgErrorf(0, "length takes a string, list, set, map, tuple or object, not %s", ty.FriendlyName())
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		v := args[0]
		ty := v.Type()
		switch {
		case ty == cty.String:
			if !v.IsKnown() {
				return cty.UnknownVal(cty.Number), nil
			}
			return stdlib.Strlen(v)
		case ty.IsObjectType():
			return cty.NumberIntVal(int64(len(ty.AttributeTypes()))), nil
		case ty == cty.DynamicPseudoType || !v.IsKnown():
			return cty.UnknownVal(cty.Number), nil
		case v.IsNull():
			return cty.NilVal, function.NewArgErrorf(0, "cannot take the length of null")
		}
		return v.Length(), nil
	},
})

// indexFunc finds the first element of a list equal to value.
var indexFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}, {Name: "value", Type: cty.DynamicPseudoType}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		l := args[0]
		if !(l.Type().IsListType() || l.Type().IsTupleType()) {
			return cty.NilVal, function.NewArgErrorf(0, "index takes a list or tuple, not %s", l.Type().FriendlyName())
		}
		if !l.IsWhollyKnown() || !args[1].IsWhollyKnown() {
			return cty.UnknownVal(cty.Number), nil
		}
		for it := l.ElementIterator(); it.Next(); {
			i, v := it.Element()
			if eq := v.Equals(args[1]); eq.IsKnown() && eq.True() {
				return i, nil
			}
		}
		return cty.NilVal, fmt.Errorf("the value is not in the list")
	},
})

// numbers converts a list, set or tuple argument to a slice of numbers.
func elements(v cty.Value) ([]cty.Value, error) {
	ty := v.Type()
	if !(ty.IsListType() || ty.IsSetType() || ty.IsTupleType()) {
		return nil, function.NewArgErrorf(0, "expected a list, set or tuple, not %s", ty.FriendlyName())
	}
	var out []cty.Value
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e)
	}
	return out, nil
}

var sumFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		es, err := elements(args[0])
		if err != nil {
			return cty.NilVal, err
		}
		if len(es) == 0 {
			return cty.NilVal, function.NewArgErrorf(0, "cannot sum an empty list")
		}
		total := cty.Zero
		for _, e := range es {
			n, err := convert.Convert(e, cty.Number)
			if err != nil || n.IsNull() {
				return cty.NilVal, function.NewArgErrorf(0, "every element must be a number")
			}
			if !n.IsKnown() {
				return cty.UnknownVal(cty.Number), nil
			}
			total = total.Add(n)
		}
		return total, nil
	},
})

// boolFold is alltrue (all=true) or anytrue (all=false).
func boolFold(all bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			unknown := false
			for it := args[0].ElementIterator(); it.Next(); {
				_, e := it.Element()
				switch {
				case !e.IsKnown():
					unknown = true
				case e.IsNull():
					if all {
						return cty.False, nil
					}
				case e.True() != all:
					return cty.BoolVal(!all), nil
				}
			}
			if unknown {
				return cty.UnknownVal(cty.Bool), nil
			}
			return cty.BoolVal(all), nil
		},
	})
}

var oneFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
	Type: func(args []cty.Value) (cty.Type, error) {
		ty := args[0].Type()
		switch {
		case ty.IsListType() || ty.IsSetType():
			return ty.ElementType(), nil
		case ty.IsTupleType():
			ets := ty.TupleElementTypes()
			switch len(ets) {
			case 0:
				return cty.DynamicPseudoType, nil
			case 1:
				return ets[0], nil
			}
			return cty.NilType, function.NewArgErrorf(0, "must have zero or one elements, not %d", len(ets))
		}
		return cty.NilType, function.NewArgErrorf(0, "one takes a list, set or tuple, not %s", ty.FriendlyName())
	},
	Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
		es, err := elements(args[0])
		if err != nil {
			return cty.NilVal, err
		}
		switch len(es) {
		case 0:
			return cty.NullVal(ret), nil
		case 1:
			return es[0], nil
		}
		return cty.NilVal, function.NewArgErrorf(0, "must have zero or one elements, not %d", len(es))
	},
})

var transposeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "values", Type: cty.Map(cty.List(cty.String))}},
	Type:   function.StaticReturnType(cty.Map(cty.List(cty.String))),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		out := map[string][]cty.Value{}
		for it := args[0].ElementIterator(); it.Next(); {
			k, l := it.Element()
			if l.IsNull() {
				return cty.NilVal, function.NewArgErrorf(0, "cannot use null list for [%q]", k.AsString())
			}
			for lit := l.ElementIterator(); lit.Next(); {
				_, e := lit.Element()
				if e.IsNull() {
					return cty.NilVal, function.NewArgErrorf(0, "cannot use null string in the list for [%q]", k.AsString())
				}
				out[e.AsString()] = append(out[e.AsString()], k)
			}
		}
		m := make(map[string]cty.Value, len(out))
		for k, vs := range out {
			m[k] = cty.ListVal(vs)
		}
		if len(m) == 0 {
			return cty.MapValEmpty(cty.List(cty.String)), nil
		}
		return cty.MapVal(m), nil
	},
})

// toFunc converts its argument to want, as Terraform's tolist & co.
func toFunc(name string, want cty.Type) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true}},
		Type: func(args []cty.Value) (cty.Type, error) {
			got := args[0].Type()
			if got.Equals(want) {
				return want, nil
			}
			if convert.GetConversionUnsafe(got, want) == nil {
				return cty.NilType, function.NewArgErrorf(0, "%s cannot convert %s to %s", name, got.FriendlyName(), want.FriendlyNameForConstraint())
			}
			return want, nil
		},
		Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
			v, err := convert.Convert(args[0], ret)
			if err != nil {
				return cty.NilVal, function.NewArgErrorf(0, "%s: %s", name, convErr(err))
			}
			return v, nil
		},
	})
}

func fileFunc(baseDir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			s, err := readTextFile(baseDir, args[0].AsString())
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(s), nil
		},
	})
}

func readTextFile(baseDir, p string) (string, error) {
	b, err := os.ReadFile(resolvePath(baseDir, p))
	if err != nil {
		if os.IsNotExist(err) {
			return "", fmt.Errorf("no file exists at %s (relative paths start at the configuration directory; use path.module to be explicit)", p)
		}
		return "", err
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("the contents of %s are not valid UTF-8 text", p)
	}
	return string(b), nil
}

func fileExistsFunc(baseDir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			fi, err := os.Stat(resolvePath(baseDir, args[0].AsString()))
			if err != nil {
				if os.IsNotExist(err) {
					return cty.False, nil
				}
				return cty.NilVal, err
			}
			if !fi.Mode().IsRegular() {
				return cty.NilVal, fmt.Errorf("%s is not a regular file", args[0].AsString())
			}
			return cty.True, nil
		},
	})
}

func templateFileFunc(baseDir string, funcs map[string]function.Function) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}, {Name: "vars", Type: cty.DynamicPseudoType}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			src, err := readTextFile(baseDir, p)
			if err != nil {
				return cty.NilVal, err
			}
			return renderTemplate(src, p, args[1], funcs)
		},
	})
}

// coalesceFunc is Terraform's coalesce: the first argument that is neither
// null nor an empty string.
var coalesceFunc = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "vals", Type: cty.DynamicPseudoType, AllowNull: true, AllowUnknown: true, AllowDynamicType: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		return stdlib.CoalesceFunc.ReturnTypeForValues(args)
	},
	Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
		for _, a := range args {
			if !a.IsKnown() {
				return cty.UnknownVal(ret), nil
			}
			if a.IsNull() {
				continue
			}
			v, err := convert.Convert(a, ret)
			if err != nil {
				return cty.NilVal, err
			}
			if ret == cty.String && v.AsString() == "" {
				continue
			}
			return v, nil
		}
		return cty.NilVal, fmt.Errorf("no non-null, non-empty argument")
	},
})
