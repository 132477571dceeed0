package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// tofuCase is one expression and what OpenTofu v1.12.6's console gave for
// jsonencode(expr): JSON text, an error, or a raw console rendering such
// as "(sensitive value)".
type tofuCase struct {
	Expr  string `json:"expr"`
	JSON  string `json:"json"`
	Raw   string `json:"raw"`
	Error string `json:"error"`
}

// TestFunctionsMatchOpenTofu evaluates every expression of
// testdata/opentofu/opentofu.json (recorded with `tofu console` in that
// folder, with its locals.tf) and compares with OpenTofu's answer.
func TestFunctionsMatchOpenTofu(t *testing.T) {
	dir, err := filepath.Abs("testdata/opentofu")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "opentofu.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Cases []tofuCase }
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < 100 {
		t.Fatalf("only %d cases recorded", len(doc.Cases))
	}
	ctx := &hcl.EvalContext{
		Functions: Functions(dir),
		Variables: map[string]cty.Value{"local": tofuLocals(t, filepath.Join(dir, "locals.tf"))},
	}
	for _, c := range doc.Cases {
		t.Run(c.Expr, func(t *testing.T) {
			expr, diags := hclsyntax.ParseExpression([]byte("jsonencode("+c.Expr+")"), "case.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatalf("parse: %s", diags.Error())
			}
			v, diags := expr.Value(ctx)
			switch {
			case c.Error != "":
				if !diags.HasErrors() {
					t.Fatalf("got %#v, want an error like OpenTofu's: %s", v, c.Error)
				}
			case diags.HasErrors():
				t.Fatalf("error %s; OpenTofu gives %s%s", diags.Error(), c.JSON, c.Raw)
			case c.Raw == "(sensitive value)":
				if !v.HasMark(SensitiveMark) {
					t.Fatalf("got %#v, want a sensitive value", v)
				}
			case c.Raw != "":
				t.Fatalf("unhandled raw expectation %q", c.Raw)
			default:
				if v.IsMarked() {
					t.Fatalf("got marked %#v, want plain %s", v, c.JSON)
				}
				want := strings.ReplaceAll(c.JSON, "$DIR", dir)
				if got := v.AsString(); got != want {
					t.Fatalf("got  %s\nwant %s", got, want)
				}
			}
		})
	}
}

// tofuLocals reads the locals block of locals.tf into an object.
func tofuLocals(t *testing.T, path string) cty.Value {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	vals := map[string]cty.Value{}
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		for name, a := range b.Body.Attributes {
			v, d := a.Expr.Value(nil)
			if d.HasErrors() {
				t.Fatal(d.Error())
			}
			vals[name] = v
		}
	}
	return cty.ObjectVal(vals)
}
