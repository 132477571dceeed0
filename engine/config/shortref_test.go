package config

import (
	"reflect"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestShortRefRebuildsTheSyntax: a reference kept short rebuilds exactly
// the expression hclsyntax parsed (traversal, every step's range, the
// expression's), and answers Range, StartRange, Variables, AsTraversal
// and RefNode as that expression does. What it cannot rebuild exactly is
// not kept short.
func TestShortRefRebuildsTheSyntax(t *testing.T) {
	tests := []struct {
		src   string
		short bool
	}{
		{"a", true},
		{"node.local", true},
		{"sparkform_data.c1_2.id", true},
		{"module_x.a-b.c_d.e.f.g", true},
		{"var.x", true},
		{"a.b[0]", false},
		{"a[\"k\"].id", false},
		{"a.0", false},             // a legacy index step
		{"a.*.b", false},           // a splat
		{"n\u00e9ud.local", false}, // columns count characters, not bytes
		{"node.l\u00f6cal", false},
		{"a .b", false}, // a space, if hcl takes it: not where the names say
		{"a. b", false},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			// Not at the start of the file, as in a block.
			src := "x = 1\n  attr = " + tt.src + "\n"
			f, diags := hclsyntax.ParseConfig([]byte(src), "m.sf.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				if tt.short {
					t.Fatal(diags)
				}
				return // hcl refuses it: nothing to keep
			}
			attr := f.Body.(*hclsyntax.Body).Attributes["attr"]
			st, ok := attr.Expr.(*hclsyntax.ScopeTraversalExpr)
			if !ok {
				if tt.short {
					t.Fatalf("parsed as %T", attr.Expr)
				}
				return
			}
			s := shortOf(st)
			if (s != nil) != tt.short {
				t.Fatalf("kept short: %v, want %v", s != nil, tt.short)
			}
			if s == nil {
				if shorten(st) != hcl.Expression(st) {
					t.Error("shorten changed what it could not keep short")
				}
				return
			}
			if got := s.syntax(); !reflect.DeepEqual(got, st) {
				t.Errorf("rebuilt\n%#v\nwant\n%#v", got, st)
			}
			if s.Range() != st.Range() || s.StartRange() != st.StartRange() {
				t.Errorf("ranges %v %v, want %v %v", s.Range(), s.StartRange(), st.Range(), st.StartRange())
			}
			if !reflect.DeepEqual(s.Variables(), st.Variables()) {
				t.Errorf("variables %#v, want %#v", s.Variables(), st.Variables())
			}
			got, d1 := hcl.AbsTraversalForExpr(s)
			want, d2 := hcl.AbsTraversalForExpr(st)
			if !reflect.DeepEqual(got, want) || d1.HasErrors() || d2.HasErrors() {
				t.Errorf("AbsTraversalForExpr %#v, want %#v", got, want)
			}
			n1, ok1 := RefNode(s)
			n2, ok2 := RefNode(st)
			if n1 != n2 || ok1 != ok2 {
				t.Errorf("RefNode %q %v, want %q %v", n1, ok1, n2, ok2)
			}
		})
	}
}

// FuzzShortRef: whatever hcl parses as a scope traversal is either not
// kept short or rebuilt exactly.
func FuzzShortRef(f *testing.F) {
	for _, s := range []string{"a.b", "node.local", "sparkform_data.c1_2.id", "a .b", "a.b[0].c", "\u00e9.x", "a.b # c", "a\t.b", "a./*c*/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		src := "x = 1\n  attr = " + expr + "\n"
		file, diags := hclsyntax.ParseConfig([]byte(src), "f.sf.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			return
		}
		attr := file.Body.(*hclsyntax.Body).Attributes["attr"]
		if attr == nil {
			return
		}
		st, ok := attr.Expr.(*hclsyntax.ScopeTraversalExpr)
		if !ok {
			return
		}
		if s := shortOf(st); s != nil && !reflect.DeepEqual(s.syntax(), st) {
			t.Fatalf("%q rebuilt\n%#v\nwant\n%#v", expr, s.syntax(), st)
		}
	})
}
