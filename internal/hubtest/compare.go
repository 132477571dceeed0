package hubtest

import (
	"context"
	"crypto/sha1" //nolint:gosec // git blob ids
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/hubtest/hfref"
)

// entry is what DiffTrees compares for one path.
type entry struct {
	kind   string // "dir", "link", "file", "other"
	target string // link target, as written (not resolved)
	size   int64
	sha256 string
}

func (e entry) String() string {
	switch e.kind {
	case "link":
		return "link -> " + e.target
	case "file":
		return fmt.Sprintf("file %d bytes sha256 %s", e.size, e.sha256)
	default:
		return e.kind
	}
}

func scanTree(root string) (map[string]entry, error) {
	out := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = entry{kind: "link", target: t}
		case d.IsDir():
			out[rel] = entry{kind: "dir"}
		case d.Type().IsRegular():
			sum, n, err := hashFile(p, sha256.New(), "")
			if err != nil {
				return err
			}
			out[rel] = entry{kind: "file", size: n, sha256: sum}
		default:
			out[rel] = entry{kind: "other"}
		}
		return nil
	})
	return out, err
}

// hashFile streams p through h (after prefix) and returns the hex sum and size.
func hashFile(p string, h interface {
	io.Writer
	Sum([]byte) []byte
}, prefix string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	io.WriteString(h, prefix) //nolint:errcheck // hashes never fail
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// DiffTrees compares cacheA/repoDir with cacheB/repoDir (repoDir such as
// "models--org--name") and returns one line per difference: a path present
// on one side only, a different kind, link target (as written, so a link
// that resolves to the same bytes by another route is still a difference),
// size or sha256 of a regular file. Empty means identical.
func DiffTrees(cacheA, cacheB, repoDir string) ([]string, error) {
	a, err := scanTree(filepath.Join(cacheA, repoDir))
	if err != nil {
		return nil, err
	}
	b, err := scanTree(filepath.Join(cacheB, repoDir))
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var diffs []string
	for _, k := range sorted {
		ea, okA := a[k]
		eb, okB := b[k]
		switch {
		case !okA:
			diffs = append(diffs, fmt.Sprintf("%s: only in B (%s)", k, eb))
		case !okB:
			diffs = append(diffs, fmt.Sprintf("%s: only in A (%s)", k, ea))
		case ea != eb:
			diffs = append(diffs, fmt.Sprintf("%s: A has %s, B has %s", k, ea, eb))
		}
	}
	return diffs, nil
}

// CompareTrees fails t unless cacheA/repoDir and cacheB/repoDir hold the
// same paths, link targets and blob bytes (see DiffTrees).
func CompareTrees(t testing.TB, cacheA, cacheB, repoDir string) {
	t.Helper()
	diffs, err := DiffTrees(cacheA, cacheB, repoDir)
	if err != nil {
		t.Fatalf("CompareTrees %s: %v", repoDir, err)
	}
	for _, d := range diffs {
		t.Errorf("CompareTrees %s: %s", repoDir, d)
	}
}

// LayoutProblems checks hubDir against huggingface_hub's cache rules for the
// commit rev names in repo, restricted to paths (all files when empty):
// snapshots/<commit>/<path> is a symlink whose target is exactly
// "../"*(depth+2)+"blobs/<etag>", the blob is a regular file whose content
// hashes to its etag (sha256, or git blob sha1 for 40-hex etags), no
// blobs/*.incomplete is left, and refs/<rev> holds the commit when rev is a
// ref (not a commit sha). It returns one line per problem.
func LayoutProblems(hubDir string, repo *Repo, rev string, paths ...string) ([]string, error) {
	c, ok := repo.Resolve(rev)
	if !ok {
		return nil, fmt.Errorf("hubtest: %s has no revision %q", repo.ID, rev)
	}
	root := filepath.Join(hubDir, repo.CacheDirName())
	var probs []string
	want := c.Files
	if len(paths) > 0 {
		want = nil
		for _, p := range paths {
			f := c.File(p)
			if f == nil {
				return nil, fmt.Errorf("hubtest: %s@%s has no file %q", repo.ID, rev, p)
			}
			want = append(want, f)
		}
	}
	checked := map[string]bool{}
	for _, f := range want {
		ln := filepath.Join(root, "snapshots", c.SHA, filepath.FromSlash(f.Path))
		target := strings.Repeat("../", strings.Count(f.Path, "/")+2) + "blobs/" + f.Etag
		got, err := os.Readlink(ln)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: not a symlink: %v", f.Path, err))
		} else if got != target {
			probs = append(probs, fmt.Sprintf("%s: link target %q, want %q", f.Path, got, target))
		}
		if checked[f.Etag] {
			continue
		}
		checked[f.Etag] = true
		blob := filepath.Join(root, "blobs", f.Etag)
		st, err := os.Lstat(blob)
		if err != nil || !st.Mode().IsRegular() {
			probs = append(probs, fmt.Sprintf("blobs/%s (%s): not a regular file (%v)", f.Etag, f.Path, err))
			continue
		}
		var sum string
		var n int64
		if len(f.Etag) == 40 {
			sum, n, err = hashFile(blob, sha1.New(), "blob "+strconv.FormatInt(st.Size(), 10)+"\x00") //nolint:gosec
		} else {
			sum, n, err = hashFile(blob, sha256.New(), "")
		}
		if err != nil {
			return nil, err
		}
		if sum != f.Etag || n != f.Size {
			probs = append(probs, fmt.Sprintf("blobs/%s (%s): content hashes to %s with %d bytes, want %d bytes", f.Etag, f.Path, sum, n, f.Size))
		}
	}
	if inc, _ := filepath.Glob(filepath.Join(root, "blobs", "*.incomplete")); len(inc) > 0 {
		for _, p := range inc {
			probs = append(probs, "left in flight: blobs/"+filepath.Base(p))
		}
	}
	if rev != c.SHA {
		b, err := os.ReadFile(filepath.Join(root, "refs", filepath.FromSlash(rev)))
		switch {
		case err != nil:
			probs = append(probs, fmt.Sprintf("refs/%s: %v", rev, err))
		case string(b) != c.SHA:
			probs = append(probs, fmt.Sprintf("refs/%s holds %q, want %q", rev, b, c.SHA))
		}
	}
	return probs, nil
}

// CheckLayout fails t for every problem LayoutProblems finds.
func CheckLayout(t testing.TB, hubDir string, repo *Repo, rev string, paths ...string) {
	t.Helper()
	probs, err := LayoutProblems(hubDir, repo, rev, paths...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Errorf("layout of %s@%s in %s: %s", repo.ID, rev, hubDir, p)
	}
}

// RefDownload downloads revision rev of model repo from s with the
// independent reference client (package hfref, with the server's token)
// into a fresh cache and returns that cache folder, for CompareTrees
// against a cache sparkform wrote:
//
//	hubtest.CompareTrees(t, hubDir, hubtest.RefDownload(t, s, r, rev), r.CacheDirName())
//
// globs (filepath.Match patterns on the repo path) restrict the files;
// none means all. The reference client handles models only.
func RefDownload(t testing.TB, s *Server, repo *Repo, rev string, globs ...string) string {
	t.Helper()
	if repo.typ() != "model" {
		t.Fatalf("RefDownload: the reference client handles models only, not %s %s", repo.typ(), repo.ID)
	}
	s.mu.Lock()
	tok := s.token
	s.mu.Unlock()
	cache := t.TempDir()
	c, err := hfref.NewAt(s.URL, cache, tok)
	if err != nil {
		t.Fatal(err)
	}
	org, name, ok := strings.Cut(repo.ID, "/")
	if !ok {
		t.Fatalf("RefDownload: the reference client needs an ORG/NAME id, not %q", repo.ID)
	}
	if _, err := c.EnsureSnapshot(context.Background(), hfref.ModelRef{Author: org, Repo: name}, rev, globs); err != nil {
		t.Fatalf("RefDownload %s@%s with the reference client: %v", repo.ID, rev, err)
	}
	return cache
}
