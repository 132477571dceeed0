package hubstage

import (
	"context"
	"fmt"
	"io"
	"regexp"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// This file is the seam between hubstage_snapshot (snapshot*.go) and the
// places a snapshot comes from: the hub (snaphub.go), another node
// (snappeer*.go) and the operator's own hub cache (snaplocal*.go).

// snapFile is one file of a snapshot: its path in the snapshot, its blob
// name in blobs/ (the content address) and its size.
type snapFile struct {
	Path string `json:"path"`
	Etag string `json:"etag"`
	Size int64  `json:"size"`
}

// LFS reports whether the etag is a sha256 (64 hex: an LFS file) rather
// than a git blob sha1 (40 hex: a regular file).
func (f snapFile) LFS() bool { return len(f.Etag) == 64 }

// snapListing is what a source holds at a revision: the commit and every
// file, sorted by path, before include/exclude.
type snapListing struct {
	Commit string
	Files  []snapFile
}

// snapSource is where a snapshot's bytes come from.
type snapSource interface {
	// Describe names the source for plan words: "hub https://huggingface.co",
	// `node.spark["a"] direct over 10.0.0.2:22`, `... relayed through sparkform`.
	Describe() string
	// List resolves s.Revision at the source (before include/exclude).
	// dst is the destination node (the hub source runs its one curl there).
	List(ctx context.Context, dst node.Conn, s *snapSpec) (*snapListing, error)
	// Open prepares a transfer to dst (e.g. installs a one-time key). The
	// caller always calls Close on the result, on every path.
	Open(ctx context.Context, dst node.Conn, s *snapSpec) (snapTransfer, error)
}

// snapTransfer is one opened transfer.
type snapTransfer interface {
	// NodeFetch returns the argv the receiver runs ON the destination, with
	// three more arguments appended: "ETAG OFFSET PATH" (PATH is the file's
	// path in the snapshot: the hub's resolve URL needs it; others may
	// ignore it). Its stdout must be the blob's bytes from OFFSET to the
	// end; a non-zero exit or a short stream is retried (resumed) by the
	// receiver. stdin, when not nil, is given to every run on its stdin
	// (secrets travel there, never in argv: the hub source puts its curl
	// config with the token there); it must be one line with no NUL.
	// ok=false when the bytes must be streamed through sparkform (relay,
	// push): the resource then calls Stream.
	NodeFetch() (argv []string, stdin []byte, ok bool)
	// Stream returns f's bytes from offset (counted in Relayed).
	Stream(ctx context.Context, f snapFile, offset int64) (io.ReadCloser, error)
	// Relayed is how many bytes passed through this process so far.
	Relayed() int64
	// Close undoes what Open did; idempotent; runs on every failure path.
	Close(ctx context.Context) error
}

// snapBatcher is implemented by a transfer that fetches many small
// blobs in one run on the destination (the hub: one curl -Z, its
// connections reused; a fork per file is what makes 1,000 small files
// slow). The receiver runs argv in the folder the blobs go to, with stdin
// = the NodeFetch stdin line, then one "ETAG<TAB>URLPATH" line per blob;
// it writes each blob as ./ETAG, resuming a file already there. kind is
// "files". Its exit status is not looked at: the receiver checks each
// file's size and content address and fetches what is missing one by one.
type snapBatcher interface {
	NodeBatch() (argv []string, kind string, ok bool)
}

// snapHelperFetcher is implemented by a transfer the node helper can do
// itself (the hub: internal/nodehelper's hubfetch, over HTTP): the
// arguments of `sparkform-node hubfetch BLOBS INBOX PARALLEL` that follow
// (nil: none). The helper reads the NodeFetch stdin line (the secret) and
// the job lines on its stdin and prints the receiver's job-loop lines; a
// node without the helper runs NodeFetch's argv per blob as before.
type snapHelperFetcher interface {
	HelperFetch() []string
}

// snapTarBatcher is the other batch form (the peer source): argv reads
// the etags on stdin, one a line, and writes a tar of those blobs, each
// entry named by its etag, which the receiver extracts (kind "tar").
type snapTarBatcher interface {
	NodeFetchBatch() (argv []string, ok bool)
}

// snapStreamBatcher is implemented by a transfer that streams many blobs
// in one request (the relay: one command on the source node): the bytes
// of each of files from its offset, exactly Size-offset bytes each, one
// after the other (counted in Relayed). The caller closes it.
type snapStreamBatcher interface {
	StreamMany(ctx context.Context, files []snapFile, offsets []int64) (io.ReadCloser, error)
}

// batchOf is the batch form tr offers: kind "" when none.
func batchOf(tr snapTransfer) (argv []string, kind string) {
	if b, ok := tr.(snapBatcher); ok {
		if argv, kind, ok := b.NodeBatch(); ok {
			return argv, kind
		}
	}
	if b, ok := tr.(snapTarBatcher); ok {
		if argv, ok := b.NodeFetchBatch(); ok {
			return argv, "tar"
		}
	}
	return nil, ""
}

// snapEnv is what a source may use to reach nodes other than the
// destination (the source node, for H3).
type snapEnv struct {
	// conn reaches a node (the provider's pool).
	conn func(ctx context.Context, n sdk.Node) (node.Conn, error)
	// dst is the destination node.
	dst sdk.Node
	// getenv reads the operator's environment (the plugin's; tests swap it).
	getenv func(string) string
}

// Constructors of the sources implemented in other files: snappeer*.go and
// snaplocal*.go set them in an init function. nil means not built in.
var (
	// newNodeSource: source_node set (s.SourceNode is the raw node value).
	newNodeSource func(env *snapEnv, s *snapSpec) (snapSource, error)
	// newLocalSource: source_local_dir set.
	newLocalSource func(env *snapEnv, s *snapSpec) (snapSource, error)
)

// sourceOf picks the source s names: source_node, source_local_dir, else
// the hub.
func sourceOf(env *snapEnv, s *snapSpec) (snapSource, error) {
	switch {
	case !s.SourceNode.IsNull():
		if newNodeSource == nil {
			return nil, fmt.Errorf("%w: source_node is not supported by this build", ErrBadConfig)
		}
		return newNodeSource(env, s)
	case s.SourceLocalDir != "":
		if newLocalSource == nil {
			return nil, fmt.Errorf("%w: source_local_dir is not supported by this build", ErrBadConfig)
		}
		return newLocalSource(env, s)
	}
	return newHubSource(env, s)
}

// snapSpec is the configuration of one hubstage_snapshot instance, with
// defaults applied and checked.
type snapSpec struct {
	HubDir   string
	RepoID   string
	RepoType string // "model" or "dataset"
	Revision string // a ref name or a 40-hex commit
	Include  []string
	Exclude  []string
	Verify   string // "size" or "full"
	Parallel int
	KeepFree int64

	// Hub source.
	Endpoint string // "" = the plugin's HF_ENDPOINT, else https://huggingface.co
	TokenEnv string // the NAME of the operator's variable holding the token

	// Node source (H3): the raw node value (cty.NullVal when unset).
	SourceNode    cty.Value
	SourceHubDir  string // default HubDir
	SourceAddress string // default the source node's host
	Transfer      string // "direct" or "relay"

	// Local source (H3).
	SourceLocalDir string

	include, exclude []*regexp.Regexp
}

// repoDir is the repo's folder name in the hub: models--ORG--NAME.
func (s *snapSpec) repoDir() string {
	return s.RepoType + "s--" + repoFlat(s.RepoID)
}

// selected reports whether rel passes include and exclude.
func (s *snapSpec) selected(rel string) bool { return globsPass(s.include, s.exclude, rel) }
