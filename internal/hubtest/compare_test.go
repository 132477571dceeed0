package hubtest

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/hubtest/hfref"
)

// refRepo has LFS and regular files, nested folders, a shared blob, an
// empty file and a name that needs escaping in a URL.
func refRepo() *Repo {
	return GenRepo("acme/tiny-llm", 11,
		FileSpec{Path: "config.json", Size: 700},
		FileSpec{Path: "generation_config.json", Size: 120},
		FileSpec{Path: "model-00001-of-00002.safetensors", Size: 200 << 10, LFS: true},
		FileSpec{Path: "model-00002-of-00002.safetensors", Size: 90<<10 + 1, LFS: true},
		FileSpec{Path: "tokenizer/tokenizer.json", Size: 40 << 10},
		FileSpec{Path: "tokenizer/extra/vocab.bin", Size: 70 << 10, LFS: true},
		FileSpec{Path: "original/consolidated.bin", Size: 200 << 10, LFS: true, Key: "model-00001-of-00002.safetensors"},
		FileSpec{Path: "empty.txt", Size: 0},
		FileSpec{Path: "with space & 100%.txt", Size: 33},
	)
}

// download fetches the whole snapshot of rev of model id with the
// reference client (with the server's token) into a fresh cache.
func download(t *testing.T, s *Server, id, rev string) string {
	t.Helper()
	return RefDownload(t, s, &Repo{ID: id}, rev)
}

// The reference client downloads a generated repo through the token check
// and the CDN redirect, and the result follows huggingface_hub's layout.
func TestReferenceClientDownload(t *testing.T) {
	r := refRepo()
	s := NewServer(t, r)
	s.SetToken("hf_reftoken")
	cache := download(t, s, r.ID, "main")
	CheckLayout(t, cache, r, "main")

	// Exact tree: one ref, one link per file, one blob per distinct etag.
	root := filepath.Join(cache, r.CacheDirName())
	var got []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		got = append(got, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"refs/main"}
	etags := map[string]bool{}
	for _, f := range r.Main().Files {
		want = append(want, "snapshots/"+r.Main().SHA+"/"+f.Path)
		etags[f.Etag] = true
	}
	for e := range etags {
		want = append(want, "blobs/"+e)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("cache files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.Requests(EndpointCDN) == 0 {
		t.Error("no request reached the CDN: the LFS redirect was not followed")
	}
	// Every path's bytes were served (this client fetches a shared blob once
	// per path that links to it).
	for _, f := range r.Main().Files {
		if f.Size > 0 && s.Bytes(f.Path) < f.Size {
			t.Errorf("%s: %d bytes served, want at least %d", f.Path, s.Bytes(f.Path), f.Size)
		}
	}

	// A wrong token is refused.
	c, err := hfref.NewAt(s.URL, t.TempDir(), "hf_wrong")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnsureSnapshot(context.Background(), hfref.ModelRef{Author: "acme", Repo: "tiny-llm"}, "main", nil); err == nil {
		t.Error("a wrong token downloaded the snapshot")
	}
}

// A pinned commit writes no ref; a PR ref writes refs/refs/pr/N.
func TestReferenceClientRevisions(t *testing.T) {
	r := refRepo()
	pr := r.AddCommit("refs/pr/2", FileSpec{Path: "config.json", Size: 701}, FileSpec{Path: "a/b/c.bin", Size: 5000, LFS: true})
	s := NewServer(t, r)
	cache := download(t, s, r.ID, r.Main().SHA)
	CheckLayout(t, cache, r, r.Main().SHA)
	if _, err := os.Stat(filepath.Join(cache, r.CacheDirName(), "refs", r.Main().SHA)); err == nil {
		t.Error("a pinned commit wrote refs/<commit>")
	}
	cache = download(t, s, r.ID, "refs/pr/2")
	CheckLayout(t, cache, r, "refs/pr/2")
	if b, err := os.ReadFile(filepath.Join(cache, r.CacheDirName(), "refs", "refs", "pr", "2")); err != nil || string(b) != pr.SHA {
		t.Errorf("refs/refs/pr/2: %q %v, want %s", b, err, pr.SHA)
	}
}

// CompareTrees passes on two identical downloads and catches a wrong link
// target, a wrong byte, a missing and an extra file; CheckLayout catches the
// same and a blob left in flight.
func TestCompareTreesCatchesDifferences(t *testing.T) {
	r := refRepo()
	s := NewServer(t, r)
	a := download(t, s, r.ID, "main")
	dir := r.CacheDirName()
	snap := filepath.Join(dir, "snapshots", r.Main().SHA)
	lfs := r.Main().File("model-00002-of-00002.safetensors")
	nested := r.Main().File("tokenizer/extra/vocab.bin")

	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T, cache string)
		want   string // in DiffTrees output
		layout string // in LayoutProblems output; "" = layout still valid
	}{
		{"identical", func(*testing.T, string) {}, "", ""},
		{"absolute link", func(t *testing.T, c string) {
			relink(t, filepath.Join(c, snap, nested.Path), filepath.Join(c, dir, "blobs", nested.Etag))
		}, "tokenizer/extra/vocab.bin: A has link -> ../../../../blobs/", "link target"},
		{"link to another blob", func(t *testing.T, c string) {
			relink(t, filepath.Join(c, snap, lfs.Path), "../../blobs/"+r.Main().File("config.json").Etag)
		}, "model-00002-of-00002.safetensors: A has link -> ../../blobs/" + lfs.Etag, "link target"},
		{"wrong byte", func(t *testing.T, c string) {
			flipByte(t, filepath.Join(c, dir, "blobs", lfs.Etag), lfs.Size/2)
		}, "blobs/" + lfs.Etag + ": A has file", "content hashes to"},
		{"wrong byte in a regular blob", func(t *testing.T, c string) {
			flipByte(t, filepath.Join(c, dir, "blobs", r.Main().File("config.json").Etag), 0)
		}, "blobs/" + r.Main().File("config.json").Etag + ": A has file", "content hashes to"},
		{"missing link", func(t *testing.T, c string) {
			if err := os.Remove(filepath.Join(c, snap, "empty.txt")); err != nil {
				t.Fatal(err)
			}
		}, "empty.txt: only in A", "empty.txt: not a symlink"},
		{"left in flight", func(t *testing.T, c string) {
			if err := os.WriteFile(filepath.Join(c, dir, "blobs", lfs.Etag+".incomplete"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, lfs.Etag + ".incomplete: only in B", "left in flight"},
		{"ref moved", func(t *testing.T, c string) {
			if err := os.WriteFile(filepath.Join(c, dir, "refs", "main"), []byte(strings.Repeat("0", 40)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "refs/main: A has file", "refs/main holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := download(t, s, r.ID, "main")
			tc.mutate(t, b)
			diffs, err := DiffTrees(a, b, dir)
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(diffs, "\n")
			if tc.want == "" && len(diffs) > 0 {
				t.Errorf("identical downloads differ:\n%s", joined)
			}
			if tc.want != "" && !strings.Contains(joined, tc.want) {
				t.Errorf("DiffTrees missed the change; want %q in:\n%s", tc.want, joined)
			}
			// CompareTrees reports through t: run it on a recorder.
			rec := &recorder{TB: t}
			CompareTrees(rec, a, b, dir)
			if (len(rec.errs) > 0) != (tc.want != "") {
				t.Errorf("CompareTrees reported %d errors, want some: %v", len(rec.errs), tc.want != "")
			}
			probs, err := LayoutProblems(b, r, "main")
			if err != nil {
				t.Fatal(err)
			}
			pj := strings.Join(probs, "\n")
			if (tc.layout == "") != (len(probs) == 0) || !strings.Contains(pj, tc.layout) {
				t.Errorf("LayoutProblems = %q, want one containing %q", pj, tc.layout)
			}
		})
	}
}

type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, format)
}

func relink(t *testing.T, link, target string) {
	t.Helper()
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, p string, off int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
