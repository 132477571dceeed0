package config

import (
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/sparkform/sparkform/providers/sdk"
)

// ResourceDecoder decodes one resource body against one schema block,
// once per instance: DecodeResource, TakeSensitive and Conform in one.
//
// What depends only on the body and the schema is done once, by
// NewResourceDecoder: which attributes the body sets and the checks
// hcldec makes of the body's content (unknown or missing arguments). A
// native-syntax body of a schema without nested block types, whose
// content has no such error, is then decoded directly: each attribute it
// sets evaluated and converted as hcldec's AttrSpec does, the marks taken
// off as TakeSensitive does, and the object built once with the implied
// type's attributes, as Conform builds it. The values and diagnostics are
// exactly those of the general path (TestResourceDecoderMatches), which
// every other body takes.
type ResourceDecoder struct {
	// body is nil on the direct path, which does not need it: a root
	// block's body can go once its decoder is made (the engine's
	// releaseRootBodies), the decoder keeping only what it evaluates.
	body  hcl.Body
	block *sdk.Block
	sp    *blockSpecs
	// direct says the body takes the direct path.
	direct bool
	// set holds, for the direct path, each attribute of sp.attrs the body
	// sets (computed-only ones aside), in sp.attrs' order: only those, a
	// generated block sets one or two of a schema's several. Only the
	// expression and where the attribute's name starts (for a
	// diagnostic's context), not the syntax attribute: its ranges are
	// ~224 B per set attribute per block.
	set []setAttr
	// consts holds, beside set (nil when there is none), the decoded
	// value of each set attribute whose expression is a constant
	// (literals, templates without interpolation, tuples and objects of
	// them: no reference, no function); cty.NilVal for the others.
	consts []cty.Value
}

// setAttr is one attribute the body sets: its expression and where its
// name starts. A plain reference is kept short once the body is let go
// (ResourceDecoder.shorten): expr is then nil and short holds it.
type setAttr struct {
	attr      int // its index in sp.attrs
	expr      hclsyntax.Expression
	short     *shortRef
	nameStart hcl.Pos
}

// expression is the attribute's expression, rebuilt when kept short.
func (a *setAttr) expression() hclsyntax.Expression {
	if a.short != nil {
		return a.short.syntax()
	}
	return a.expr
}

// shorten keeps each plain reference the direct path evaluates as a
// shortRef: once the body is let go (Resource.ReleaseBodyFor) they are
// most of what a generated block keeps. Not safe while the decoder is in
// use.
func (d *ResourceDecoder) shorten() {
	for i := range d.set {
		a := &d.set[i]
		if st, ok := a.expr.(*hclsyntax.ScopeTraversalExpr); ok {
			if s := shortOf(st); s != nil {
				a.expr, a.short = nil, s
			}
		}
	}
}

// NewResourceDecoder prepares the decoding of body against schema b.
func NewResourceDecoder(body hcl.Body, b *sdk.Block) *ResourceDecoder {
	d := &ResourceDecoder{body: body, block: b, sp: specsOf(b)}
	if b == nil || d.sp.attrs == nil {
		return d
	}
	sb, ok := body.(*hclsyntax.Body)
	if !ok || setsAny(sb, d.sp.computed) || hasDynamic(sb) {
		return d
	}
	if !plainContent(sb, d.sp.schema) {
		if _, diags := withoutMeta(sb).Content(d.sp.schema); len(diags) > 0 {
			return d // the general path reports them, every time
		}
	}
	d.direct, d.body = true, nil
	taken := func(a *specAttr) bool { return a.spec != nil && !isMetaAttr(a.name) && sb.Attributes[a.name] != nil }
	n := 0
	for i := range d.sp.attrs {
		if taken(&d.sp.attrs[i]) {
			n++
		}
	}
	if n > 0 {
		d.set = make([]setAttr, 0, n)
	}
	for i := range d.sp.attrs {
		a := &d.sp.attrs[i]
		if !taken(a) {
			continue
		}
		attr := sb.Attributes[a.name]
		d.set = append(d.set, setAttr{attr: i, expr: attr.Expr, nameStart: attr.NameRange.Start})
		if !isConstant(attr.Expr) {
			continue
		}
		v, diags := decodeAttr(a.name, a.decode, d.set[len(d.set)-1], nil)
		if len(diags) > 0 || sdk.HasMarks(v) {
			continue
		}
		if cv, err := convert.Convert(v, a.ty); err == nil {
			v = cv
		}
		if d.consts == nil {
			d.consts = make([]cty.Value, n)
		}
		d.consts[len(d.set)-1] = v
	}
	return d
}

// plainContent says, without hcl's Content (two copies of the body and
// its maps per block, ~0.04 CPU s of a 10,000-block plan), that sb's
// meta-less content under schema has no diagnostics: sb has no blocks,
// each of its attributes is a meta-argument or one schema names, and it
// sets every attribute schema requires. False sends the caller to
// Content, which says what is wrong or that nothing is.
func plainContent(sb *hclsyntax.Body, schema *hcl.BodySchema) bool {
	if len(sb.Blocks) > 0 {
		return false
	}
	for _, a := range schema.Attributes {
		if isMetaAttr(a.Name) {
			return false // hidden by withoutMeta: let Content judge
		}
		if _, ok := sb.Attributes[a.Name]; a.Required && !ok {
			return false
		}
	}
	for name := range sb.Attributes {
		if isMetaAttr(name) {
			continue
		}
		if !slices.ContainsFunc(schema.Attributes, func(a hcl.AttributeSchema) bool { return a.Name == name }) {
			return false
		}
	}
	return true
}

// isMetaAttr says whether name is a resource meta-argument (withoutMeta
// hides it from the provider's schema).
func isMetaAttr(name string) bool {
	return slices.ContainsFunc(resourceMetaSchema.Attributes, func(a hcl.AttributeSchema) bool { return a.Name == name })
}

// isConstant says whether e's value depends on nothing: it refers to
// nothing and calls no function (whose result may depend on the walk).
func isConstant(e hcl.Expression) bool {
	se, ok := e.(hclsyntax.Expression)
	if !ok || len(e.Variables()) > 0 {
		return false
	}
	constant := true
	hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		switch n.(type) {
		case *hclsyntax.LiteralValueExpr, *hclsyntax.TemplateExpr, *hclsyntax.TemplateWrapExpr,
			*hclsyntax.TupleConsExpr, *hclsyntax.ObjectConsExpr, *hclsyntax.ObjectConsKeyExpr:
		case *hclsyntax.ScopeTraversalExpr:
			// Only as an object key's bare name ({a = 1}): a real
			// reference is in Variables.
		default:
			constant = false
		}
		return nil
	})
	return constant
}

// Decoders holds the ResourceDecoder of each body and schema block, made
// once: validate, plan and apply of one run (and the instances of a
// module, which share their module's bodies) prepare each body once. The
// zero value is ready; a nil *Decoders makes a new decoder every time.
//
// A map under a lock, not a sync.Map: it holds an entry per resource body
// for the whole run, and a sync.Map's entry (its trie nodes, the boxed
// key) was ~115 B against ~50 B; the walk reads it once per instance.
type Decoders struct {
	mu sync.RWMutex
	m  map[decoderKey]*ResourceDecoder
}

type decoderKey struct {
	body  *hclsyntax.Body
	block *sdk.Block
}

// Len is how many decoders c holds: the resource bodies prepared.
func (c *Decoders) Len() int {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// Forget drops the decoder of body against schema b, whose key would keep
// the body alive: its block holds the decoder itself and lets the body go
// (engine.releaseRootBodies).
func (c *Decoders) Forget(body hcl.Body, b *sdk.Block) {
	sb, ok := body.(*hclsyntax.Body)
	if c == nil || !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, decoderKey{sb, b})
}

// Direct says d decodes on the direct path, which keeps no body.
func (d *ResourceDecoder) Direct() bool { return d.direct }

// Get is the decoder of body against schema b.
func (c *Decoders) Get(body hcl.Body, b *sdk.Block) *ResourceDecoder {
	sb, ok := body.(*hclsyntax.Body)
	if c == nil || !ok { // other bodies (merged ones) are no map key
		return NewResourceDecoder(body, b)
	}
	k := decoderKey{sb, b}
	c.mu.RLock()
	d := c.m[k]
	c.mu.RUnlock()
	if d != nil {
		return d
	}
	d = NewResourceDecoder(body, b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.m[k]; prev != nil {
		return prev // made meanwhile: one decoder per body
	}
	if c.m == nil {
		c.m = map[decoderKey]*ResourceDecoder{}
	}
	c.m[k] = d
	return d
}

// References lists the traversals in the body that decoding evaluates,
// as BodyReferences does.
func (d *ResourceDecoder) References() []hcl.Traversal {
	if !d.direct {
		return BodyReferences(d.body, d.block)
	}
	var out []hcl.Traversal
	for i := range d.set {
		switch a := &d.set[i]; {
		case a.short != nil:
			out = append(out, a.short.Variables()...)
		case a.expr != nil:
			out = appendVariables(out, a.expr)
		}
	}
	return out
}

// Decode evaluates the body in ctx: an object of the schema's implied
// type (computed-only attributes null), without marks, and the sensitive
// paths (SensitivePaths) where it held a sensitive value. The value is not for
// use when diags has errors.
func (d *ResourceDecoder) Decode(ctx *hcl.EvalContext) (cty.Value, []string, hcl.Diagnostics) {
	return d.DecodeRefs(nil, func() *hcl.EvalContext { return ctx })
}

// DecodeRefs is Decode with the evaluation context built only if needed.
// On the direct path an attribute whose expression is a plain reference
// (a scope traversal such as gitkit_checkout.kit.path) takes its value
// from resolve, when resolve has one, and needs no context; every other
// attribute, and a body on the general path, is evaluated in ctx(), asked
// for at most once. An instance's context holds an object per name it
// references (~3.6 KB built per single-instance block), and most such
// blocks set only constants and plain references.
//
// resolve must give exactly what the traversal evaluates to in ctx() when
// that evaluation has no diagnostics, and false otherwise or when unsure.
// A resolved value that does not convert to the attribute's type is
// evaluated again in ctx(), so the diagnostics are always Decode's
// (TestResourceDecoderMatches, TestDecodeRefsContext). A nil resolve
// resolves nothing.
func (d *ResourceDecoder) DecodeRefs(resolve func(hcl.Traversal) (cty.Value, bool), ctxOf func() *hcl.EvalContext) (cty.Value, []string, hcl.Diagnostics) {
	if !d.direct {
		v, diags := DecodeResource(d.body, d.block, ctxOf())
		v, sens := TakeSensitive(v)
		return Conform(v, d.sp.ty), sens, diags
	}
	var ctx *hcl.EvalContext
	var haveCtx bool
	var diags hcl.Diagnostics
	var sens []string
	vals := make(map[string]cty.Value, len(d.sp.attrs))
	next := 0 // d.set's next attribute
	for i := range d.sp.attrs {
		a := &d.sp.attrs[i]
		var v cty.Value
		j := -1
		if next < len(d.set) && d.set[next].attr == i {
			j, next = next, next+1
		}
		switch {
		case a.spec == nil: // computed-only
			v = cty.NullVal(a.ty)
		case j < 0:
			v = a.null
		case d.consts != nil && d.consts[j] != cty.NilVal:
			vals[a.name] = d.consts[j]
			continue
		default:
			attr := d.set[j]
			var ok bool
			if resolve != nil {
				v, ok = resolveAttr(resolve, a.decode, attr)
			}
			if !ok {
				if !haveCtx {
					ctx, haveCtx = ctxOf(), true
				}
				var ds hcl.Diagnostics
				v, ds = decodeAttr(a.spec.Name, a.decode, attr, ctx)
				diags = append(diags, ds...)
			}
		}
		if sdk.HasMarks(v) {
			sens = append(sens, AttrSensitivePaths(a.name, v)...)
			v, _ = v.UnmarkDeep()
		}
		if cv, err := convert.Convert(v, a.ty); err == nil {
			v = cv
		}
		vals[a.name] = v
	}
	return cty.ObjectVal(vals), NormalizeSensitivePaths(sens), diags
}

// resolveAttr is decodeAttr's value for attr when its expression is a
// plain reference that resolve gives and whose value converts to ty; false
// otherwise (decodeAttr then evaluates it and reports what is wrong).
func resolveAttr(resolve func(hcl.Traversal) (cty.Value, bool), ty cty.Type, attr setAttr) (cty.Value, bool) {
	var tr hcl.Traversal
	if attr.short != nil {
		tr, _ = attr.short.traversal()
	} else if st, ok := attr.expr.(*hclsyntax.ScopeTraversalExpr); ok {
		tr = st.Traversal
	} else {
		return cty.NilVal, false
	}
	v, ok := resolve(tr)
	if !ok {
		return cty.NilVal, false
	}
	conv, err := convert.Convert(v, ty)
	if err != nil {
		return cty.NilVal, false
	}
	return conv, true
}

// decodeAttr is hcldec's AttrSpec decode of one attribute set in the body.
func decodeAttr(name string, ty cty.Type, attr setAttr, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	expr := attr.expression()
	val, diags := expr.Value(ctx)
	conv, err := convert.Convert(val, ty)
	if err != nil {
		rng := expr.Range()
		return cty.UnknownVal(ty.WithoutOptionalAttributesDeep()), append(diags, &hcl.Diagnostic{
			Severity:    hcl.DiagError,
			Summary:     "Incorrect attribute value type",
			Detail:      fmt.Sprintf("Inappropriate value for attribute %q: %s.", name, err.Error()),
			Subject:     rng.Ptr(),
			Context:     &hcl.Range{Filename: rng.Filename, Start: attr.nameStart, End: rng.End},
			Expression:  expr,
			EvalContext: ctx,
		})
	}
	return conv, diags
}

// Conform makes v an object with exactly the attributes of ty, a block's
// implied type (computed attributes the decoder left out become null),
// converted to their types.
func Conform(v cty.Value, ty cty.Type) cty.Value {
	if v.IsNull() || !v.IsKnown() {
		return v
	}
	vals := make(map[string]cty.Value, len(ty.AttributeTypes()))
	for name, aty := range ty.AttributeTypes() {
		var av cty.Value
		if v.Type().IsObjectType() && v.Type().HasAttribute(name) {
			av = v.GetAttr(name)
		} else {
			av = cty.NullVal(aty)
		}
		if cv, err := convert.Convert(av, aty); err == nil {
			av = cv
		}
		vals[name] = av
	}
	return cty.ObjectVal(vals)
}
