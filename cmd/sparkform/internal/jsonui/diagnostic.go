package jsonui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine"
)

// Diagnostic is Terraform's diagnostic object (machine-readable UI
// and validate -json alike), field for field.
type Diagnostic struct {
	Severity string   `json:"severity"`
	Summary  string   `json:"summary"`
	Detail   string   `json:"detail"`
	Address  string   `json:"address,omitempty"`
	Range    *Range   `json:"range,omitempty"`
	Snippet  *Snippet `json:"snippet,omitempty"`
}

type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

type Range struct {
	Filename string `json:"filename"`
	Start    Pos    `json:"start"`
	End      Pos    `json:"end"`
}

// Snippet is the source around a diagnostic: code is whole
// lines from start_line, the highlight byte offsets into code, values
// the expression's inputs that were known when it failed.
type Snippet struct {
	Context              *string     `json:"context"`
	Code                 string      `json:"code"`
	StartLine            int         `json:"start_line"`
	HighlightStartOffset int         `json:"highlight_start_offset"`
	HighlightEndOffset   int         `json:"highlight_end_offset"`
	Values               []ExprValue `json:"values"`
}

type ExprValue struct {
	Traversal string `json:"traversal"`
	Statement string `json:"statement"`
}

// NewDiagnostic is d as Terraform writes it, with its range and the
// source snippet when files hold its file.
func NewDiagnostic(d *hcl.Diagnostic, files map[string]*hcl.File) Diagnostic {
	jd := Diagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail, Address: engine.DiagnosticAddress(d)}
	if d.Severity == hcl.DiagWarning {
		jd.Severity = "warning"
	}
	if s := d.Subject; s != nil {
		jd.Range = newRange(s)
		if f := files[s.Filename]; f != nil {
			jd.Snippet = newSnippet(f, d)
		}
	}
	return jd
}

func newRange(r *hcl.Range) *Range {
	pos := func(p hcl.Pos) Pos { return Pos{Line: p.Line, Column: p.Column, Byte: p.Byte} }
	return &Range{Filename: r.Filename, Start: pos(r.Start), End: pos(r.End)}
}

// newSnippet is the source line(s) of d's context (its subject when it
// has none), with the subject highlighted as byte offsets into code.
func newSnippet(f *hcl.File, d *hcl.Diagnostic) *Snippet {
	src, r := f.Bytes, d.Subject
	ctxRange := r
	if d.Context != nil && d.Context.Filename == r.Filename && d.Context.Start.Byte <= r.Start.Byte && d.Context.End.Byte >= r.End.Byte {
		ctxRange = d.Context
	}
	if ctxRange.Start.Byte > len(src) || ctxRange.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
		return nil
	}
	start := ctxRange.Start.Byte
	for start > 0 && src[start-1] != '\n' {
		start--
	}
	end := ctxRange.End.Byte
	for end < len(src) && src[end] != '\n' {
		end++
	}
	sn := &Snippet{
		Code: string(src[start:end]), StartLine: ctxRange.Start.Line,
		HighlightStartOffset: r.Start.Byte - start, HighlightEndOffset: r.End.Byte - start,
		Values: ExprValues(d),
	}
	if c := ContextString(f, r); c != "" {
		sn.Context = &c
	}
	return sn
}

// ExprValues are the values of the variables d's expression read, as
// Terraform lists them: one statement each, sorted by traversal, none
// that is sensitive (marked) or that the evaluation did not have.
func ExprValues(d *hcl.Diagnostic) []ExprValue {
	out := []ExprValue{}
	if d.Expression == nil || d.EvalContext == nil {
		return out
	}
	seen := map[string]bool{}
	for _, t := range d.Expression.Variables() {
		name := traversalString(t)
		if name == "" || seen[name] {
			continue
		}
		val, diags := t.TraverseAbs(d.EvalContext)
		if diags.HasErrors() || val.ContainsMarked() {
			continue
		}
		seen[name] = true
		out = append(out, ExprValue{Traversal: name, Statement: valueStatement(val)})
	}
	slices.SortFunc(out, func(a, b ExprValue) int { return strings.Compare(a.Traversal, b.Traversal) })
	return out
}

// traversalString is t as written (var.x, each.value.host, a["k"]).
func traversalString(t hcl.Traversal) string {
	var b strings.Builder
	for _, step := range t {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			k := s.Key
			switch {
			case !k.IsKnown() || k.IsNull():
				return ""
			case k.Type() == cty.String:
				fmt.Fprintf(&b, "[%q]", k.AsString())
			case k.Type() == cty.Number:
				fmt.Fprintf(&b, "[%s]", k.AsBigFloat().Text('f', -1))
			default:
				return ""
			}
		default:
			return ""
		}
	}
	return b.String()
}

// valueStatement describes v as Terraform's diagnostic values do: "is
// \"x\"", "is 3", "is null", "is a string, known only after apply", "is
// list of string with 2 elements", "is object with 3 attributes".
func valueStatement(v cty.Value) string {
	ty := v.Type()
	switch {
	case !v.IsKnown():
		return fmt.Sprintf("is a %s, known only after apply", ty.FriendlyName())
	case v.IsNull():
		return "is null"
	case ty == cty.String:
		return fmt.Sprintf("is %q", v.AsString())
	case ty == cty.Number:
		return "is " + v.AsBigFloat().Text('f', -1)
	case ty == cty.Bool:
		return fmt.Sprintf("is %t", v.True())
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType():
		n := v.LengthInt()
		what := "elements"
		if n == 1 {
			what = "element"
		}
		switch {
		case ty.IsMapType():
			return fmt.Sprintf("is map of %s with %d %s", ty.ElementType().FriendlyName(), n, what)
		case ty.IsTupleType():
			return fmt.Sprintf("is tuple with %d %s", n, what)
		}
		return fmt.Sprintf("is %s with %d %s", ty.FriendlyName(), n, what)
	case ty.IsObjectType():
		n := len(ty.AttributeTypes())
		what := "attributes"
		if n == 1 {
			what = "attribute"
		}
		return fmt.Sprintf("is object with %d %s", n, what)
	}
	return "is a " + ty.FriendlyName()
}

// ContextString is the block r is in, as HCL names it for people
// (resource "x" "y"): a snippet's context, and the "in ..." of a
// diagnostic printed for people.
func ContextString(f *hcl.File, r *hcl.Range) string {
	if f == nil {
		return ""
	}
	type contextStringer interface{ ContextString(offset int) string }
	if cs, ok := f.Nav.(contextStringer); ok {
		return cs.ContextString(r.Start.Byte)
	}
	return ""
}

// ValidateFormatVersion is the format_version of validate -json.
const ValidateFormatVersion = "1.0"

// ValidateOutput is Terraform's validate -json document.
type ValidateOutput struct {
	FormatVersion string       `json:"format_version"`
	Valid         bool         `json:"valid"`
	ErrorCount    int          `json:"error_count"`
	WarningCount  int          `json:"warning_count"`
	Diagnostics   []Diagnostic `json:"diagnostics"`
}
