package config

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// chunkBytes is about how much source parseChunked hands the HCL parser
// at once (a variable for the fuzz test, which splits small inputs).
var chunkBytes = 1 << 10

// parseConfig parses one native-syntax configuration file. A large file
// (a generated configuration of thousands of blocks) is parsed in chunks
// of whole top-level blocks: hclsyntax lexes a whole file into one token
// slice first, which for a 10,000-block file grows by a quarter at a time
// to ~25 MB and allocates ~120 MB on the way (5x the final size, so the
// garbage grew faster than the file). Each chunk is parsed at its place
// in the file (its ranges are the file's) and the bodies are joined.
//
// A split is only taken where the text before it parses on its own
// without a diagnostic, which holds only at a top-level boundary (an
// unclosed brace, string, heredoc or comment is an error); any diagnostic
// in any chunk, or an attribute defined in two chunks, and the whole file
// is parsed again in one piece, so errors read exactly as they always did.
func parseConfig(src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	if len(src) <= 2*chunkBytes {
		return hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	}
	if f := parseChunked(src, filename); f != nil {
		return f, nil
	}
	return hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
}

// parseChunked parses src in chunks of whole top-level blocks; nil when
// any chunk has a diagnostic or the chunks do not join.
func parseChunked(src []byte, filename string) *hcl.File {
	if len(src) == 0 {
		return nil
	}
	body := &hclsyntax.Body{Attributes: hclsyntax.Attributes{}}
	pos, start := hcl.InitialPos, hcl.Pos{}
	for len(src) > pos.Byte {
		end := splitPoint(src, pos.Byte+chunkBytes)
		f, diags := hclsyntax.ParseConfig(src[pos.Byte:end], filename, pos)
		if len(diags) > 0 {
			return nil
		}
		b, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			return nil
		}
		for name, a := range b.Attributes {
			if _, dup := body.Attributes[name]; dup {
				return nil
			}
			body.Attributes[name] = a
		}
		if pos == hcl.InitialPos {
			// The parser's blocks as they are (empty, not nil) and its
			// start (the first token's, after leading space).
			body.Blocks, start = b.Blocks, b.SrcRange.Start
		} else {
			body.Blocks = append(body.Blocks, b.Blocks...)
		}
		body.EndRange = b.EndRange
		pos = b.SrcRange.End
		if pos.Byte != end {
			return nil // the parser stopped short of the chunk's end
		}
	}
	body.SrcRange = hcl.Range{Filename: filename, Start: start, End: pos}
	return &hcl.File{Body: body, Bytes: src, Nav: newBlockNav(body.Blocks)}
}

// blockNav is a chunked file's navigation (what diagnostics use to say
// "in resource X"): each top-level block's extent, header and definition
// range, read off the blocks as hclsyntax's own navigation reads them.
// It does not keep the blocks: once the module is loaded nothing else
// needs them (~450 B each; see Module.Files).
type blockNav []navBlock

type navBlock struct {
	start, end int // byte offsets, as Block.Range
	typ        string
	labels     []string
	def        hcl.Range
}

func newBlockNav(blocks hclsyntax.Blocks) blockNav {
	nav := make(blockNav, len(blocks))
	for i, b := range blocks {
		rng := b.Range()
		nav[i] = navBlock{start: rng.Start.Byte, end: rng.End.Byte, typ: b.Type, labels: b.Labels, def: b.DefRange()}
	}
	return nav
}

// at is the block that contains offset, or nil. Blocks are in file order
// and do not overlap.
func (n blockNav) at(offset int) *navBlock {
	i := sort.Search(len(n), func(i int) bool { return n[i].end > offset })
	if i < len(n) && n[i].start <= offset {
		return &n[i]
	}
	return nil
}

func (n blockNav) ContextString(offset int) string {
	b := n.at(offset)
	if b == nil {
		return ""
	}
	if len(b.labels) == 0 {
		return b.typ
	}
	var buf strings.Builder
	buf.WriteString(b.typ)
	for _, label := range b.labels {
		fmt.Fprintf(&buf, " %q", label)
	}
	return buf.String()
}

func (n blockNav) ContextDefRange(offset int) hcl.Range {
	if b := n.at(offset); b != nil {
		return b.def
	}
	return hcl.Range{}
}

// splitPoint is the first offset at or after from that starts a line
// following a line that is just "}" (the end of a top-level block in
// formatted HCL), or len(src).
func splitPoint(src []byte, from int) int {
	for from < len(src) {
		i := bytes.Index(src[from:], []byte("\n}\n"))
		if i < 0 {
			return len(src)
		}
		from += i + 3
		if from < len(src) && src[from] != ' ' && src[from] != '\t' {
			return from
		}
	}
	return len(src)
}
