package config

import (
	"fmt"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/sparkform/sparkform/providers/sdk"
)

// A resource block's syntax tree is ~2 KB (the body, its attributes, the
// expressions and every one's ranges): 20 MB of a 10,000-block
// configuration, kept for the whole run and scanned by every collection.
// A run that reads no body (a destroy) lets them go (ReleaseBody); a plan
// or apply lets go all but what each block's decoder evaluates
// (ReleaseBodyFor). Whatever asks for a body afterwards (a diagnostic
// naming an attribute, a later walk on the same engine) gets it parsed
// again from the file's bytes, which Module.Files keeps anyway for
// diagnostics.

// bodySource is where a root resource block's body is parsed again from.
type bodySource struct {
	mu       sync.Mutex
	src      []byte // the file's, from the block's first byte to its last
	filename string
	start    hcl.Pos // where src starts in the file
}

// newBodySource is b's source in f, or nil when b's body cannot be parsed
// again on its own (not native syntax, or no bytes kept).
func newBodySource(f *hcl.File, b *hcl.Block) *bodySource {
	body, ok := b.Body.(*hclsyntax.Body)
	if !ok || f == nil {
		return nil
	}
	start, end := b.TypeRange.Start, body.SrcRange.End.Byte
	if start.Byte < 0 || start.Byte >= end || end > len(f.Bytes) {
		return nil
	}
	return &bodySource{src: f.Bytes[start.Byte:end], filename: b.TypeRange.Filename, start: start}
}

// parse parses the block again and returns its body. The bytes parsed
// once without errors, and they do not change, so they parse the same way
// again; anything else is a bug in sparkform.
func (s *bodySource) parse() hcl.Body {
	f, diags := hclsyntax.ParseConfig(s.src, s.filename, s.start)
	if diags.HasErrors() {
		panic(fmt.Sprintf("sparkform: parsing the resource block at %s:%d again failed: %s", s.filename, s.start.Line, diags.Error()))
	}
	blocks := f.Body.(*hclsyntax.Body).Blocks
	if len(blocks) != 1 {
		panic(fmt.Sprintf("sparkform: parsing the resource block at %s:%d again gave %d blocks", s.filename, s.start.Line, len(blocks)))
	}
	return blocks[0].Body
}

// Body is the block's body: the one decoded from the file, or, after
// ReleaseBody, the same parsed again.
func (r *Resource) Body() hcl.Body {
	if r.src == nil {
		return r.body
	}
	r.src.mu.Lock()
	defer r.src.mu.Unlock()
	if r.body == nil {
		r.body = r.src.parse()
	}
	return r.body
}

// ReleaseBody lets the block's body go, for a run that reads no more of
// it; Body parses it again if asked. It returns the body let go, or nil
// when there is none or the body stays:
// a module's block (its body is shared by the module's instances), one
// the flattening rewrote in place, or one not in native syntax.
func (r *Resource) ReleaseBody() hcl.Body {
	if r.src == nil {
		return nil
	}
	r.src.mu.Lock()
	defer r.src.mu.Unlock()
	b := r.body
	r.body = nil
	return b
}

// ReleaseBodyFor lets the body go as ReleaseBody does, for walks that
// decode it with d (its decoder against the block type's schema), which
// the block keeps (KeptDecoder): on the direct path a decoder holds only
// the expressions it evaluates, so a plan or apply lets the rest of the
// tree go before its walk (~700 B per block), and the plain references
// among what stays (d's and NodeExpr) are kept short (shortRef, ~480 B
// less per generated block). It reports false, and lets nothing go, when
// d needs the body (the general path) or the body stays (see
// ReleaseBody). d must not be in use meanwhile.
func (r *Resource) ReleaseBodyFor(d *ResourceDecoder) bool {
	if r.src == nil || !d.Direct() {
		return false
	}
	r.src.mu.Lock()
	defer r.src.mu.Unlock()
	r.body, r.decoder = nil, d
	// What stays of the block is its decoder's expressions and its node
	// argument: plain references among them are kept short.
	d.shorten()
	if r.Scope == nil { // a module's is wrapped in its instance's scope
		r.NodeExpr = shorten(r.NodeExpr)
	}
	return true
}

// KeptDecoder is the decoder ReleaseBodyFor kept, when it was made
// against schema b; nil otherwise.
func (r *Resource) KeptDecoder(b *sdk.Block) *ResourceDecoder {
	if r.src == nil {
		return nil
	}
	r.src.mu.Lock()
	d := r.decoder
	r.src.mu.Unlock()
	if d == nil || d.block != b {
		return nil
	}
	return d
}

// Released reports whether the body is let go and not yet parsed again.
func (r *Resource) Released() bool {
	if r.src == nil {
		return false
	}
	r.src.mu.Lock()
	defer r.src.mu.Unlock()
	return r.body == nil
}
