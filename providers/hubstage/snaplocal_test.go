package hubstage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
)

// TestLocalPush: source_local_dir lists the operator's own cache in
// process (~ expanded) and streams each blob from any offset, counting
// every byte as passing through this machine.
func TestLocalPush(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	h := makePeerHub(t, filepath.Join(home, ".cache", "huggingface"), peerFiles)
	s := &snapSpec{HubDir: "/srv/hub", RepoID: "org/model", RepoType: "model", Revision: "main", SourceLocalDir: "~/.cache/huggingface/hub"}
	src, err := newLocalSourceOf(s)
	must(t, err)
	if d := src.Describe(); !strings.Contains(d, h.dir) || !strings.Contains(d, "through sparkform") {
		t.Errorf("Describe() = %q", d)
	}
	ctx := context.Background()
	l, err := src.List(ctx, nil, s)
	must(t, err)
	if l.Commit != h.commit || len(l.Files) != len(peerFiles) {
		t.Fatalf("listing: %s %d files", l.Commit, len(l.Files))
	}
	tr, err := src.Open(ctx, nil, s)
	must(t, err)
	defer tr.Close(ctx)
	if _, _, ok := tr.NodeFetch(); ok {
		t.Fatal("a push offers a node fetch")
	}
	var want int64
	for _, f := range l.Files {
		if f.Etag != h.etags[f.Path] {
			t.Errorf("%s: etag %s, want %s", f.Path, f.Etag, h.etags[f.Path])
		}
		off := f.Size / 2
		rc, err := tr.Stream(ctx, f, off)
		must(t, err)
		got, err := io.ReadAll(rc)
		must(t, err)
		must(t, rc.Close())
		if !bytes.Equal(got, h.files[f.Path][off:]) {
			t.Errorf("%s from %d: bytes differ", f.Path, off)
		}
		want += f.Size - off
	}
	if n := tr.Relayed(); n != want {
		t.Errorf("Relayed() = %d, want %d", n, want)
	}
	if _, err := tr.Stream(ctx, snapFile{Path: "x", Etag: "../refs/main"}, 0); err == nil {
		t.Error("Stream took a path for an etag")
	}
	for _, bad := range []string{"relative/hub", "~user/hub"} {
		if _, err := newLocalSourceOf(&snapSpec{RepoID: "org/model", RepoType: "model", SourceLocalDir: bad}); !errors.Is(err, ErrBadConfig) {
			t.Errorf("source_local_dir %q: %v, want ErrBadConfig", bad, err)
		}
	}
}

// TestListingRules: the same cache layouts give the same listing, or the
// same error naming the file, whether listed on a node (one remote
// command, here over the local transport) or in process (the push
// source).
func TestListingRules(t *testing.T) {
	commit := commitOf("rules")
	other := commitOf("other")
	for _, tc := range []struct {
		name  string
		rev   string
		build func(t *testing.T, repo string)
		want  error
		files int
	}{
		{"nested files and a shared blob store", "main", func(t *testing.T, repo string) {}, nil, 3},
		{"a commit as revision", commit, func(t *testing.T, repo string) {}, nil, 3},
		{"no repository", "main", func(t *testing.T, repo string) { must(t, os.RemoveAll(repo)) }, ErrNoRepo, 0},
		{"no ref", "refs/pr/1", func(t *testing.T, repo string) {}, ErrNoRef, 0},
		{"a ref that is not a commit", "main", func(t *testing.T, repo string) {
			must(t, os.WriteFile(filepath.Join(repo, "refs", "main"), []byte("../../../etc"), 0o644))
		}, ErrBadRef, 0},
		{"no snapshot", other, func(t *testing.T, repo string) {}, ErrNoSnapshot, 0},
		{"an empty snapshot", other, func(t *testing.T, repo string) {
			must(t, os.MkdirAll(filepath.Join(repo, "snapshots", other), 0o755))
		}, ErrNoSnapshot, 0},
		{"a regular file in the snapshot", "main", func(t *testing.T, repo string) {
			must(t, os.WriteFile(filepath.Join(repo, "snapshots", commit, "plain.txt"), []byte("x"), 0o644))
		}, ErrNotRegular, 0},
		{"a link out of blobs", "main", func(t *testing.T, repo string) {
			must(t, os.Symlink("../../refs/main", filepath.Join(repo, "snapshots", commit, "ref")))
		}, ErrEscapesHub, 0},
		{"an absolute link", "main", func(t *testing.T, repo string) {
			must(t, os.Symlink(filepath.Join(repo, "blobs", sum("a")), filepath.Join(repo, "snapshots", commit, "abs")))
		}, ErrEscapesHub, 0},
		{"a dangling link", "main", func(t *testing.T, repo string) {
			must(t, os.Symlink("../../blobs/"+sum("gone"), filepath.Join(repo, "snapshots", commit, "gone")))
		}, ErrDangling, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHub(t, t.TempDir())
			repo := h.repo("model", "org/model")
			h.snapshot(repo, commit, map[string]string{"config.json": "{}", "sub/dir/w.bin": "weights"}, false)
			h.snapshot(repo, commit, map[string]string{"shared.bin": "shared"}, true)
			h.ref(repo, "main", commit)
			tc.build(t, repo)
			nl, nerr := listNodeHub(context.Background(), node.NewLocal("node.local"), false, repo, tc.rev, "node.local")
			ll, lerr := listLocalHub(repo, tc.rev, "this machine")
			for _, r := range []struct {
				where string
				l     *snapListing
				err   error
			}{{"node", nl, nerr}, {"local", ll, lerr}} {
				if tc.want != nil {
					if !errors.Is(r.err, tc.want) {
						t.Errorf("%s listing: %v, want %v", r.where, r.err, tc.want)
					}
					t.Logf("%s: %v", r.where, r.err)
					continue
				}
				if r.err != nil {
					t.Fatalf("%s listing: %v", r.where, r.err)
				}
				if r.l.Commit != commit || len(r.l.Files) != tc.files {
					t.Fatalf("%s listing: %+v", r.where, r.l)
				}
			}
			if tc.want == nil {
				if !equalListings(nl, ll) {
					t.Errorf("node and local listings differ:\n%+v\n%+v", nl, ll)
				}
				for _, f := range nl.Files {
					if f.Path == "sub/dir/w.bin" && (f.Etag != sum("weights") || f.Size != 7) {
						t.Errorf("nested file: %+v", f)
					}
				}
			}
		})
	}
}

func equalListings(a, b *snapListing) bool {
	if a.Commit != b.Commit || len(a.Files) != len(b.Files) {
		return false
	}
	for i := range a.Files {
		if a.Files[i] != b.Files[i] {
			return false
		}
	}
	return true
}
