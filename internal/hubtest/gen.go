package hubtest

import (
	"crypto/sha1" //nolint:gosec // git blob ids are sha1 by definition
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// FileSpec describes one generated file of a repository revision.
type FileSpec struct {
	// Path is the file's path in the repository ("a/b/model.safetensors").
	Path string
	// Size in bytes. Content is generated on the fly, so any size is cheap in
	// memory (hashing it once at generation costs CPU time).
	Size int64
	// LFS files are addressed by sha256 (etag = 64-hex) and served through the
	// CDN redirect; the others by their git blob sha1 (etag = 40-hex).
	LFS bool
	// Key selects the content: two FileSpecs with the same Key, Size and LFS in
	// one repository share a blob. Empty means Path, so the same path and size
	// in two commits share a blob unless Key differs ("v2").
	Key string
}

// File is a generated file: its address and a way to read its bytes.
type File struct {
	Path string
	Size int64
	LFS  bool
	// Etag is the name huggingface_hub gives the blob: sha256 hex (LFS) or the
	// git blob sha1 hex (regular files).
	Etag string
	// SHA256 of the content (also for regular files, for comparisons).
	SHA256 string
	// BlobID is the git object id the API lists: the blob's sha1, or for LFS
	// the sha1 of the pointer file, as the real hub answers.
	BlobID string
	// PointerSize is the LFS pointer file's size (0 for regular files).
	PointerSize int

	seed [32]byte
}

// Commit is one revision of a repository.
type Commit struct {
	SHA   string
	Files []*File // sorted by Path
}

// File returns the file at path p, or nil.
func (c *Commit) File(p string) *File {
	i := sort.Search(len(c.Files), func(i int) bool { return c.Files[i].Path >= p })
	if i < len(c.Files) && c.Files[i].Path == p {
		return c.Files[i]
	}
	return nil
}

// TotalSize is the sum of the commit's file sizes.
func (c *Commit) TotalSize() int64 {
	var n int64
	for _, f := range c.Files {
		n += f.Size
	}
	return n
}

// Repo is a generated repository. Its refs and commits may change while a
// server serves it (SetRef, AddCommit): they are guarded by its own lock.
type Repo struct {
	// ID is "org/name" (or "name").
	ID string
	// Type is "model" (default) or "dataset"; set it before the repo is served.
	Type string

	seed    int64
	mu      sync.Mutex
	commits map[string]*Commit
	refs    map[string]string // "main", "refs/pr/1" -> commit sha
	order   []string          // commit shas in creation order
}

// GenRepo generates a model repository with one commit holding spec, with
// the ref "main" on it. Content is a function of seed and each file's Key.
// Generation hashes every byte once (in parallel); results are memoized
// process-wide, so generating the same repo again is free.
func GenRepo(id string, seed int64, spec ...FileSpec) *Repo {
	r := &Repo{ID: id, Type: "model", seed: seed, commits: map[string]*Commit{}, refs: map[string]string{}}
	r.AddCommit("main", spec...)
	return r
}

// AddCommit adds a commit holding spec (a full tree, not a diff), points ref
// at it (when ref is not empty) and returns it. Files whose Key/Size/LFS
// match an earlier commit's share its blob.
func (r *Repo) AddCommit(ref string, spec ...FileSpec) *Commit {
	files := make([]*File, len(spec))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, s := range spec {
		if s.Path == "" || strings.HasPrefix(s.Path, "/") || path.Clean(s.Path) != s.Path || s.Size < 0 {
			panic(fmt.Sprintf("hubtest: bad FileSpec %+v", s))
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			files[i] = makeFile(r.seed, s)
		}()
	}
	wg.Wait()
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for i := 1; i < len(files); i++ {
		if files[i].Path == files[i-1].Path {
			panic("hubtest: duplicate path " + files[i].Path)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h := sha1.New() //nolint:gosec
	fmt.Fprintf(h, "hubtest commit %s %d %d\n", r.ID, r.seed, len(r.order))
	for _, f := range files {
		fmt.Fprintf(h, "%s %s\n", f.Etag, f.Path)
	}
	c := &Commit{SHA: hex.EncodeToString(h.Sum(nil)), Files: files}
	r.commits[c.SHA] = c
	r.order = append(r.order, c.SHA)
	if ref != "" {
		r.refs[ref] = c.SHA
	}
	return c
}

// SetRef points ref ("main", "refs/pr/3", a tag) at commit sha; this is how a
// test moves "main" under a running client.
func (r *Repo) SetRef(ref, sha string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.commits[sha] == nil {
		panic("hubtest: SetRef to unknown commit " + sha)
	}
	r.refs[ref] = sha
}

// Resolve returns the commit a revision names: a ref or a full commit sha.
func (r *Repo) Resolve(rev string) (*Commit, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sha, ok := r.refs[rev]; ok {
		return r.commits[sha], true
	}
	c, ok := r.commits[rev]
	return c, ok
}

// Main is the commit "main" points at.
func (r *Repo) Main() *Commit {
	c, _ := r.Resolve("main")
	return c
}

// CacheDirName is the repository's folder in a huggingface_hub cache:
// "models--org--name" or "datasets--org--name".
func (r *Repo) CacheDirName() string {
	return r.typ() + "s--" + strings.ReplaceAll(r.ID, "/", "--")
}

func (r *Repo) typ() string {
	if r.Type == "" {
		return "model"
	}
	return r.Type
}

// blobByEtag finds a file of any commit with this etag.
func (r *Repo) blobByEtag(etag string) *File {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sha := range r.order {
		for _, f := range r.commits[sha].Files {
			if f.Etag == etag {
				return f
			}
		}
	}
	return nil
}

// --- content ---------------------------------------------------------------

// blockMax is the size of the random table a file's content is built from:
// byte o of the file is table[(o%B + rot(o/B)) % B], with B = min(size,
// blockMax). Random access (Range) is O(1) and no file is held in memory.
const blockMax = 64 << 10

type hashKey struct {
	seed [32]byte
	size int64
	lfs  bool
}

type hashes struct{ etag, sha256, blobID string }

var hashMemo sync.Map // hashKey -> hashes

func makeFile(seed int64, s FileSpec) *File {
	key := s.Key
	if key == "" {
		key = s.Path
	}
	f := &File{Path: s.Path, Size: s.Size, LFS: s.LFS}
	f.seed = sha256.Sum256([]byte(strconv.FormatInt(seed, 10) + "\x00" + key))
	hk := hashKey{f.seed, s.Size, s.LFS}
	if v, ok := hashMemo.Load(hk); ok {
		h := v.(hashes)
		f.Etag, f.SHA256, f.BlobID = h.etag, h.sha256, h.blobID
	} else {
		s256 := sha256.New()
		var g hash.Hash
		ws := []io.Writer{s256}
		if !s.LFS {
			g = sha1.New() //nolint:gosec
			fmt.Fprintf(g, "blob %d\x00", s.Size)
			ws = append(ws, g)
		}
		if _, err := f.WriteTo(io.MultiWriter(ws...)); err != nil {
			panic(err)
		}
		h := hashes{sha256: hex.EncodeToString(s256.Sum(nil))}
		if s.LFS {
			h.etag = h.sha256
			p := f.pointer(h.sha256)
			h.blobID = GitBlobSHA1([]byte(p))
		} else {
			h.etag = hex.EncodeToString(g.Sum(nil))
			h.blobID = h.etag
		}
		hashMemo.Store(hk, h)
		f.Etag, f.SHA256, f.BlobID = h.etag, h.sha256, h.blobID
	}
	if s.LFS {
		f.PointerSize = len(f.pointer(f.Etag))
	}
	return f
}

func (f *File) pointer(sha string) string {
	return "version https://git-lfs.github.com/spec/v1\noid sha256:" + sha + "\nsize " + strconv.FormatInt(f.Size, 10) + "\n"
}

// GitBlobSHA1 is git's object id of a blob with content b (hex).
func GitBlobSHA1(b []byte) string {
	h := sha1.New() //nolint:gosec
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func (f *File) table() []byte {
	n := f.Size
	if n > blockMax {
		n = blockMax
	}
	t := make([]byte, n)
	rng := rand.NewChaCha8(f.seed)
	_, _ = rng.Read(t)
	return t
}

func rot(block int64, n int) int {
	return int(uint64(block) * 0x9E3779B97F4A7C15 >> 17 % uint64(n))
}

// fill writes the content from offset off into p (off+len(p) <= Size).
func (f *File) fill(t []byte, p []byte, off int64) {
	n := len(t)
	for len(p) > 0 {
		blk, j := off/int64(n), int(off%int64(n))
		r := rot(blk, n)
		start := (j + r) % n
		// One block is t[r:]+t[:r]; copy from start to the block's end.
		end := n - j // bytes left in this block
		if end > len(p) {
			end = len(p)
		}
		c := copy(p[:end], t[start:])
		if c < end {
			copy(p[c:end], t[:end-c])
		}
		p = p[end:]
		off += int64(end)
	}
}

// ReaderAt returns an io.ReaderAt over the file's content; it holds one
// table of at most 64 KiB.
func (f *File) ReaderAt() io.ReaderAt { return &fileReader{f: f, t: f.table()} }

// Open returns an io.ReadSeeker over the content (for http.ServeContent).
func (f *File) Open() io.ReadSeeker {
	return io.NewSectionReader(f.ReaderAt(), 0, f.Size)
}

// WriteTo writes the whole content to w.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, io.NewSectionReader(f.ReaderAt(), 0, f.Size))
}

// Bytes returns the whole content; for small files in tests only.
func (f *File) Bytes() []byte {
	b := make([]byte, f.Size)
	_, _ = f.ReaderAt().ReadAt(b, 0)
	return b
}

type fileReader struct {
	f *File
	t []byte
}

func (r *fileReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("hubtest: negative offset")
	}
	if off >= r.f.Size {
		return 0, io.EOF
	}
	var err error
	if rest := r.f.Size - off; int64(len(p)) > rest {
		p = p[:rest]
		err = io.EOF
	}
	r.f.fill(r.t, p, off)
	return len(p), err
}
