package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

const releaseRoot = `
variable "v" {
  default = "x"
}
node "local" {
  transport = "local"
}
module "m" {
  source = "./mod"
}

resource "sparkform_data" "plain" {
  node             = node.local
  input            = "seed-${var.v}" # a comment
  triggers_replace = [for k, v in { a = 1, b = 2 } : "${k}=${v}" if v > 0]
}

/* a block comment before */ resource "sparkform_data" "heredoc" {
  node = node.local
  input = <<-EOT
    héllo ✓
    ${upper(var.v)}
  EOT
  lifecycle {
    ignore_changes = [input]
  }
}

resource "sparkform_data" "uses_module" {
  node  = node.local
  input = module.m.out
}
`

const releaseMod = `
resource "sparkform_data" "inner" {
  input = "i"
}
output "out" {
  value = sparkform_data.inner.id
}
`

// syntaxShape lists every syntax node under body with its type and range:
// equal shapes are equal trees, down to each byte's position.
func syntaxShape(t *testing.T, body hcl.Body) []string {
	t.Helper()
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		t.Fatalf("body is %T", body)
	}
	var out []string
	hclsyntax.VisitAll(sb, func(n hclsyntax.Node) hcl.Diagnostics {
		if _, ok := n.(hclsyntax.Attributes); ok {
			return nil // its range is that of whichever attribute the map yields first
		}
		r := n.Range()
		line := fmt.Sprintf("%s:%d:%d-%d:%d@%d-%d %T", r.Filename, r.Start.Line, r.Start.Column, r.End.Line, r.End.Column, r.Start.Byte, r.End.Byte, n)
		if st, ok := n.(*hclsyntax.ScopeTraversalExpr); ok {
			for _, tr := range st.Traversal {
				sr := tr.SourceRange()
				line += fmt.Sprintf(" %T@%d-%d", tr, sr.Start.Byte, sr.End.Byte)
			}
		}
		out = append(out, line)
		return nil
	})
	// Attributes come out in map order.
	slices.Sort(out)
	return out
}

func loadRelease(t *testing.T) *Module {
	t.Helper()
	m, diags := LoadDir(writeTree(t, map[string]string{"main.sf.hcl": releaseRoot, "mod/main.sf.hcl": releaseMod}))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	flat, diags := Flatten(m, map[string]cty.Value{"v": cty.StringVal("x")})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return flat
}

func TestReleaseBodyParsesAgain(t *testing.T) {
	flat := loadRelease(t)
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{"v": cty.StringVal("x")})},
		Functions: Functions("."),
	}
	for _, key := range []string{"sparkform_data.plain", "sparkform_data.heredoc"} {
		t.Run(key, func(t *testing.T) {
			r := flat.Resources[key]
			orig := r.Body()
			want := syntaxShape(t, orig)
			wantVals := attrValues(t, orig, ctx)
			if r.Released() {
				t.Fatal("released before ReleaseBody")
			}
			if got := r.ReleaseBody(); got != orig {
				t.Fatalf("ReleaseBody returned %p, want the body %p", got, orig)
			}
			if !r.Released() {
				t.Fatal("not released after ReleaseBody")
			}
			again := r.Body()
			if again == orig {
				t.Fatal("Body after release is the released body")
			}
			if r.Released() || r.Body() != again {
				t.Fatal("the body parsed again is not kept")
			}
			if got := syntaxShape(t, again); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("parsed again:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if got := attrValues(t, again, ctx); got != wantVals {
				t.Errorf("values parsed again: %s, want %s", got, wantVals)
			}
		})
	}
}

// attrValues renders every attribute of body (lifecycle's too) evaluated
// in ctx, in name order.
func attrValues(t *testing.T, body hcl.Body, ctx *hcl.EvalContext) string {
	t.Helper()
	sb := body.(*hclsyntax.Body)
	var parts []string
	add := func(prefix string, attrs hclsyntax.Attributes) {
		for _, a := range slices.Sorted(maps.Keys(attrs)) {
			v, d := attrs[a].Expr.Value(ctx)
			if d.HasErrors() {
				parts = append(parts, prefix+a+"=<"+d.Error()+">")
				continue
			}
			s, err := ctyJSON(v)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, prefix+a+"="+s)
		}
	}
	add("", sb.Attributes)
	for _, b := range sb.Blocks {
		add(b.Type+".", b.Body.Attributes)
	}
	return strings.Join(parts, " ")
}

func TestReleaseBodyKept(t *testing.T) {
	flat := loadRelease(t)
	for key, why := range map[string]string{
		"sparkform_data.uses_module":    "its reference to module.m was rewritten in place",
		`module.m.sparkform_data.inner`: "a module's body is shared by its instances",
	} {
		r := flat.Resources[key]
		if r == nil {
			t.Fatalf("no %s", key)
		}
		orig := r.Body()
		if got := r.ReleaseBody(); got != nil {
			t.Errorf("%s: released (%s)", key, why)
		}
		if r.Released() || r.Body() != orig {
			t.Errorf("%s: body changed (%s)", key, why)
		}
	}
}

// Two walks asking for a released body at once get one body.
func TestReleasedBodyParsedOnce(t *testing.T) {
	r := loadRelease(t).Resources["sparkform_data.plain"]
	r.ReleaseBody()
	bodies := make([]hcl.Body, 8)
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bodies[i] = r.Body()
		}()
	}
	wg.Wait()
	for i, b := range bodies {
		if b == nil || b != bodies[0] {
			t.Fatalf("goroutine %d got body %p, goroutine 0 %p", i, b, bodies[0])
		}
	}
}

// ReleaseBodyFor lets a body go and keeps its decoder only where the
// decoder needs no body (the direct path) and the body may go at all;
// the kept decoder is had again only for the schema it was made for.
func TestReleaseBodyForKeepsDecoder(t *testing.T) {
	flat := loadRelease(t)
	block := &sdk.Block{Attributes: map[string]*sdk.Attribute{
		"input":            {Type: cty.DynamicPseudoType, Optional: true},
		"triggers_replace": {Type: cty.DynamicPseudoType, Optional: true},
		"id":               {Type: cty.String, Computed: true},
	}}
	plain := flat.Resources["sparkform_data.plain"]
	d := NewResourceDecoder(plain.Body(), block)
	want, _, diags := d.Decode(RootContext(flat.Dir, map[string]cty.Value{"v": cty.StringVal("x")}))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if !plain.ReleaseBodyFor(d) || !plain.Released() {
		t.Fatal("the direct-path decoder's body was not let go")
	}
	if plain.KeptDecoder(block) != d || plain.KeptDecoder(dockerBlock) != nil {
		t.Error("the kept decoder is not had for its schema alone")
	}
	got, _, diags := plain.KeptDecoder(block).Decode(RootContext(flat.Dir, map[string]cty.Value{"v": cty.StringVal("x")}))
	if diags.HasErrors() || !got.RawEquals(want) {
		t.Errorf("the kept decoder decodes %#v (%v), want %#v", got, diags, want)
	}
	if !plain.Released() {
		t.Error("decoding with the kept decoder parsed the body again")
	}

	// The general path needs the body (a computed-only attribute set).
	general := flat.Resources["sparkform_data.heredoc"]
	gd := NewResourceDecoder(general.Body(), &sdk.Block{Attributes: map[string]*sdk.Attribute{"input": {Type: cty.String, Computed: true}}})
	if general.ReleaseBodyFor(gd) || general.Released() || general.KeptDecoder(gd.block) != nil {
		t.Error("a general-path decoder's body was let go")
	}
	// A module's body stays (its instances share it).
	inner := flat.Resources[`module.m.sparkform_data.inner`]
	if inner.ReleaseBodyFor(NewResourceDecoder(inner.Body(), block)) || inner.Released() {
		t.Error("a module instance's body was let go")
	}
}
