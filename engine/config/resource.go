package config

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/customdecode"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// DecoderSpec is the hcldec spec of a resource body for schema b.
// Computed-only attributes are left out: the provider sets them, config
// cannot.
func DecoderSpec(b *sdk.Block) hcldec.Spec {
	spec := hcldec.ObjectSpec{}
	if b == nil {
		return spec
	}
	for name, a := range b.Attributes {
		if a.Computed && !a.Optional && !a.Required {
			continue
		}
		spec[name] = &hcldec.AttrSpec{Name: name, Type: a.Type, Required: a.Required}
	}
	for name, nb := range b.BlockTypes {
		nested := DecoderSpec(&nb.Block)
		switch nb.Nesting {
		case sdk.NestingSingle:
			spec[name] = &hcldec.BlockSpec{TypeName: name, Nested: nested, Required: nb.MinItems > 0}
		case sdk.NestingList:
			if nb.Block.ImpliedType().HasDynamicTypes() {
				// Lists need one element type; dynamic attributes need a tuple.
				spec[name] = &hcldec.BlockTupleSpec{TypeName: name, Nested: nested, MinItems: nb.MinItems, MaxItems: nb.MaxItems}
			} else {
				spec[name] = &hcldec.BlockListSpec{TypeName: name, Nested: nested, MinItems: nb.MinItems, MaxItems: nb.MaxItems}
			}
		case sdk.NestingSet:
			spec[name] = &hcldec.BlockSetSpec{TypeName: name, Nested: nested, MinItems: nb.MinItems, MaxItems: nb.MaxItems}
		}
	}
	return spec
}

// computedOnly lists the attributes of b that config cannot set.
func computedOnly(b *sdk.Block) []hcl.AttributeSchema {
	var out []hcl.AttributeSchema
	if b == nil {
		return nil
	}
	for _, name := range b.AttributeNames() {
		if a := b.Attributes[name]; a.Computed && !a.Optional && !a.Required {
			out = append(out, hcl.AttributeSchema{Name: name})
		}
	}
	return out
}

// DecodeResource evaluates a resource body against schema b. The result is
// an object with the settable attributes and nested blocks; computed-only
// attributes are absent (the engine fills them with nulls).
//
// It runs once per instance per phase, so what depends only on the schema
// (the decoder spec, the computed-only names) is built once per schema
// block, and a body without a computed-only attribute or a dynamic block
// is decoded as it is, not copied first (PartialContent, dynblock.Expand).
func DecodeResource(body hcl.Body, b *sdk.Block, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	sp := specsOf(b)
	body = withoutMeta(body)
	if co := sp.computed; len(co) > 0 && setsAny(body, co) {
		content, remain, _ := body.PartialContent(&hcl.BodySchema{Attributes: co})
		for _, a := range sortedAttrs(content.Attributes) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot set a computed attribute",
				Detail:  fmt.Sprintf("%q is set by the provider and can only be read (e.g. by another resource); remove it from this block.", a.Name),
				Subject: a.NameRange.Ptr()})
		}
		body = remain
	}
	// dynamic "NAME" { for_each = ...; content { ... } } blocks, as
	// Terraform has them (hcl's dynblock extension).
	if hasDynamic(body) {
		body = dynblock.Expand(body, ctx)
	}
	val, d := hcldec.Decode(orderedBody{body}, sp.spec, ctx)
	diags = append(diags, d...)
	return val, diags
}

// orderedBody hands a body the schemas hcldec asks for sorted by name.
// hcldec builds them from a map, so their order changes from call to call,
// and hcl suggests the first close name in schema order: without this an
// unknown argument near two names ("a0e": "any" or "name") would get a
// different "Did you mean" from one run to the next. Nested blocks' bodies
// are wrapped too, for their own schemas.
type orderedBody struct{ hcl.Body }

var _ hcl.Body = orderedBody{}

func (b orderedBody) Content(schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	content, diags := b.Body.Content(sortedSchema(schema))
	orderBlocks(content)
	return content, diags
}

func (b orderedBody) PartialContent(schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Body, hcl.Diagnostics) {
	content, remain, diags := b.Body.PartialContent(sortedSchema(schema))
	orderBlocks(content)
	if remain != nil {
		remain = orderedBody{remain}
	}
	return content, remain, diags
}

func orderBlocks(content *hcl.BodyContent) {
	if content == nil {
		return
	}
	for _, blk := range content.Blocks {
		if blk.Body != nil {
			blk.Body = orderedBody{blk.Body}
		}
	}
}

// sortedSchema is schema with its attributes and block types sorted by
// name; schema itself is left as it is.
func sortedSchema(schema *hcl.BodySchema) *hcl.BodySchema {
	if schema == nil {
		return nil
	}
	out := &hcl.BodySchema{
		Attributes: slices.Clone(schema.Attributes),
		Blocks:     slices.Clone(schema.Blocks),
	}
	slices.SortStableFunc(out.Attributes, func(a, b hcl.AttributeSchema) int { return strings.Compare(a.Name, b.Name) })
	slices.SortStableFunc(out.Blocks, func(a, b hcl.BlockHeaderSchema) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// blockSpecs is what decoding needs of one schema block.
type blockSpecs struct {
	spec     hcldec.Spec
	schema   *hcl.BodySchema // hcldec.ImpliedSchema(spec)
	computed []hcl.AttributeSchema
	// ty is the block's implied type, what Conform makes a value.
	ty cty.Type
	// attrs are the implied type's attributes, sorted, for the
	// ResourceDecoder's direct path; nil when the block has nested block
	// types or an attribute type hcldec decodes specially (those take
	// hcldec itself).
	attrs []specAttr
}

// specAttr is one attribute of a block's implied type.
type specAttr struct {
	name string
	// decode is the decoder spec's type (cty.NilType: computed-only, not
	// decoded); null is what hcldec gives when config leaves it out.
	decode cty.Type
	null   cty.Value
	// ty is the implied type's (Conform converts to it).
	ty   cty.Type
	spec *hcldec.AttrSpec
}

// specCache holds the blockSpecs of each schema block (schemas do not
// change once fetched).
var specCache sync.Map // *sdk.Block -> *blockSpecs

func specsOf(b *sdk.Block) *blockSpecs {
	if b == nil {
		return &blockSpecs{spec: DecoderSpec(nil), ty: cty.EmptyObject}
	}
	if s, ok := specCache.Load(b); ok {
		return s.(*blockSpecs)
	}
	s, _ := specCache.LoadOrStore(b, newBlockSpecs(b))
	return s.(*blockSpecs)
}

func newBlockSpecs(b *sdk.Block) *blockSpecs {
	spec := DecoderSpec(b)
	s := &blockSpecs{spec: spec, schema: hcldec.ImpliedSchema(spec), computed: computedOnly(b), ty: b.ImpliedType()}
	if len(b.BlockTypes) > 0 {
		return s
	}
	obj := spec.(hcldec.ObjectSpec)
	for _, name := range b.AttributeNames() {
		a := specAttr{name: name, ty: s.ty.AttributeType(name)}
		if as, ok := obj[name].(*hcldec.AttrSpec); ok {
			if customdecode.CustomExpressionDecoderForType(as.Type) != nil {
				return s
			}
			a.spec, a.decode, a.null = as, as.Type, cty.NullVal(as.Type.WithoutOptionalAttributesDeep())
		}
		s.attrs = append(s.attrs, a)
	}
	if s.attrs == nil {
		s.attrs = []specAttr{}
	}
	return s
}

// setsAny says whether body may set one of attrs (always, for a body
// that is not native syntax).
func setsAny(body hcl.Body, attrs []hcl.AttributeSchema) bool {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return true
	}
	for _, a := range attrs {
		if _, ok := sb.Attributes[a.Name]; ok {
			return true
		}
	}
	return false
}

// hasDynamic says whether body may hold a dynamic block, at any depth
// (always, for a body that is not native syntax).
func hasDynamic(body hcl.Body) bool {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return true
	}
	for _, blk := range sb.Blocks {
		if blk.Type == "dynamic" || hasDynamic(blk.Body) {
			return true
		}
	}
	return false
}

// BodyReferences lists the traversals in a resource body that the schema
// would evaluate. Without a schema it falls back to every expression in
// the body's syntax tree.
func BodyReferences(body hcl.Body, b *sdk.Block) []hcl.Traversal {
	if body == nil {
		return nil
	}
	if b == nil {
		return syntaxTraversals(body, nil)
	}
	body = withoutMeta(body)
	spec := specsOf(b).spec
	if !hasDynamic(body) {
		return hcldec.Variables(body, spec)
	}
	travs := dynblock.VariablesHCLDec(body, spec)
	// Computed-only attributes set by mistake still refer to things;
	// DecodeResource reports them, the graph should not panic on them.
	return travs
}

// ExprReferences lists the traversals in the expressions; nil ones are
// skipped.
func ExprReferences(exprs ...hcl.Expression) []hcl.Traversal {
	var out []hcl.Traversal
	for _, e := range exprs {
		if e != nil {
			out = appendVariables(out, e)
		}
	}
	return out
}

// appendVariables appends e.Variables() to out. A plain reference, most of
// a generated configuration's expressions, is its own one traversal:
// hclsyntax finds that by walking it with a walker of its own (five
// allocations where this makes none), and a walk from an expression's top
// has no local names (for-expressions') to leave out.
func appendVariables(out []hcl.Traversal, e hcl.Expression) []hcl.Traversal {
	if st, ok := e.(*hclsyntax.ScopeTraversalExpr); ok {
		return append(out, st.Traversal)
	}
	return append(out, e.Variables()...)
}

// syntaxTraversals walks a native-syntax body, skipping blocks of the
// given types (e.g. lifecycle, whose ignore_changes are not references).
// Other bodies contribute their attributes only.
func syntaxTraversals(body hcl.Body, skipBlocks map[string]bool) []hcl.Traversal {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		attrs, _ := body.JustAttributes()
		var out []hcl.Traversal
		for _, a := range sortedAttrs(attrs) {
			out = appendVariables(out, a.Expr)
		}
		return out
	}
	attrs := make([]*hclsyntax.Attribute, 0, len(sb.Attributes))
	for _, a := range sb.Attributes {
		attrs = append(attrs, a)
	}
	slices.SortFunc(attrs, func(a, b *hclsyntax.Attribute) int { return a.SrcRange.Start.Byte - b.SrcRange.Start.Byte })
	var out []hcl.Traversal
	for _, a := range attrs {
		out = appendVariables(out, a.Expr)
	}
	for _, blk := range sb.Blocks {
		if skipBlocks[blk.Type] {
			continue
		}
		if blk.Type == "dynamic" && len(blk.Labels) == 1 {
			// The iterator (the label, or `iterator = NAME`) is local to
			// the block: its references are not references.
			iter := blk.Labels[0]
			if a, ok := blk.Body.Attributes["iterator"]; ok {
				if kw := hcl.ExprAsKeyword(a.Expr); kw != "" {
					iter = kw
				}
			}
			for _, tr := range syntaxTraversals(blk.Body, nil) {
				if tr.RootName() != iter {
					out = append(out, tr)
				}
			}
			continue
		}
		out = append(out, syntaxTraversals(blk.Body, nil)...)
	}
	return out
}

// AttributeRange finds the source range of an attribute path inside a
// body: the deepest part of the path the source spells out (an attribute,
// an object key or tuple element inside its value, or a nested block).
// It returns nil when not even the first step is in the body.
func AttributeRange(body hcl.Body, path cty.Path) *hcl.Range {
	if body == nil || len(path) == 0 {
		return nil
	}
	first, ok := path[0].(cty.GetAttrStep)
	if !ok {
		return nil
	}
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		content, _, _ := body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: first.Name}}})
		if a, ok := content.Attributes[first.Name]; ok {
			return a.Expr.Range().Ptr()
		}
		return nil
	}
	if a, ok := sb.Attributes[first.Name]; ok {
		return exprRange(a.Expr, path[1:])
	}
	var blocks []*hclsyntax.Block
	for _, blk := range sb.Blocks {
		if blk.Type == first.Name {
			blocks = append(blocks, blk)
		}
	}
	if len(blocks) == 0 {
		return nil
	}
	rest := path[1:]
	blk := blocks[0]
	if len(rest) > 0 {
		if ix, ok := rest[0].(cty.IndexStep); ok {
			rest = rest[1:]
			if ix.Key.Type() == cty.Number && ix.Key.IsKnown() && !ix.Key.IsNull() {
				i, _ := ix.Key.AsBigFloat().Int64()
				if i < 0 || int(i) >= len(blocks) {
					return blk.DefRange().Ptr()
				}
				blk = blocks[i]
			} else {
				// Set elements have no position: the first block of the
				// type is the best we can point at.
				return blk.DefRange().Ptr()
			}
		}
	}
	if len(rest) == 0 {
		return blk.DefRange().Ptr()
	}
	if r := AttributeRange(blk.Body, rest); r != nil {
		return r
	}
	return blk.DefRange().Ptr()
}

// exprRange digs into object and tuple constructors along path.
func exprRange(e hclsyntax.Expression, path cty.Path) *hcl.Range {
	if len(path) == 0 {
		return e.Range().Ptr()
	}
	switch ex := e.(type) {
	case *hclsyntax.ObjectConsExpr:
		var key string
		switch s := path[0].(type) {
		case cty.GetAttrStep:
			key = s.Name
		case cty.IndexStep:
			if s.Key.Type() != cty.String || !s.Key.IsKnown() || s.Key.IsNull() {
				return e.Range().Ptr()
			}
			key = s.Key.AsString()
		}
		for _, item := range ex.Items {
			kv, d := item.KeyExpr.Value(nil)
			if d.HasErrors() {
				// An identifier key such as {modeset = "1"} is a
				// traversal when evaluated without context.
				if k := hcl.ExprAsKeyword(item.KeyExpr); k != "" {
					kv = cty.StringVal(k)
				} else {
					continue
				}
			}
			if kv.Type() == cty.String && kv.IsKnown() && !kv.IsNull() && kv.AsString() == key {
				return exprRange(item.ValueExpr, path[1:])
			}
		}
	case *hclsyntax.TupleConsExpr:
		if s, ok := path[0].(cty.IndexStep); ok && s.Key.Type() == cty.Number && s.Key.IsKnown() && !s.Key.IsNull() {
			i, _ := s.Key.AsBigFloat().Int64()
			if i >= 0 && int(i) < len(ex.Exprs) {
				return exprRange(ex.Exprs[i], path[1:])
			}
		}
	}
	return e.Range().Ptr()
}
