package config

import (
	"math"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// shortRef is a plain reference (a root name and attribute steps on one
// line: sparkform_data.c1_2.id, node.local) kept as its names and where it
// starts. hclsyntax keeps such an expression as a tree of ~290 B (two
// steps) to ~380 B (three): the expression, the traversal and a boxed step
// with its range each, and a string per name. This is ~70 B, the source
// text and where it starts, and rebuilds exactly that tree whenever it is
// evaluated (TestShortRefRebuildsTheSyntax).
//
// It is an hcl.Expression, and a traversal as hcl.AbsTraversalForExpr
// reads it. Code that looks for *hclsyntax.ScopeTraversalExpr asks
// RefNode or shortRef.syntax for it.
type shortRef struct {
	src  string // the names joined by dots, as in the source
	file string
	// where src starts (hcl.Pos, in 12 bytes instead of 24)
	line, column, byte int32
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
	if len(st.Traversal) == 0 || rng.Start.Line != rng.End.Line || !fitsInt32(rng.End) {
		return nil
	}
	s := &shortRef{file: rng.Filename, line: int32(rng.Start.Line), column: int32(rng.Start.Column), byte: int32(rng.Start.Byte)}
	end := rng.Start
	names := make([]string, len(st.Traversal))
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
		if _, root := step.(hcl.TraverseRoot); root != (i == 0) || !isASCII(name) || strings.IndexByte(name, '.') >= 0 {
			return nil
		}
		var want hcl.Range
		if want, end = s.stepRange(i, name, end); got != want {
			return nil
		}
		names[i] = name
	}
	if end != rng.End {
		return nil
	}
	s.src = strings.Join(names, ".")
	return s
}

func fitsInt32(p hcl.Pos) bool {
	return p.Line <= math.MaxInt32 && p.Column <= math.MaxInt32 && p.Byte <= math.MaxInt32
}

func (s *shortRef) start() hcl.Pos {
	return hcl.Pos{Line: int(s.line), Column: int(s.column), Byte: int(s.byte)}
}

// names calls f with each name, the root's first.
func (s *shortRef) names(f func(i int, name string)) {
	rest := s.src
	for i := 0; ; i++ {
		dot := strings.IndexByte(rest, '.')
		if dot < 0 {
			f(i, rest)
			return
		}
		f(i, rest[:dot])
		rest = rest[dot+1:]
	}
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
	tr := make(hcl.Traversal, 0, strings.Count(s.src, ".")+1)
	pos := s.start()
	s.names(func(i int, name string) {
		var rng hcl.Range
		rng, pos = s.stepRange(i, name, pos)
		if i == 0 {
			tr = append(tr, hcl.TraverseRoot{Name: name, SrcRange: rng})
		} else {
			tr = append(tr, hcl.TraverseAttr{Name: name, SrcRange: rng})
		}
	})
	return tr, pos
}

// syntax rebuilds the expression hclsyntax parsed.
func (s *shortRef) syntax() *hclsyntax.ScopeTraversalExpr {
	tr, end := s.traversal()
	return &hclsyntax.ScopeTraversalExpr{Traversal: tr, SrcRange: hcl.Range{Filename: s.file, Start: s.start(), End: end}}
}

func (s *shortRef) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	return s.syntax().Value(ctx)
}

func (s *shortRef) Variables() []hcl.Traversal {
	tr, _ := s.traversal()
	return []hcl.Traversal{tr}
}

func (s *shortRef) Range() hcl.Range {
	start := s.start()
	// Every step after the root adds its dot: the text's own length.
	end := hcl.Pos{Line: start.Line, Column: start.Column + len(s.src), Byte: start.Byte + len(s.src)}
	return hcl.Range{Filename: s.file, Start: start, End: end}
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
		if name, ok := strings.CutPrefix(e.src, "node."); ok && strings.IndexByte(name, '.') < 0 {
			return name, true
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
