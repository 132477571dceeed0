package hubstage

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/sparkform/sparkform/providers/node"
)

// A snapshot pushed from the operator's own hub cache (source_local_dir,
// e.g. "~/.cache/huggingface/hub"): listed in process from refs/,
// snapshots/ and blobs/ there (the etag is the blob's file name), and each
// blob streamed from this machine to the destination's receiver, counted.
// It is the way to seed a first node from a laptop that already has the
// model; other nodes then copy from that node directly.

// localSource is a hub cache on this machine.
type localSource struct {
	dir  string // the hub folder, ~ expanded
	repo string // the repository folder in it
}

func init() {
	newLocalSource = func(_ *snapEnv, s *snapSpec) (snapSource, error) { return newLocalSourceOf(s) }
}

// newLocalSourceOf checks source_local_dir.
func newLocalSourceOf(s *snapSpec) (*localSource, error) {
	d := s.SourceLocalDir
	if d == "~" || strings.HasPrefix(d, "~/") {
		h, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("%w: source_local_dir %q: no home folder to expand ~ (%v); give an absolute path", ErrBadConfig, d, err)
		}
		d = filepath.Join(h, d[1:])
	}
	if !filepath.IsAbs(d) {
		return nil, fmt.Errorf("%w: source_local_dir %q: give an absolute path or one starting with ~/ on this machine, such as \"~/.cache/huggingface/hub\"", ErrBadConfig, s.SourceLocalDir)
	}
	d = filepath.Clean(d)
	return &localSource{dir: d, repo: filepath.Join(d, s.repoDir())}, nil
}

// Describe implements snapSource.
func (l *localSource) Describe() string {
	return "the local hub cache " + l.dir + " pushed through sparkform (every byte passes through this machine)"
}

// List implements snapSource: read here, nothing runs on a node.
func (l *localSource) List(_ context.Context, _ node.Conn, s *snapSpec) (*snapListing, error) {
	return listLocalHub(l.repo, s.Revision, "this machine")
}

// Open implements snapSource: nothing to prepare.
func (l *localSource) Open(context.Context, node.Conn, *snapSpec) (snapTransfer, error) {
	return &localTransfer{l: l}, nil
}

// localTransfer streams blobs from this machine.
type localTransfer struct {
	l       *localSource
	relayed atomic.Int64
}

// NodeFetch implements snapTransfer: the bytes are pushed (Stream).
func (t *localTransfer) NodeFetch() ([]string, []byte, bool) { return nil, nil, false }

// Stream implements snapTransfer: the blob file from offset, counted.
func (t *localTransfer) Stream(_ context.Context, f snapFile, offset int64) (io.ReadCloser, error) {
	if !etagRe.MatchString(f.Etag) || offset < 0 {
		return nil, fmt.Errorf("%w: blob %q offset %d", ErrBadConfig, f.Etag, offset)
	}
	p := filepath.Join(t.l.repo, "blobs", f.Etag)
	fh, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("pushing %s from this machine: %w", f.Path, err)
	}
	if _, err := fh.Seek(offset, io.SeekStart); err != nil {
		fh.Close()
		return nil, fmt.Errorf("pushing %s from this machine: %w", f.Path, err)
	}
	return &fileStream{countingReader: countingReader{r: fh, n: &t.relayed}, f: fh}, nil
}

// Relayed implements snapTransfer.
func (t *localTransfer) Relayed() int64 { return t.relayed.Load() }

// Close implements snapTransfer: nothing was set up.
func (t *localTransfer) Close(context.Context) error { return nil }

type fileStream struct {
	countingReader
	f *os.File
}

func (s *fileStream) Close() error { return s.f.Close() }
