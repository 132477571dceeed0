package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// shortRef is a plain reference (a root name and attribute steps on one
// line: sparkform_data.c1_2.id, node.local) kept as its names and where it
// starts. hclsyntax keeps such an expression as a tree of ~290 B (two
// steps) to ~380 B (three): the expression, the traversal and a boxed step
// with its range each. This is ~100 B, and rebuilds exactly that tree
// whenever it is evaluated (TestShortRefRebuildsTheSyntax).
//
// It is an hcl.Expression, and a traversal as hcl.AbsTraversalForExpr
// reads it. Code that looks for *hclsyntax.ScopeTraversalExpr asks
// RefNode or shortRef.syntax for it.
type shortRef struct {
	names []string // the root's name first; shared with the parsed syntax
	start hcl.Pos
	file  string
}

var _ hcl.Expression = (*shortRef)(nil)

// shorten is e as a shortRef when e is a plain reference whose ranges
// follow from its names (ASCII names, no spaces, one line), and e itself
// otherwise.
func shorten(e hcl.Expression) hcl.Expression {
	st, ok := e.(*hclsyntax.ScopeTraversalExpr)
	if !ok {
		return e
	}
	if s := shortOf(st); s != nil {
		return s
	}
	return e
}

// shortOf is st as a shortRef, nil when st is not plain or its ranges are
// not those rebuilding it would give.
func shortOf(st *hclsyntax.ScopeTraversalExpr) *shortRef {
	rng := st.SrcRange
	if len(st.Traversal) == 0 || rng.Start.Line != rng.End.Line {
		return nil
	}
	s := &shortRef{names: make([]string, len(st.Traversal)), start: rng.Start, file: rng.Filename}
	end := rng.Start
	for i, step := range st.Traversal {
		var name string
		var got hcl.Range
		switch step := step.(type) {
		case hcl.TraverseRoot:
			name, got = step.Name, step.SrcRange
		case hcl.TraverseAttr:
			name, got = step.Name, step.SrcRange
		default:
			return nil
		}
		if _, root := step.(hcl.TraverseRoot); root != (i == 0) || !isASCII(name) {
			return nil
		}
		var want hcl.Range
		if want, end = s.stepRange(i, name, end); got != want {
			return nil
		}
		s.names[i] = name
	}
	if end != rng.End {
		return nil
	}
	return s
}

// stepRange is the range of step i (name) starting at from, and where it
// ends: an attribute step's range takes its dot.
func (s *shortRef) stepRange(i int, name string, from hcl.Pos) (hcl.Range, hcl.Pos) {
	w := len(name)
	if i > 0 {
		w++
	}
	end := hcl.Pos{Line: from.Line, Column: from.Column + w, Byte: from.Byte + w}
	return hcl.Range{Filename: s.file, Start: from, End: end}, end
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// traversal rebuilds the reference's traversal, ranges included.
func (s *shortRef) traversal() (hcl.Traversal, hcl.Pos) {
	tr := make(hcl.Traversal, len(s.names))
	pos := s.start
	for i, name := range s.names {
		var rng hcl.Range
		rng, pos = s.stepRange(i, name, pos)
		if i == 0 {
			tr[i] = hcl.TraverseRoot{Name: name, SrcRange: rng}
		} else {
			tr[i] = hcl.TraverseAttr{Name: name, SrcRange: rng}
		}
	}
	return tr, pos
}

// syntax rebuilds the expression hclsyntax parsed.
func (s *shortRef) syntax() *hclsyntax.ScopeTraversalExpr {
	tr, end := s.traversal()
	return &hclsyntax.ScopeTraversalExpr{Traversal: tr, SrcRange: hcl.Range{Filename: s.file, Start: s.start, End: end}}
}

func (s *shortRef) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	return s.syntax().Value(ctx)
}

func (s *shortRef) Variables() []hcl.Traversal {
	tr, _ := s.traversal()
	return []hcl.Traversal{tr}
}

func (s *shortRef) Range() hcl.Range {
	end := s.start
	for i, name := range s.names {
		_, end = s.stepRange(i, name, end)
	}
	return hcl.Range{Filename: s.file, Start: s.start, End: end}
}

func (s *shortRef) StartRange() hcl.Range { return s.Range() }

// AsTraversal is what hcl.AbsTraversalForExpr and hcl.ExprAsKeyword read.
func (s *shortRef) AsTraversal() hcl.Traversal {
	tr, _ := s.traversal()
	return tr
}

// RefNode is NAME when e is exactly node.NAME, whether parsed or kept
// short.
func RefNode(e hcl.Expression) (string, bool) {
	switch e := e.(type) {
	case *shortRef:
		if len(e.names) == 2 && e.names[0] == "node" {
			return e.names[1], true
		}
	case *hclsyntax.ScopeTraversalExpr:
		if len(e.Traversal) != 2 || e.Traversal.RootName() != "node" {
			return "", false
		}
		attr, ok := e.Traversal[1].(hcl.TraverseAttr)
		return attr.Name, ok
	}
	return "", false
}
