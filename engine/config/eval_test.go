package config

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
)

func expr(t *testing.T, src string) hcl.Expression {
	t.Helper()
	e, diags := hclsyntax.ParseExpression([]byte(src), "expr.sf.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", src, diags.Error())
	}
	return e
}

func TestExpand(t *testing.T) {
	ctx := (&Scope{Variables: map[string]cty.Value{
		"nodes": cty.ObjectVal(map[string]cty.Value{
			"spark-02": cty.ObjectVal(map[string]cty.Value{"rank": cty.NumberIntVal(1)}),
			"spark-01": cty.ObjectVal(map[string]cty.Value{"rank": cty.NumberIntVal(0)}),
		}),
		"later": cty.UnknownVal(cty.Map(cty.String)),
	}}).EvalContext()
	tests := []struct {
		name           string
		forEach, count string
		keys           []addrs.InstanceKey
		each           map[addrs.InstanceKey][2]cty.Value
	}{
		{"neither", "", "", []addrs.InstanceKey{addrs.NoKey}, nil},
		{"object", "var.nodes", "", []addrs.InstanceKey{addrs.StringKey("spark-01"), addrs.StringKey("spark-02")},
			map[addrs.InstanceKey][2]cty.Value{addrs.StringKey("spark-01"): {cty.StringVal("spark-01"), cty.ObjectVal(map[string]cty.Value{"rank": cty.NumberIntVal(0)})}}},
		{"map", `tomap({b = "2", a = "1"})`, "", []addrs.InstanceKey{addrs.StringKey("a"), addrs.StringKey("b")},
			map[addrs.InstanceKey][2]cty.Value{addrs.StringKey("b"): {cty.StringVal("b"), cty.StringVal("2")}}},
		{"set of strings", `toset(["y", "x", "y"])`, "", []addrs.InstanceKey{addrs.StringKey("x"), addrs.StringKey("y")},
			map[addrs.InstanceKey][2]cty.Value{addrs.StringKey("x"): {cty.StringVal("x"), cty.StringVal("x")}}},
		{"empty map", `{}`, "", nil, nil},
		{"empty set", `toset([])`, "", nil, nil},
		{"count", "", "3", []addrs.InstanceKey{addrs.IntKey(0), addrs.IntKey(1), addrs.IntKey(2)}, nil},
		{"count from string", "", `"2"`, []addrs.InstanceKey{addrs.IntKey(0), addrs.IntKey(1)}, nil},
		{"count zero", "", "0", nil, nil},
		{"count from length", "", "length(var.nodes)", []addrs.InstanceKey{addrs.IntKey(0), addrs.IntKey(1)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fe, c hcl.Expression
			if tt.forEach != "" {
				fe = expr(t, tt.forEach)
			}
			if tt.count != "" {
				c = expr(t, tt.count)
			}
			exp, diags := Expand(fe, c, ctx)
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			if len(exp.Keys) != len(tt.keys) {
				t.Fatalf("keys = %v, want %v", exp.Keys, tt.keys)
			}
			for i := range tt.keys {
				if exp.Keys[i] != tt.keys[i] {
					t.Errorf("key %d = %#v, want %#v", i, exp.Keys[i], tt.keys[i])
				}
			}
			for k, want := range tt.each {
				got, ok := exp.Each[k]
				if !ok || !got.Key.RawEquals(want[0]) || !got.Value.RawEquals(want[1]) {
					t.Errorf("each[%s] = %#v, want %#v", k, got, want)
				}
			}
			if fe == nil && exp.Each != nil {
				t.Error("Each set without for_each")
			}
		})
	}
}

func TestExpandErrors(t *testing.T) {
	ctx := (&Scope{Variables: map[string]cty.Value{"later": cty.UnknownVal(cty.Map(cty.String))}}).EvalContext()
	tests := []struct {
		forEach, count, want string
	}{
		{`["a", "b"]`, "", "not a tuple: a list has no stable keys. Convert it with toset(...)"},
		{`tolist(["a"])`, "", "not a list of string"},
		{`null`, "", "for_each is null"},
		{`var.later`, "", "only known after apply"},
		{`toset([1, 2])`, "", "set of strings, not a set of number"},
		{`"abc"`, "", "not string"},
		{`toset(["a", null])`, "", "must not contain null"},
		{"", "-1", "whole number from 0"},
		{"", "1.5", "whole number from 0"},
		{"", `"x"`, "must be a whole number, not string"},
		{"", "null", "count is null"},
		{"", "length(var.later)", "only known after apply"},
		{"", "var.nope", "Unsupported attribute"},
	}
	for _, tt := range tests {
		var fe, c hcl.Expression
		if tt.forEach != "" {
			fe = expr(t, tt.forEach)
		}
		if tt.count != "" {
			c = expr(t, tt.count)
		}
		_, diags := Expand(fe, c, ctx)
		if !diags.HasErrors() {
			t.Errorf("%q/%q: no error", tt.forEach, tt.count)
			continue
		}
		d := diags[0]
		if !strings.Contains(d.Summary+": "+d.Detail, tt.want) {
			t.Errorf("%q/%q: %s: %s; want %q", tt.forEach, tt.count, d.Summary, d.Detail, tt.want)
		}
		if d.Subject == nil || d.Subject.Filename != "expr.sf.hcl" {
			t.Errorf("%q/%q: diagnostic does not point at the expression", tt.forEach, tt.count)
		}
	}
}

func TestScopeEvalContext(t *testing.T) {
	kit := cty.ObjectVal(map[string]cty.Value{
		"a": cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/opt/kit-a")}),
	})
	s := &Scope{
		BaseDir:    "testdata/files",
		Variables:  map[string]cty.Value{"image": cty.StringVal("busybox")},
		Locals:     map[string]cty.Value{"tag": cty.StringVal("1.36")},
		Nodes:      map[string]cty.Value{"spark": cty.ObjectVal(map[string]cty.Value{"a": NodeValue(`node.spark["a"]`, NodeConfig{Transport: "ssh", Host: "10.0.0.1", Port: 22})})},
		Resources:  map[string]map[string]cty.Value{"gitkit_checkout": {"kit": kit}},
		Each:       &EachValues{Key: cty.StringVal("a"), Value: cty.NumberIntVal(7)},
		CountIndex: cty.NumberIntVal(3),
	}
	ctx := s.EvalContext()
	tests := []struct{ src, want string }{
		{`"${var.image}:${local.tag}"`, "busybox:1.36"},
		{`node.spark[each.key].host`, "10.0.0.1"},
		{`node.spark["a"].name`, `node.spark["a"]`},
		{`"${gitkit_checkout.kit[each.key].path}/serving"`, "/opt/kit-a/serving"},
		{`"${each.key}-${each.value}-${count.index}"`, "a-7-3"},
		{`path.module`, mustAbs("testdata/files")},
		{`file("${path.module}/hello.txt")`, "hello\n"},
		{`trimspace(file("hello.txt"))`, "hello"},
	}
	for _, tt := range tests {
		v, diags := expr(t, tt.src).Value(ctx)
		if diags.HasErrors() {
			t.Errorf("%s: %s", tt.src, diags.Error())
			continue
		}
		if v.Type() != cty.String || v.AsString() != tt.want {
			t.Errorf("%s = %#v, want %q", tt.src, v, tt.want)
		}
	}
	// Outside for_each/count there is no each or count.
	ctx = (&Scope{}).EvalContext()
	for _, name := range []string{"each", "count"} {
		if _, ok := ctx.Variables[name]; ok {
			t.Errorf("%s defined outside an expanded block", name)
		}
	}
	if _, diags := expr(t, `var.x`).Value(ctx); !diags.HasErrors() {
		t.Error("var.x on empty scope should fail")
	}
	if cwd, _ := os.Getwd(); ctx.Variables["path"].GetAttr("cwd").AsString() != cwd {
		t.Error("path.cwd is not the working directory")
	}
}

// functionNames are the functions the issue promises.
var functionNames = strings.Fields(`abs ceil floor max min parseint pow signum chomp format formatlist
indent join lower upper replace split strrev substr title trimspace trim trimprefix trimsuffix
regex regexall alltrue anytrue chunklist coalesce coalescelist compact concat contains distinct
element flatten index keys length lookup merge one range reverse setintersection setproduct
setunion slice sort sum transpose values zipmap tobool tolist tomap tonumber toset tostring try
can jsonencode jsondecode csvdecode base64encode base64decode sha256 sha1 md5 file fileexists
templatefile basename dirname pathexpand abspath startswith endswith strcontains`)

func TestFunctionNames(t *testing.T) {
	fs := Functions(".")
	for _, n := range functionNames {
		if _, ok := fs[n]; !ok {
			t.Errorf("function %s missing", n)
		}
	}
	for _, n := range []string{"uuid", "timestamp", "bcrypt"} {
		if _, ok := fs[n]; ok {
			t.Errorf("non-deterministic function %s must not be offered", n)
		}
	}
	var names []string
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d functions: %s", len(names), strings.Join(names, " "))
}

func TestFunctions(t *testing.T) {
	abs, _ := filepath.Abs("testdata/files")
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"local": cty.EmptyObjectVal},
		Functions: Functions("testdata/files"),
	}
	home, _ := os.UserHomeDir()
	tests := []struct{ src, want string }{ // want: jsonencode of the result
		{`abs(-3)`, `3`},
		{`ceil(1.2) + floor(1.8) + signum(-4)`, `2`},
		{`max(1, 5, 3) + min(4, 2)`, `7`},
		{`parseint("ff", 16) + pow(2, 3)`, `263`},
		{`sum([1, 2, 3.5])`, `6.5`},
		{`chomp("x\n")`, `"x"`},
		{`format("%s-%03d", "a", 7)`, `"a-007"`},
		{`formatlist("%s=%s", ["a", "b"], ["1", "2"])`, `["a=1","b=2"]`},
		{`indent(2, "a\nb")`, `"a\n  b"`},
		{`join(",", ["a", "b"])`, `"a,b"`},
		{`"${lower("AB")}${upper("cd")}${title("ef")}"`, `"abCDEf"`},
		{`replace("a-b-c", "-", "+")`, `"a+b+c"`},
		{`replace("a1b22c", "/[0-9]+/", "#")`, `"a#b#c"`},
		{`split(",", "a,b")`, `["a","b"]`},
		{`strrev("abc")`, `"cba"`},
		{`substr("hello", 1, 3)`, `"ell"`},
		{`"${trimspace(" a ")}${trim("xxbxx", "x")}${trimprefix("ab", "a")}${trimsuffix("ab", "b")}"`, `"abba"`},
		{`regex("([0-9]+)g", "9g")`, `["9"]`},
		{`regexall("[a-z]", "a1b")`, `["a","b"]`},
		{`alltrue([true, true])`, `true`},
		{`alltrue([])`, `true`},
		{`anytrue([false, true])`, `true`},
		{`anytrue([])`, `false`},
		{`chunklist(["a", "b", "c"], 2)`, `[["a","b"],["c"]]`},
		{`coalesce("", "b")`, `"b"`},
		{`coalesce(null, 2)`, `2`},
		{`coalescelist([], ["x"])`, `["x"]`},
		{`compact(["a", "", "b"])`, `["a","b"]`},
		{`concat(["a"], ["b"])`, `["a","b"]`},
		{`contains(["a", "b"], "b")`, `true`},
		{`distinct(["a", "a", "b"])`, `["a","b"]`},
		{`element(["a", "b"], 3)`, `"b"`},
		{`flatten([["a"], ["b", ["c"]]])`, `["a","b","c"]`},
		{`index(["a", "b"], "b")`, `1`},
		{`keys({b = 1, a = 2})`, `["a","b"]`},
		{`length("héllo") + length(["a"]) + length({a = 1})`, `7`},
		{`lookup({a = "x"}, "b", "dflt")`, `"dflt"`},
		{`merge({a = 1}, {b = 2})`, `{"a":1,"b":2}`},
		{`one(["x"])`, `"x"`},
		{`one([])`, `null`},
		{`range(3)`, `[0,1,2]`},
		{`reverse(["a", "b"])`, `["b","a"]`},
		{`setintersection(["a", "b"], ["b"])`, `["b"]`},
		{`length(setproduct(["a", "b"], ["1", "2"]))`, `4`},
		{`setunion(["a"], ["b"])`, `["a","b"]`},
		{`slice(["a", "b", "c"], 1, 3)`, `["b","c"]`},
		{`sort(["b", "a"])`, `["a","b"]`},
		{`transpose({a = ["1", "2"], b = ["2"]})`, `{"1":["a"],"2":["a","b"]}`},
		{`values({a = 1, b = 2})`, `[1,2]`},
		{`zipmap(["a", "b"], [1, 2])`, `{"a":1,"b":2}`},
		{`tobool("true")`, `true`},
		{`tolist(["a", "b"])`, `["a","b"]`},
		{`tomap({a = "1", b = 2})`, `{"a":"1","b":"2"}`},
		{`tonumber("42")`, `42`},
		{`toset(["b", "a", "b"])`, `["a","b"]`},
		{`tostring(5)`, `"5"`},
		{`try(local.nope, "fallback")`, `"fallback"`},
		{`can(local.nope)`, `false`},
		{`jsonencode({a = [1]})`, `"{\"a\":[1]}"`},
		{`jsondecode("{\"a\": true}")`, `{"a":true}`},
		{`csvdecode("a,b\n1,2\n")`, `[{"a":"1","b":"2"}]`},
		{`base64decode(base64encode("héllo"))`, `"héllo"`},
		{`sha256("")`, `"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"`},
		{`sha1("abc")`, `"a9993e364706816aba3e25717850c26c9cd0d89d"`},
		{`md5("abc")`, `"900150983cd24fb0d6963f7d28e17f72"`},
		{`file("hello.txt")`, `"hello\n"`},
		{`fileexists("hello.txt")`, `true`},
		{`fileexists("nope.txt")`, `false`},
		{`templatefile("unit.tmpl", { image = "busybox", devices = ["a", "b"] })`, `"image=busybox\ndevice=A\ndevice=B\n"`},
		{`basename("/a/b.txt")`, `"b.txt"`},
		{`dirname("/a/b.txt")`, `"/a"`},
		{`pathexpand("~/x")`, `"` + home + `/x"`},
		{`abspath("hello.txt")`, `"` + abs + `/hello.txt"`},
		{`startswith("abc", "ab")`, `true`},
		{`endswith("abc", "bc")`, `true`},
		{`strcontains("abc", "d")`, `false`},
	}
	for _, tt := range tests {
		v, diags := expr(t, tt.src).Value(ctx)
		if diags.HasErrors() {
			t.Errorf("%s: %s", tt.src, diags.Error())
			continue
		}
		var got string
		if v.IsNull() {
			got = "null"
		} else {
			j, err := ctyJSON(v)
			if err != nil {
				t.Errorf("%s: %v", tt.src, err)
				continue
			}
			got = j
		}
		if got != tt.want {
			t.Errorf("%s = %s, want %s", tt.src, got, tt.want)
		}
	}
}

func TestFunctionErrors(t *testing.T) {
	ctx := &hcl.EvalContext{Functions: Functions("testdata/files")}
	tests := []struct{ src, want string }{
		{`file("nope.txt")`, "no file exists at nope.txt"},
		{`templatefile("unit.tmpl", { image = "x" })`, `the vars have no "devices"`},
		{`templatefile("recurse.tmpl", {})`, `There is no function named "templatefile"`},
		{`templatefile("unit.tmpl", "x")`, "must be a map or object"},
		{`one(["a", "b"])`, "zero or one elements"},
		{`index(["a"], "z")`, "not in the list"},
		{`sum([])`, "empty list"},
		{`coalesce("", null)`, "no non-null, non-empty argument"},
		{`tonumber("x")`, "a number is required"},
		{`base64decode("!!")`, "not valid base64"},
		{`length(true)`, "length takes a string"},
		{`uuid()`, `There is no function named "uuid"`},
	}
	for _, tt := range tests {
		_, diags := expr(t, tt.src).Value(ctx)
		if !diags.HasErrors() {
			t.Errorf("%s: no error", tt.src)
			continue
		}
		if !strings.Contains(diags.Error(), tt.want) {
			t.Errorf("%s: %s; want %q", tt.src, diags.Error(), tt.want)
		}
	}
}

func TestFunctionsUnknown(t *testing.T) {
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"u": cty.UnknownVal(cty.String), "l": cty.UnknownVal(cty.List(cty.String))},
		Functions: Functions("."),
	}
	for _, src := range []string{`length(u)`, `file(u)`, `sha256(u)`, `upper(u)`, `startswith(u, "a")`, `tolist(l)`, `one(l)`} {
		v, diags := expr(t, src).Value(ctx)
		if diags.HasErrors() {
			t.Errorf("%s: %s", src, diags.Error())
			continue
		}
		if v.IsKnown() {
			t.Errorf("%s = %#v, want unknown (known after apply)", src, v)
		}
	}
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}
