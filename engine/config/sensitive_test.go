package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

func sens(v cty.Value) cty.Value { return v.Mark(SensitiveMark) }

// TestSensitivePaths: where the marks are, written as sensitive paths.
func TestSensitivePaths(t *testing.T) {
	s := cty.StringVal
	for _, tc := range []struct {
		name string
		v    cty.Value
		want []string
	}{
		{"none", cty.ObjectVal(map[string]cty.Value{"a": s("x")}), nil},
		{"whole attribute", cty.ObjectVal(map[string]cty.Value{"a": sens(s("x")), "b": s("y")}), []string{"a"}},
		{"whole object", sens(cty.ObjectVal(map[string]cty.Value{"a": s("x"), "b": s("y")})), []string{"a", "b"}},
		{"map key", cty.ObjectVal(map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"TOKEN": sens(s("t")), "X": s("1")})}), []string{`env["TOKEN"]`}},
		{"object attribute", cty.ObjectVal(map[string]cty.Value{"in": cty.ObjectVal(map[string]cty.Value{"env": cty.ObjectVal(map[string]cty.Value{"TOKEN": sens(s("t")), "X": s("1")})})}), []string{"in.env.TOKEN"}},
		{"odd attribute name", cty.ObjectVal(map[string]cty.Value{"in": cty.ObjectVal(map[string]cty.Value{"a b": sens(s("t"))})}), []string{`in["a b"]`}},
		{"list element", cty.ObjectVal(map[string]cty.Value{"args": cty.ListVal([]cty.Value{s("--serve"), sens(s("t"))})}), []string{"args[1]"}},
		{"tuple element", cty.ObjectVal(map[string]cty.Value{"args": cty.TupleVal([]cty.Value{s("--serve"), sens(s("t"))})}), []string{"args[1]"}},
		{"set is whole", cty.ObjectVal(map[string]cty.Value{"tags": cty.SetVal([]cty.Value{s("a"), sens(s("t"))})}), []string{"tags"}},
		{"inner inside outer", cty.ObjectVal(map[string]cty.Value{"env": sens(cty.MapVal(map[string]cty.Value{"TOKEN": sens(s("t"))}))}), []string{"env"}},
		{"map key with quote", cty.ObjectVal(map[string]cty.Value{"m": cty.MapVal(map[string]cty.Value{`a"]b`: sens(s("t"))})}), []string{`m["a\"]b"]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SensitivePaths(tc.v)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("SensitivePaths = %q, want %q", got, tc.want)
			}
			// MarkPaths puts the marks back where they were.
			plain, _ := tc.v.UnmarkDeep()
			if again := SensitivePaths(MarkPaths(plain, got)); !slices.Equal(again, tc.want) {
				t.Errorf("SensitivePaths(MarkPaths(...)) = %q, want %q", again, tc.want)
			}
		})
	}
}

// TestMarkPathsShape: a path the value no longer follows hides the part
// where it stops, never nothing; a bad path hides its attribute.
func TestMarkPathsShape(t *testing.T) {
	s := cty.StringVal
	v := cty.ObjectVal(map[string]cty.Value{
		"env":  s("TOKEN=t"), // was a map when the path was written
		"args": cty.ListVal([]cty.Value{s("a")}),
		"n":    cty.NullVal(cty.Map(cty.String)),
		"u":    cty.UnknownVal(cty.Map(cty.String)),
		"ok":   s("shown"),
	})
	got := MarkPaths(v, []string{`env["TOKEN"]`, "args[5]", `n["x"]`, `u["x"]`, `ok[`})
	for name, want := range map[string]bool{"env": true, "args": false, "n": false, "u": true, "ok": true} {
		if h := got.GetAttr(name).HasMark(SensitiveMark); h != want {
			t.Errorf("%s marked = %v, want %v", name, h, want)
		}
	}
	if SplitRoot := SensitiveRoot(`input.env["TOKEN"]`); SplitRoot != "input" {
		t.Errorf("SensitiveRoot = %q", SplitRoot)
	}
	if p := RebaseSensitivePath(`input.env["TOKEN"]`, "output"); p != `output.env["TOKEN"]` {
		t.Errorf("RebaseSensitivePath = %q", p)
	}
	for _, bad := range []string{"", "[1]", "a[x]", `a["x`, "a..b", "a[-1]"} {
		if err := ParseSensitivePath(bad); err == nil {
			t.Errorf("ParseSensitivePath(%q) accepted", bad)
		}
	}
}

// TestSensitiveMarkPropagation: a sensitive variable's mark follows its
// value through expressions; nonsensitive() takes it off (and, as in
// OpenTofu, is no error on a value that is not sensitive).
func TestSensitiveMarkPropagation(t *testing.T) {
	m := &Module{Variables: map[string]*Variable{
		"tok":   {Name: "tok", Sensitive: true},
		"plain": {Name: "plain"},
	}}
	vars := MarkVariables(m, map[string]cty.Value{"tok": cty.StringVal("hunter2"), "plain": cty.StringVal("p")})
	ctx := RootContext(".", vars)
	for _, tc := range []struct {
		expr string
		want []string // SensitivePaths of {v = expr}
	}{
		{`var.tok`, []string{"v"}},
		{`var.plain`, nil},
		{`"Bearer ${var.tok}"`, []string{"v"}},
		{`{ TOKEN = var.tok, X = var.plain }`, []string{"v.TOKEN"}},
		{`[var.plain, var.tok]`, []string{"v[1]"}},
		{`{ for k in ["a"] : k => var.tok }`, []string{"v.a"}},
		{`length(var.tok)`, []string{"v"}},
		{`var.tok == "x" ? "a" : "b"`, []string{"v"}},
		{`nonsensitive(var.tok)`, nil},
		{`nonsensitive(var.plain)`, nil},
		{`sensitive(var.plain)`, []string{"v"}},
		{`issensitive(var.tok)`, nil},
	} {
		e, d := hclsyntax.ParseExpression([]byte(tc.expr), "t.hcl", hcl.InitialPos)
		if d.HasErrors() {
			t.Fatal(d)
		}
		v, d := e.Value(ctx)
		if d.HasErrors() {
			t.Errorf("%s: %s", tc.expr, d)
			continue
		}
		if got := AttrSensitivePaths("v", v); !slices.Equal(got, tc.want) {
			t.Errorf("%s: sensitive paths %q, want %q", tc.expr, got, tc.want)
		}
	}
	if vars["plain"].IsMarked() {
		t.Error("a variable not declared sensitive is marked")
	}
}

// TestSensitiveVariableValidationMessage: a failed validation whose
// error_message is made from a sensitive variable does not show it.
func TestSensitiveVariableValidationMessage(t *testing.T) {
	dir := t.TempDir()
	src := `variable "tok" {
  default   = "hunter2"
  sensitive = true
  validation {
    condition     = length(var.tok) > 10
    error_message = "The token ${var.tok} is too short."
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.sf.hcl"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	m, diags := LoadDir(dir)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, diags = ResolveVariables(m, nil, nil)
	if !diags.HasErrors() {
		t.Fatal("the validation passed")
	}
	for _, d := range diags {
		if strings.Contains(d.Summary+d.Detail, "hunter2") {
			t.Errorf("the error shows the value: %s: %s", d.Summary, d.Detail)
		}
	}
}
