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
	"time"

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

// stallTransfer is a push whose stream stops after `after` bytes of the
// blob big and cancels the apply (sparkform killed mid-blob).
type stallTransfer struct {
	*localTransfer
	big    string
	after  int64
	cancel context.CancelFunc
	// landed is the size of the big blob's .incomplete on the node: the
	// cut waits (up to 10 s) until the bytes before it are there, not a
	// fixed time a loaded machine may not meet.
	landed func() int64
}

func (t *stallTransfer) Stream(ctx context.Context, f snapFile, off int64) (io.ReadCloser, error) {
	rc, err := t.localTransfer.Stream(ctx, f, off)
	if err != nil || f.Etag != t.big {
		return rc, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, t.after), stallReader{ctx: ctx, cancel: t.cancel, after: t.after, landed: t.landed}), rc}, nil
}

type stallReader struct {
	ctx    context.Context
	cancel context.CancelFunc
	after  int64
	landed func() int64
}

func (s stallReader) Read([]byte) (int, error) {
	// The bytes before reach the node.
	for deadline := time.Now().Add(10 * time.Second); s.landed() < s.after && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	s.cancel()
	<-s.ctx.Done()
	return 0, s.ctx.Err()
}

// TestPushBatchInterrupted: a push cancelled in the middle of a big blob
// of a batch leaves no blob under blobs/ that is not whole and verified,
// no receiver running, the blob's bytes so far in its .incomplete; the
// next push sends only what is missing (counted) and the tree is whole.
func TestPushBatchInterrupted(t *testing.T) {
	b := startPeerBed(t, map[string]int{"x": 1})
	home := t.TempDir()
	files := map[string]int{"config.json": 321, "big.safetensors": 6 << 20, "c.txt": 10, "d.bin": 2 << 20}
	h := makePeerHub(t, home, files)
	dHub, recs := filepath.Join(b.bed.Nodes[1].Root, "hub"), filepath.Join(b.bed.Nodes[1].Root, "records")
	must(t, os.MkdirAll(dHub, 0o755))
	must(t, os.MkdirAll(recs, 0o755))
	chownTree(t, b.bed.Nodes[1].Root)
	s := &snapSpec{HubDir: dHub, RepoID: "org/model", RepoType: "model", Revision: "main", SourceLocalDir: h.dir, Parallel: 1, Verify: "size"}
	src, err := newLocalSourceOf(s)
	must(t, err)
	r := &snapshot{conn: b.pool.Get, recDir: recs}
	bigEtag := h.etags["big.safetensors"]
	run := func(ctx context.Context, tr snapTransfer) (int64, error) {
		l, err := src.List(ctx, nil, s)
		must(t, err)
		obs, err := observe(ctx, b.dc, false, recs, []obsReq{{s: s, commit: l.Commit}})
		must(t, err)
		w, err := computeWork(s, l, obs[0])
		must(t, err)
		r0 := tr.Relayed()
		err = r.relay(ctx, b.dc, false, s, w, obs[0], tr, "test", jobLines(w, false), func(int64) {})
		return tr.Relayed() - r0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const after = 2<<20 + 12345
	blobs := filepath.Join(dHub, "models--org--model", "blobs")
	landed := func() int64 {
		fi, err := os.Stat(filepath.Join(blobs, bigEtag+".incomplete"))
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	if _, err := run(ctx, &stallTransfer{localTransfer: &localTransfer{l: src}, big: bigEtag, after: after, cancel: cancel, landed: landed}); err == nil {
		t.Fatal("the cancelled push succeeded")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(procsWith(dHub)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if procs := procsWith(dHub); len(procs) != 0 {
		t.Errorf("processes left on D after the cancelled push: %q", procs)
	}
	ents, err := os.ReadDir(blobs)
	must(t, err)
	var partial int64
	for _, e := range ents {
		name := e.Name()
		if etag, ok := strings.CutSuffix(name, ".incomplete"); ok {
			fi, err := e.Info()
			must(t, err)
			if etag == bigEtag {
				partial = fi.Size()
			}
			continue
		}
		data, err := os.ReadFile(filepath.Join(blobs, name))
		must(t, err)
		var p string
		for path, e := range h.etags {
			if e == name {
				p = path
			}
		}
		if p == "" || !bytes.Equal(data, h.files[p]) {
			t.Errorf("blobs/%s is visible and is not the whole blob (%d bytes)", name, len(data))
		}
	}
	if partial < after/2 || partial > after {
		t.Errorf("the big blob's .incomplete has %d bytes; want the %d sent before the cut (at least half of them written)", partial, after)
	}
	var total int64
	for _, d := range h.files {
		total += int64(len(d))
	}
	sent, err := run(context.Background(), &localTransfer{l: src})
	must(t, err)
	var present int64
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".incomplete") {
			fi, _ := e.Info()
			present += fi.Size()
		}
	}
	if want := total - present - partial; sent != want {
		t.Errorf("the next push sent %d bytes, want %d (not the %d already in the .incomplete)", sent, want, partial)
	}
	for p, e := range h.etags {
		data, err := os.ReadFile(filepath.Join(blobs, e))
		if err != nil || !bytes.Equal(data, h.files[p]) {
			t.Errorf("%s after the second push: %d bytes, %v", p, len(data), err)
		}
	}
}
