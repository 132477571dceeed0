package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// decodeSlow is the general path the ResourceDecoder's direct path must
// match: hcldec (DecodeResource), then TakeSensitive, then Conform.
func decodeSlow(body hcl.Body, b *sdk.Block, ctx *hcl.EvalContext) (cty.Value, []string, hcl.Diagnostics) {
	v, diags := DecodeResource(body, b, ctx)
	v, sens := TakeSensitive(v)
	return Conform(v, b.ImpliedType()), sens, diags
}

// flatBlock is a schema without nested block types (the direct path's),
// with every kind of attribute type.
var flatBlock = &sdk.Block{Attributes: map[string]*sdk.Attribute{
	"input":  {Type: cty.String, Optional: true},
	"name":   {Type: cty.String, Required: true},
	"size":   {Type: cty.Number, Optional: true},
	"on":     {Type: cty.Bool, Optional: true},
	"tags":   {Type: cty.Map(cty.String), Optional: true},
	"list":   {Type: cty.List(cty.Number), Optional: true},
	"set":    {Type: cty.Set(cty.String), Optional: true},
	"any":    {Type: cty.DynamicPseudoType, Optional: true},
	"obj":    {Type: cty.ObjectWithOptionalAttrs(map[string]cty.Type{"a": cty.String, "b": cty.Number}, []string{"b"}), Optional: true},
	"memory": {Type: cty.String, Optional: true, Computed: true},
	"id":     {Type: cty.String, Computed: true},
	"output": {Type: cty.DynamicPseudoType, Computed: true},
}}

// decoderCtx holds each, count, var (known, unknown, null, sensitive,
// strings NFC changes) and a same-key resource, as an instance's context
// does, and the functions.
func decoderCtx() *hcl.EvalContext {
	ctx := (&Scope{
		Variables: map[string]cty.Value{
			"s":       cty.StringVal("plain"),
			"later":   cty.UnknownVal(cty.String),
			"dyn":     cty.DynamicVal,
			"none":    cty.NullVal(cty.String),
			"secret":  cty.StringVal("hunter2").Mark(SensitiveMark),
			"secrets": cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v").Mark(SensitiveMark)}),
			"nfd":     cty.StringVal("e\u0301"), // StringVal normalises: "é"
			"n":       cty.NumberIntVal(3),
		},
		Resources: map[string]map[string]cty.Value{"sparkform_data": {
			"up": cty.ObjectVal(map[string]cty.Value{"2": cty.ObjectVal(map[string]cty.Value{"id": cty.UnknownVal(cty.String)})}),
			"kn": cty.ObjectVal(map[string]cty.Value{"k\u00e9": cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal("x")})}),
		}},
		Each:       &EachValues{Key: cty.StringVal("k\u00e9"), Value: cty.ObjectVal(map[string]cty.Value{"v": cty.StringVal("ve\u0301")})},
		CountIndex: cty.NumberIntVal(2),
	}).EvalContext()
	ctx.Functions = Functions(".")
	return ctx
}

// TestResourceDecoderMatches: a ResourceDecoder gives exactly the value,
// sensitive names and diagnostics of hcldec + TakeSensitive + Conform, on
// the direct path (a flat schema) and on the general one (nested blocks,
// dynamic blocks, computed-only set, content errors): literal and
// template strings (NFC-changed ones too), count.index, each.key and
// each.value in every position, unknowns, nulls, sensitive values, type
// conversions and their errors.
func TestResourceDecoderMatches(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		block  *sdk.Block
		direct bool // takes the direct path
		consts int  // attributes decoded once (constants)
	}{
		{"literals", "name = \"a\"\ninput = \"b\"\nsize = 3\non = true", flatBlock, true, 4},
		{"only required", `name = "a"`, flatBlock, true, 1},
		{"template count", `name = "seed-${count.index}"`, flatBlock, true, 0},
		{"count arithmetic", "name = \"x\"\nsize = count.index * 2 + 1\nlist = [count.index, count.index + 1]", flatBlock, true, 1},
		{"count in keys and values", "name = \"x\"\ntags = { \"k${count.index}\" = \"${count.index}\" }", flatBlock, true, 1},
		{"count converted", "name = count.index\ninput = count.index", flatBlock, true, 0},
		{"each key", "name = each.key\ninput = \"${each.key}-${each.value.v}\"", flatBlock, true, 0},
		{"each value", "name = \"a\"\nany = each.value\nobj = { a = each.value.v }", flatBlock, true, 1},
		{"each in map key", "name = \"a\"\ntags = { (each.key) = each.value.v }", flatBlock, true, 1},
		{"same-key by count", "name = \"a\"\ninput = sparkform_data.up[count.index].id", flatBlock, true, 1},
		{"same-key by each", "name = \"a\"\ninput = sparkform_data.kn[each.key].id", flatBlock, true, 1},
		{"unknown", "name = var.later\nany = var.dyn\ntags = { a = var.later }", flatBlock, true, 0},
		{"unknown template", `name = "x-${var.later}"`, flatBlock, true, 0},
		{"null", "name = \"a\"\ninput = var.none\nsize = null\nany = null", flatBlock, true, 3},
		{"sensitive attr", "name = \"a\"\ninput = var.secret", flatBlock, true, 1},
		{"sensitive function", "name = sensitive(\"x\")\ntags = { a = sensitive(\"y\"), b = \"z\" }", flatBlock, true, 0},
		{"sensitive inside", "name = \"a\"\ntags = var.secrets\nany = [var.secret]", flatBlock, true, 1},
		{"sensitive template", `name = "p-${var.secret}"`, flatBlock, true, 0},
		{"nonsensitive", `name = nonsensitive(var.secret)`, flatBlock, true, 0},
		{"nfc literal", "name = \"e\u0301\"\ninput = \"A\u030a\u212b\"", flatBlock, true, 2},
		{"nfc template", "name = \"${var.nfd}e\u0301${var.s}\"\ntags = { \"e\u0301\" = var.nfd }", flatBlock, true, 0},
		{"set", "name = \"a\"\nset = [\"b\", \"a\", \"b\", var.later]", flatBlock, true, 1},
		{"optional object attr", "name = \"a\"\nobj = { a = \"x\" }", flatBlock, true, 2},
		{"optional-writable computed", "name = \"a\"\nmemory = \"1g\"", flatBlock, true, 2},
		{"conversions", "name = 5\nsize = \"7\"\non = \"true\"\nlist = [\"1\", 2]", flatBlock, true, 4},
		{"functions", "name = upper(\"a\")\nlist = [for i in range(3) : i + count.index]\ntags = { for k in [\"a\", \"b\"] : k => \"${k}${each.key}\" }", flatBlock, true, 0},
		{"conditional", "name = count.index > 1 ? \"big\" : \"small\"\ninput = var.later == \"\" ? \"a\" : \"b\"", flatBlock, true, 0},
		{"plain references", "name = var.s\ninput = sparkform_data.kn[\"k\u00e9\"].id\nany = var.secret\nsize = var.n\ntags = var.secrets", flatBlock, true, 0},
		{"plain reference errors", "name = var.s\nsize = var.s\ninput = var.nope\nany = sparkform_data.kn.x", flatBlock, true, 0},
		{"type error", "name = \"a\"\nsize = \"six\"", flatBlock, true, 1},
		{"type errors and unknown", "name = \"a\"\nsize = [1]\non = {}\ninput = var.later", flatBlock, true, 1},
		{"eval error", "name = var.nope\ninput = each.value.missing", flatBlock, true, 0},
		{"missing required", `input = "a"`, flatBlock, false, 0},
		{"unsupported argument", "name = \"a\"\nimput = \"b\"", flatBlock, false, 0},
		{"unsupported block", "name = \"a\"\nblk {\n}", flatBlock, false, 0},
		{"computed-only set", "name = \"a\"\nid = \"forced\"", flatBlock, false, 0},
		{"dynamic block", "name = \"a\"\ndynamic \"x\" {\n  for_each = [1]\n  content {\n  }\n}", flatBlock, false, 0},
		{"nested blocks", containerSrc, dockerBlock, false, 0},
		{"empty schema", ``, &sdk.Block{}, true, 0},
		{"empty schema set", `a = 1`, &sdk.Block{}, false, 0},
	}
	shortened := 0
	defer func() {
		// unknown, null, the sensitive ones, plain references and their
		// errors: each plain reference on the direct path.
		if shortened < 20 {
			t.Errorf("%d attributes kept short in all, want >= 20", shortened)
		}
	}()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := body(t, tt.src)
			// As the loader leaves it: the meta-arguments hidden.
			f, diags := hclsyntax.ParseConfig([]byte("count = 3\nnode = node.local\n"+tt.src), "m.sf.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			_, remain, _ := f.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "count"}, {Name: "node"}}})
			for _, body := range []hcl.Body{b, remain} {
				d := NewResourceDecoder(body, tt.block)
				if d.direct != tt.direct {
					t.Fatalf("direct path %v, want %v", d.direct, tt.direct)
				}
				consts := 0
				for _, c := range d.consts {
					if c != cty.NilVal {
						consts++
					}
				}
				if consts != tt.consts {
					t.Errorf("%d constant attributes, want %d", consts, tt.consts)
				}
				if got, want := travSet(d.References()), travSet(BodyReferences(body, tt.block)); got != want {
					t.Errorf("references\n got %s\nwant %s", got, want)
				}
				ctx := decoderCtx()
				wantV, wantS, wantD := decodeSlow(body, tt.block, ctx)
				// DecodeRefs with a resolve that reads each reference
				// from ctx, as the evaluator's does, decodes the same.
				resolve := func(tr hcl.Traversal) (cty.Value, bool) {
					v, diags := tr.TraverseAbs(ctx)
					return v, len(diags) == 0
				}
				for run := 0; run < 8; run++ { // the decoder is reused
					if run == 4 {
						// As ReleaseBodyFor leaves it: plain references
						// kept short, decoding the same.
						d.shorten()
						for _, a := range d.set {
							if a.short != nil {
								shortened++
							}
						}
						if got, want := travSet(d.References()), travSet(BodyReferences(body, tt.block)); got != want {
							t.Errorf("references once shortened\n got %s\nwant %s", got, want)
						}
					}
					gotV, gotS, gotD := d.Decode(ctx)
					if run%4 >= 2 {
						asked := 0
						gotV, gotS, gotD = d.DecodeRefs(resolve, func() *hcl.EvalContext { asked++; return ctx })
						if asked > 1 {
							t.Errorf("DecodeRefs asked for the context %d times", asked)
						}
					}
					if gotD.HasErrors() != wantD.HasErrors() || diagSet(gotD) != diagSet(wantD) {
						t.Fatalf("diagnostics\n got %s\nwant %s", render(gotD), render(wantD))
					}
					if wantD.HasErrors() {
						continue // the value is not for use
					}
					if !gotV.RawEquals(wantV) {
						t.Errorf("value\n got %#v\nwant %#v", gotV, wantV)
					}
					if !reflect.DeepEqual(gotS, wantS) {
						t.Errorf("sensitive %q, want %q", gotS, wantS)
					}
					if gotV.ContainsMarked() {
						t.Errorf("marks left in %#v", gotV)
					}
				}
			}
		})
	}
}

// TestDecodeRefsContext: DecodeRefs asks for no context when every
// attribute is a constant or a reference resolve gives, and evaluates in
// the context a reference resolve does not give or whose value does not
// convert (the diagnostics are then Decode's).
func TestDecodeRefsContext(t *testing.T) {
	ctx := decoderCtx()
	fromCtx := func(tr hcl.Traversal) (cty.Value, bool) {
		v, diags := tr.TraverseAbs(ctx)
		return v, len(diags) == 0
	}
	d := NewResourceDecoder(body(t, "name = \"a\"\ninput = var.s\nsize = var.n"), flatBlock)
	for _, tt := range []struct {
		name    string
		resolve func(hcl.Traversal) (cty.Value, bool)
		asked   int
		size    cty.Value
	}{
		{"all resolved", fromCtx, 0, cty.NumberIntVal(3)},
		{"var.n not resolved", func(tr hcl.Traversal) (cty.Value, bool) {
			if tr.RootName() == "var" && tr[1].(hcl.TraverseAttr).Name == "n" {
				return cty.NilVal, false
			}
			return fromCtx(tr)
		}, 1, cty.NumberIntVal(3)},
		{"var.n does not convert", func(tr hcl.Traversal) (cty.Value, bool) {
			if tr[1].(hcl.TraverseAttr).Name == "n" {
				return cty.StringVal("six"), true
			}
			return fromCtx(tr)
		}, 1, cty.NumberIntVal(3)},
		{"nil resolve", nil, 1, cty.NumberIntVal(3)},
	} {
		asked := 0
		v, _, diags := d.DecodeRefs(tt.resolve, func() *hcl.EvalContext { asked++; return ctx })
		if diags.HasErrors() || asked != tt.asked || !v.GetAttr("size").RawEquals(tt.size) || v.GetAttr("input").AsString() != "plain" {
			t.Errorf("%s: %#v %v, context asked %d times, want %d", tt.name, v, diags, asked, tt.asked)
		}
	}
	// A value that does not convert, evaluated in the context: Decode's error.
	bad := NewResourceDecoder(body(t, "name = \"a\"\nsize = var.s"), flatBlock)
	_, _, want := bad.Decode(ctx)
	_, _, got := bad.DecodeRefs(fromCtx, func() *hcl.EvalContext { return ctx })
	if !want.HasErrors() || diagSet(got) != diagSet(want) {
		t.Errorf("diagnostics\n got %s\nwant %s", render(got), render(want))
	}
}

// TestDecodersShareByBody: a body is prepared once per schema block;
// bodies that are not native syntax (no map key) get a new decoder.
func TestDecodersShareByBody(t *testing.T) {
	var c Decoders
	a, b := body(t, `name = "a"`), body(t, `name = "a"`)
	if first, again := c.Get(a, flatBlock), c.Get(a, flatBlock); first != again {
		t.Error("one body got two decoders")
	}
	if c.Get(a, flatBlock) == c.Get(b, flatBlock) || c.Get(a, flatBlock) == c.Get(a, dockerBlock) {
		t.Error("another body or schema got the same decoder")
	}
	merged := hcl.MergeBodies([]hcl.Body{a, b})
	if first, again := c.Get(merged, flatBlock), c.Get(merged, flatBlock); first == again {
		t.Error("a merged body's decoder was cached")
	}
	var none *Decoders
	if v, _, diags := none.Get(a, flatBlock).Decode(decoderCtx()); diags.HasErrors() || v.GetAttr("name").AsString() != "a" {
		t.Errorf("nil Decoders: %#v %v", v, diags)
	}
}

// travSet renders traversals with their ranges, in an order that does
// not depend on hcldec's map iteration.
func travSet(travs []hcl.Traversal) string {
	var ss []string
	for _, tr := range travs {
		ss = append(ss, fmt.Sprintf("%s@%v", tr.RootName(), tr.SourceRange()))
	}
	sort.Strings(ss)
	return fmt.Sprint(ss)
}

// diagSet renders diagnostics with their ranges, in an order that does not
// depend on hcldec's map iteration. An expression's "Unknown variable",
// "Unsupported attribute" and "Call to unknown function" come from hcl's
// evaluation, which suggests the first close name in Go map order (of the
// EvalContext's variables or functions, of an object's attributes), so
// which of two close names it offers is chance on both sides; the
// suggestion is left out of those. (Users never see these: config
// validation reports unknown references and functions first, with its own
// stable suggestion.)
func diagSet(diags hcl.Diagnostics) string {
	var ss []string
	for _, d := range diags {
		detail := d.Detail
		switch d.Summary {
		case "Unknown variable", "Unsupported attribute", "Call to unknown function":
			if i := strings.Index(detail, " Did you mean "); i >= 0 {
				detail = detail[:i]
			}
		}
		ss = append(ss, fmt.Sprintf("%v|%s|%s|%v|%v|%v", d.Severity, d.Summary, detail, d.Subject, d.Context, d.EvalContext != nil))
	}
	sort.Strings(ss)
	return fmt.Sprint(ss)
}

// FuzzResourceDecoder: for any body that parses, the ResourceDecoder gives
// what hcldec + TakeSensitive + Conform give.
func FuzzResourceDecoder(f *testing.F) {
	for _, s := range []string{
		"name = \"a\"\ninput = \"b-${count.index}\"",
		"name = each.key\nany = each.value\ntags = { (each.key) = var.secret }",
		"name = \"e\u0301\"\nsize = \"x\"",
		"name = sensitive(var.later)\nset = [var.nfd, \"e\u0301\"]",
		"imput = 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		file, diags := hclsyntax.ParseConfig([]byte(src), "f.sf.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			return
		}
		ctx := decoderCtx()
		wantV, wantS, wantD := decodeSlow(file.Body, flatBlock, ctx)
		gotV, gotS, gotD := NewResourceDecoder(file.Body, flatBlock).Decode(ctx)
		if diagSet(gotD) != diagSet(wantD) {
			t.Fatalf("diagnostics\n got %s\nwant %s", render(gotD), render(wantD))
		}
		if wantD.HasErrors() {
			return
		}
		if !gotV.RawEquals(wantV) || !reflect.DeepEqual(gotS, wantS) {
			t.Fatalf("got %#v %q, want %#v %q", gotV, gotS, wantV, wantS)
		}
	})
}

// TestUnknownArgumentSuggestionStable: an unknown argument close to two
// names ("a0e": "any" and "name") gets the same "Did you mean", the first
// in name order, on every decode. hcldec builds its schema from a map, so
// before orderedBody the suggestion changed from call to call.
func TestUnknownArgumentSuggestionStable(t *testing.T) {
	file, diags := hclsyntax.ParseConfig([]byte("a0e = 0\n"), "f.sf.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	seen := map[string]int{}
	for range 64 {
		_, _, diags := NewResourceDecoder(file.Body, flatBlock).Decode(decoderCtx())
		for _, d := range diags {
			if d.Summary == "Unsupported argument" {
				seen[d.Detail]++
			}
		}
	}
	want := `An argument named "a0e" is not expected here. Did you mean "any"?`
	if len(seen) != 1 || seen[want] != 64 {
		t.Errorf("details over 64 decodes: %v, want only %q", seen, want)
	}
}

// TestPlainContent: plainContent says true only for bodies whose
// meta-less Content under the schema has no diagnostics, and does say
// true for the common body (meta-arguments and known attributes).
func TestPlainContent(t *testing.T) {
	schema := &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "input", Required: true}, {Name: "extra"}}}
	withMeta := &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "node"}, {Name: "input"}}}
	for _, c := range []struct {
		src    string
		schema *hcl.BodySchema
		want   bool
	}{
		{"node = node.local\ninput = 1\n", schema, true},
		{"count = 2\ninput = 1\nextra = 2\n", schema, true},
		{"input = 1\nbogus = 2\n", schema, false},           // unsupported argument
		{"node = node.local\n", schema, false},              // required input missing
		{"input = 1\nlifecycle {\n}\n", schema, false},      // a block: Content judges
		{"input = 1\nnested {\n}\n", schema, false},         // an unsupported block
		{"node = node.local\ninput = 1\n", withMeta, false}, // a schema attribute named like a meta-argument
	} {
		f, diags := hclsyntax.ParseConfig([]byte(c.src), "t.sf.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		sb := f.Body.(*hclsyntax.Body)
		got := plainContent(sb, c.schema)
		if got != c.want {
			t.Errorf("plainContent(%q) = %v, want %v", c.src, got, c.want)
		}
		if _, d := withoutMeta(sb).Content(c.schema); got && len(d) > 0 {
			t.Errorf("plainContent(%q) is true but Content says %v", c.src, d)
		}
	}
}
