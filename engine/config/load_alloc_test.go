package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/heaptest"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// TestLoadKeepsNoBodyCopy: a loaded resource block keeps its syntax and
// its Resource, not also a copy of its body with the meta-arguments hidden
// (PartialContent's remain: a Body and two maps, ~0.6 KB per block, ~6 MB
// of the bench's 10,000-block shape, live for the whole run). Resource.Body
// is the block's own body.
func TestLoadKeepsNoBodyCopy(t *testing.T) {
	const n = 2000
	var src strings.Builder
	src.WriteString("node \"local\" {\n  transport = \"local\"\n}\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&src, "\nresource \"sparkform_data\" \"r%d\" {\n  node  = node.local\n  input = \"seed-%d\"\n}\n", i, i)
	}
	dir := writeTree(t, map[string]string{"main.sf.hcl": src.String()})
	before := liveHeap()
	mod, diags := LoadDir(dir)
	perBlock := (liveHeap() - before) / n
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	runtime.KeepAlive(mod)
	// 3,105 B with the copy, 2,417 B without (go1.26, amd64).
	if perBlock > 2750 {
		t.Errorf("a resource block keeps %d B after loading, want <= 2750 (no second copy of its body)", perBlock)
	}
	for _, r := range mod.Resources {
		if attrs, _ := withoutMeta(r.Body()).JustAttributes(); len(attrs) != 1 || attrs["input"] == nil {
			t.Fatalf("%s: the schema sees %v, want input alone", r.Addr, attrs)
		}
	}
}

// TestLoadKeepsNoBlockHeaders: once a large (chunked) file is loaded,
// its module keeps of it the bytes and a navigation of block extents and
// headers for diagnostics, not the parsed top-level blocks (type, labels
// and their ranges: ~330 B per block, decoded into Resource already).
// Diagnostics still say which block they are in, as the whole-file
// parse's navigation says it (TestParseChunkedSameAsWhole).
func TestLoadKeepsNoBlockHeaders(t *testing.T) {
	const n = 2000
	var src strings.Builder
	src.WriteString("node \"local\" {\n  transport = \"local\"\n}\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&src, "\nresource \"sparkform_data\" \"r%d\" {\n  node  = node.local\n  input = \"seed-%d\"\n}\n", i, i)
	}
	dir := writeTree(t, map[string]string{"main.sf.hcl": src.String()})
	before := liveHeap()
	mod, diags := LoadDir(dir)
	perBlock := int64(liveHeap()-before) / n
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	runtime.KeepAlive(mod)
	t.Logf("%d B kept per block", perBlock)
	// 2,417 B with the blocks, 2,084 B without (go1.26, amd64); 2,212 B
	// with the bodySource a released body is parsed again from (-race:
	// 2,268 B).
	if perBlock > 2350 {
		t.Errorf("a resource block keeps %d B after loading, want <= 2350 (no parsed block header)", perBlock)
	}
	r := mod.Resources["sparkform_data.r1234"]
	f := mod.Files[r.DeclRange.Filename]
	type nav interface{ ContextString(int) string }
	at := r.Body().(*hclsyntax.Body).Attributes["input"].Expr.Range().Start.Byte
	if got, want := f.Nav.(nav).ContextString(at), `resource "sparkform_data" "r1234"`; got != want {
		t.Errorf("a diagnostic in %s is in %q, want %q", r.Addr, got, want)
	}
}

// TestResourceDecoderKeepsNoAttributeCopy: a body's decoder, which lives as
// long as the body (validate, plan and apply share it), keeps the body's
// own syntax attributes: it kept the hcl.Attribute copies Content makes
// (~160 B per set attribute per block, 1.5 MB of a 10,000-block apply's
// live heap).
func TestResourceDecoderKeepsNoAttributeCopy(t *testing.T) {
	const n = 2000
	mod, schema := generatedBlocks(t, n)
	ds := make([]*ResourceDecoder, 0, n)
	specsOf(schema) // the schema's specs are built once, not per body
	before := liveHeap()
	for _, r := range mod.Resources {
		ds = append(ds, NewResourceDecoder(r.Body(), schema))
	}
	perBlock := (liveHeap() - before) / n
	runtime.KeepAlive(ds)
	runtime.KeepAlive(mod)
	t.Logf("%d B per decoder", perBlock)
	for _, d := range ds {
		if !d.direct {
			t.Fatal("a body without errors took the general path")
		}
		if refs := d.References(); len(refs) != 1 {
			t.Fatalf("references %v, want the one of input", refs)
		}
	}
	// go1.26, amd64: 264 B with the copies, 104 B pointing at the body's
	// own attributes, 208 B holding each set attribute's expression and
	// name position, which keeps none of the body (the engine lets a
	// root block's body go once its decoder is made), 160 B holding only
	// the attributes set (one of the schema's three here).
	if perBlock > 200 {
		t.Errorf("a resource body's decoder keeps %d B, want <= 200 (no copy of its attributes, no slot per attribute not set)", perBlock)
	}
	for _, d := range ds {
		if d.body != nil {
			t.Fatal("a decoder on the direct path keeps its body")
		}
	}
}

// TestDecodersKeepLittlePerBody: the decoders of a run (one per resource
// body, kept to its end) cost little beside the decoders themselves: a
// sync.Map's trie nodes and boxed key were ~110 B per body.
func TestDecodersKeepLittlePerBody(t *testing.T) {
	const n = 2000
	mod, schema := generatedBlocks(t, n)
	specsOf(schema)
	ds := make([]*ResourceDecoder, 0, n)
	before := liveHeap()
	for _, r := range mod.Resources {
		ds = append(ds, NewResourceDecoder(r.Body(), schema))
	}
	alone := int64(liveHeap()-before) / n
	runtime.KeepAlive(ds)
	ds = nil
	before = liveHeap()
	c := &Decoders{}
	for _, r := range mod.Resources {
		c.Get(r.Body(), schema)
	}
	kept := int64(liveHeap()-before) / n
	runtime.KeepAlive(c)
	runtime.KeepAlive(mod)
	for _, r := range mod.Resources {
		if first, again := c.Get(r.Body(), schema), c.Get(r.Body(), schema); first != again {
			t.Fatal("two decoders for one body")
		}
		break
	}
	t.Logf("per body: %d B kept by Decoders, %d B by its decoder alone", kept, alone)
	// go1.26, amd64: 114 B beside the decoder with a sync.Map, 52 B with a map.
	if kept-alone > 80 {
		t.Errorf("Decoders keeps %d B per body beside its decoder (%d B), want <= 80", kept-alone, alone)
	}
}

// TestReleasedBlockKeepsLittle: what a generated root block keeps once a
// plan or apply let its body go (Resource.ReleaseBodyFor): its Resource,
// its decoder and the expressions the decoder evaluates. Its two plain
// references (node = node.local, input = sparkform_data.rN.id) were
// hclsyntax trees of ~290 and ~380 B; they are kept short now (shortRef).
func TestReleasedBlockKeepsLittle(t *testing.T) {
	const n = 2000
	mod, schema := generatedBlocks(t, n)
	for _, r := range mod.Resources {
		if !r.ReleaseBodyFor(NewResourceDecoder(r.Body(), schema)) {
			t.Fatalf("%s: its body was not let go", r.Addr)
		}
		if _, ok := r.NodeExpr.(*shortRef); !ok {
			t.Fatalf("%s: node = node.local not kept short (%T)", r.Addr, r.NodeExpr)
		}
	}
	with := liveHeap()
	runtime.KeepAlive(mod)
	mod = nil
	perBlock := (int64(with) - int64(liveHeap())) / n
	t.Logf("a released block keeps %d B", perBlock)
	// go1.26, amd64: 1,760 B with the two references parsed, 1,280 B kept
	// short as names, 1,216 B with the decoder holding only the attribute
	// set, 1,099 B with each reference its source text (the file's bytes
	// and navigation, the Resource and the decoder are the rest).
	if perBlock > 1350 {
		t.Errorf("a released block keeps %d B, want <= 1350 (its plain references short)", perBlock)
	}
}

// generatedBlocks is a loaded root of n generated blocks (a chain of plain
// references, as a generator writes them) and sparkform_data's schema.
func generatedBlocks(t *testing.T, n int) (*Module, *sdk.Block) {
	t.Helper()
	var src strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&src, "\nresource \"sparkform_data\" \"r%d\" {\n  node  = node.local\n  input = sparkform_data.r%d.id\n}\n", i, i+1)
	}
	dir := writeTree(t, map[string]string{"main.sf.hcl": src.String()})
	mod, diags := LoadDir(dir)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return mod, &sdk.Block{Attributes: map[string]*sdk.Attribute{
		"input":  {Type: cty.DynamicPseudoType, Optional: true},
		"id":     {Type: cty.String, Computed: true},
		"output": {Type: cty.DynamicPseudoType, Computed: true},
	}}
}

// liveHeap is heaptest.Live: what the values alive keep.
func liveHeap() uint64 { return heaptest.Live() }
