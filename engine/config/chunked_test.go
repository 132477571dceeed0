package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// generated is a configuration of n single-instance blocks in chains of
// 10 (bench/run.sh -b), with the constructs a split must not cut: a
// heredoc and a comment whose lines look like block ends and starts.
func generated(n int) string {
	var sb strings.Builder
	sb.WriteString("node \"local\" {\n  transport = \"local\"\n}\n\nlocals {\n  doc = <<EOT\n}\nresource \"x\" \"y\" {\nEOT\n}\n/*\n}\nresource \"a\" \"b\" {\n*/\n")
	for c := 0; c < n/10; c++ {
		fmt.Fprintf(&sb, "\nresource \"sparkform_data\" \"c%d_0\" {\n  node  = node.local\n  input = \"seed-%d\"\n}\n", c, c)
		for i := 1; i < 10; i++ {
			fmt.Fprintf(&sb, "\nresource \"sparkform_data\" \"c%d_%d\" {\n  node  = node.local\n  input = sparkform_data.c%d_%d.id\n}\n", c, i, c, i-1)
		}
	}
	return sb.String()
}

// TestParseChunkedSameAsWhole: a large file parsed in chunks gives the
// body the whole-file parse gives, range for range.
func TestParseChunkedSameAsWhole(t *testing.T) {
	src := []byte(generated(2000))
	whole, diags := hclsyntax.ParseConfig(src, "main.sf.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, size := range []int{64, 1000, 32 << 10} {
		old := chunkBytes
		chunkBytes = size
		chunked := parseChunked(src, "main.sf.hcl")
		chunkBytes = old
		if chunked == nil {
			t.Fatalf("chunks of %d bytes: the file was not split", size)
		}
		if !reflect.DeepEqual(whole.Body, chunked.Body) {
			t.Fatalf("chunks of %d bytes: the body differs from the whole-file parse", size)
		}
		if off, w, c := sameNav(whole, chunked); off >= 0 {
			t.Fatalf("chunks of %d bytes: context at %d is %q, want %q", size, off, c, w)
		}
	}
}

// TestParseChunkedAllocatesLess: a large file parsed in chunks allocates
// at most 70% of what one whole-file parse does. hclsyntax lexes a file
// into one token slice that, once large, grows by a quarter at a time: at
// 10,000 blocks the lexer allocated ~120 MB for ~30 MB of tokens. Chunks
// of ~1 KB keep each slice small (doubling), ~35% less in all.
func TestParseChunkedAllocatesLess(t *testing.T) {
	src := []byte(generated(5000))
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	whole := allocated(func() { hclsyntax.ParseConfig(src, "main.sf.hcl", hcl.InitialPos) })
	chunked := allocated(func() {
		if _, diags := parseConfig(src, "main.sf.hcl"); diags.HasErrors() {
			t.Fatal(diags)
		}
	})
	t.Logf("5,000 blocks: whole-file parse %.1f MB, in chunks %.1f MB", float64(whole)/1e6, float64(chunked)/1e6)
	if float64(chunked) > 0.7*float64(whole) {
		t.Errorf("parsing in chunks allocates %.1f MB, want <= 70%% of the whole-file parse's %.1f MB", float64(chunked)/1e6, float64(whole)/1e6)
	}
}

// TestLoadAllocationLinear: loading 10N blocks allocates at most 10.5x
// what N blocks do.
func TestLoadAllocationLinear(t *testing.T) {
	var bytes [2]uint64
	for i, n := range []int{1000, 10000} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main"+FileSuffix), []byte(generated(n)), 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, diags := LoadDir(dir); diags.HasErrors() {
			t.Fatal(diags)
		}
		runtime.ReadMemStats(&after)
		bytes[i] = after.TotalAlloc - before.TotalAlloc
	}
	ratio := float64(bytes[1]) / float64(bytes[0])
	t.Logf("1,000 -> 10,000 blocks: %.1f MB -> %.1f MB allocated, %.2fx", float64(bytes[0])/1e6, float64(bytes[1])/1e6, ratio)
	if ratio > 10.5 {
		t.Errorf("loading allocates %.2fx for 10x the blocks, want <= 10.5x", ratio)
	}
}

// FuzzParseChunked: whenever parseChunked accepts a text (split in chunks
// of a few bytes, so that small inputs split too), the whole-file parse
// has no diagnostics and the same body, range for range.
func FuzzParseChunked(f *testing.F) {
	f.Add([]byte(generated(20)))
	f.Add([]byte("a = 1\n}\nb = 2\n"))
	f.Add([]byte("x {\n}\ny {\n}\n"))
	f.Add([]byte("x {\n  s = <<EOT\n}\nz {\nEOT\n}\n"))
	f.Add([]byte("a = {\n}\nb = \"${\n}\n\"\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		old := chunkBytes
		chunkBytes = 8
		defer func() { chunkBytes = old }()
		chunked := parseChunked(src, "f.sf.hcl")
		if chunked == nil {
			return
		}
		whole, diags := hclsyntax.ParseConfig(src, "f.sf.hcl", hcl.InitialPos)
		if len(diags) > 0 {
			t.Fatalf("parseChunked accepted a text the whole parse reports: %v", diags)
		}
		if !reflect.DeepEqual(whole.Body, chunked.Body) {
			t.Fatalf("parseChunked's body differs from the whole-file parse")
		}
		if off, w, c := sameNav(whole, chunked); off >= 0 {
			t.Fatalf("context at %d is %q, want %q", off, c, w)
		}
	})
}

// sameNav compares two files' navigation (context string and definition
// range) at every offset: the first that differs and both answers, or -1.
func sameNav(whole, chunked *hcl.File) (int, string, string) {
	type nav interface {
		ContextString(int) string
		ContextDefRange(int) hcl.Range
	}
	w, c := whole.Nav.(nav), chunked.Nav.(nav)
	// Every offset of a small file; a large one in steps that fall on
	// every line of its blocks (hclsyntax's own navigation is linear).
	step := 1
	if len(whole.Bytes) > 8<<10 {
		step = 29
	}
	for off := 0; off <= len(whole.Bytes); off += step {
		ws, cs := w.ContextString(off), c.ContextString(off)
		wr, cr := w.ContextDefRange(off), c.ContextDefRange(off)
		if ws != cs || wr != cr {
			return off, fmt.Sprintf("%s %v", ws, wr), fmt.Sprintf("%s %v", cs, cr)
		}
	}
	return -1, "", ""
}

// BenchmarkLoadBlocks: loading 10,000 single-instance blocks (one file).
func BenchmarkLoadBlocks(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main"+FileSuffix), []byte(generated(10000)), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := LoadDir(dir); diags.HasErrors() {
			b.Fatal(diags)
		}
	}
}
