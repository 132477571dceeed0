package hubtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/realpart"
)

func testRepo() *Repo {
	return GenRepo("org/model", 7,
		FileSpec{Path: "config.json", Size: 1234},
		FileSpec{Path: "model-00001-of-00002.safetensors", Size: 300 << 10, LFS: true},
		FileSpec{Path: "model-00002-of-00002.safetensors", Size: 70<<10 + 3, LFS: true},
		FileSpec{Path: "sub/dir/tokenizer.json", Size: 65536 * 3},
		FileSpec{Path: "empty.txt", Size: 0},
	)
}

// noRedirect is a client that shows 302s instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func do(t *testing.T, c *http.Client, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: body: %v", method, url, err)
	}
	return resp, b
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestGenContentDeterministicAndRandomAccess(t *testing.T) {
	a, b := testRepo(), testRepo()
	if a.Main().SHA != b.Main().SHA || len(a.Main().SHA) != 40 {
		t.Fatalf("commit ids %q %q: want the same 40-hex id", a.Main().SHA, b.Main().SHA)
	}
	for _, f := range a.Main().Files {
		whole := f.Bytes()
		if int64(len(whole)) != f.Size {
			t.Fatalf("%s: %d bytes, want %d", f.Path, len(whole), f.Size)
		}
		if f.LFS {
			if f.Etag != sha256hex(whole) {
				t.Errorf("%s: etag %s is not the sha256 of the content", f.Path, f.Etag)
			}
			if f.BlobID != GitBlobSHA1([]byte(f.pointer(f.Etag))) || f.PointerSize == 0 {
				t.Errorf("%s: blobId %s is not the pointer file's git id", f.Path, f.BlobID)
			}
		} else if f.Etag != GitBlobSHA1(whole) || f.BlobID != f.Etag {
			t.Errorf("%s: etag %s is not the git blob sha1 of the content", f.Path, f.Etag)
		}
		// Any window read alone equals the same window of the whole.
		ra := f.ReaderAt()
		for _, off := range []int64{0, 1, 4095, 65535, 65536, 65537, f.Size / 2, f.Size - 1} {
			if off < 0 || off >= f.Size {
				continue
			}
			n := min(int64(70000), f.Size-off)
			buf := make([]byte, n)
			if _, err := ra.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			if !bytes.Equal(buf, whole[off:off+n]) {
				t.Errorf("%s: ReadAt(%d, %d) differs from the stream", f.Path, off, n)
			}
		}
	}
	// Blocks of a multi-block file differ (not one block repeated).
	f := a.Main().File("model-00001-of-00002.safetensors")
	w := f.Bytes()
	if bytes.Equal(w[:blockMax], w[blockMax:2*blockMax]) {
		t.Error("the first two 64 KiB blocks are equal")
	}
}

func TestGenSharedBlobsAcrossCommits(t *testing.T) {
	r := testRepo()
	c1 := r.Main()
	c2 := r.AddCommit("main",
		FileSpec{Path: "config.json", Size: 1234},                                                 // same blob
		FileSpec{Path: "model-00001-of-00002.safetensors", Size: 300 << 10, LFS: true, Key: "v2"}, // new blob
		FileSpec{Path: "renamed.bin", Size: 70<<10 + 3, LFS: true, Key: "model-00002-of-00002.safetensors"},
	)
	if c2.SHA == c1.SHA || r.Main().SHA != c2.SHA {
		t.Fatalf("main = %s, want the new commit %s (old %s)", r.Main().SHA, c2.SHA, c1.SHA)
	}
	if c2.File("config.json").Etag != c1.File("config.json").Etag {
		t.Error("config.json: same path and size should share a blob")
	}
	if c2.File("model-00001-of-00002.safetensors").Etag == c1.File("model-00001-of-00002.safetensors").Etag {
		t.Error("Key v2 should make a new blob")
	}
	if c2.File("renamed.bin").Etag != c1.File("model-00002-of-00002.safetensors").Etag {
		t.Error("same Key should share the blob under another path")
	}
	r.SetRef("refs/pr/1", c1.SHA)
	if c, _ := r.Resolve("refs/pr/1"); c != c1 {
		t.Error("refs/pr/1 does not resolve to the first commit")
	}
}

// A 2 GiB file is generated and read without holding it: the live heap
// stays far below its size.
func TestGenLargeFileMemoryLight(t *testing.T) {
	const size = 2 << 30
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := GenRepo("org/big", 1, FileSpec{Path: "big.safetensors", Size: size, LFS: true})
	f := r.Main().File("big.safetensors")
	buf := make([]byte, 1<<20)
	if _, err := f.ReaderAt().ReadAt(buf, size-int64(len(buf))); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("generating and hashing 2 GiB allocated %d MiB in all, want < 64 MiB", grew>>20)
	}
}

type apiResp struct {
	ID       string `json:"id"`
	SHA      string `json:"sha"`
	Siblings []map[string]json.RawMessage
}

func TestServerAPI(t *testing.T) {
	r := testRepo()
	first := r.Main()
	pr := r.AddCommit("refs/pr/1", FileSpec{Path: "only-in-pr.txt", Size: 10})
	ds := GenRepo("org/data", 3, FileSpec{Path: "train/part-0.parquet", Size: 5000, LFS: true})
	ds.Type = "dataset"
	single := GenRepo("gpt2", 4, FileSpec{Path: "config.json", Size: 10})
	s := NewServer(t, r, ds, single)

	for _, tc := range []struct {
		name, path string
		status     int
		wantID     string
		wantSHA    string
		wantCode   string
		blobs      bool
	}{
		{"main", "/api/models/org/model/revision/main", 200, "org/model", first.SHA, "", false},
		{"no revision is main", "/api/models/org/model", 200, "org/model", first.SHA, "", false},
		{"blobs", "/api/models/org/model/revision/main?blobs=true", 200, "org/model", first.SHA, "", true},
		{"commit", "/api/models/org/model/revision/" + pr.SHA, 200, "org/model", pr.SHA, "", false},
		{"escaped pr ref", "/api/models/org/model/revision/refs%2Fpr%2F1", 200, "org/model", pr.SHA, "", false},
		{"raw pr ref", "/api/models/org/model/revision/refs/pr/1", 200, "org/model", pr.SHA, "", false},
		{"dataset", "/api/datasets/org/data/revision/main?blobs=true", 200, "org/data", ds.Main().SHA, "", true},
		{"single-name repo", "/api/models/gpt2/revision/main", 200, "gpt2", single.Main().SHA, "", false},
		{"dataset under models", "/api/models/org/data/revision/main", 404, "", "", "RepoNotFound", false},
		{"unknown rev", "/api/models/org/model/revision/nope", 404, "", "", "RevisionNotFound", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, http.DefaultClient, "GET", s.URL+tc.path)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if got := resp.Header.Get("X-Error-Code"); got != tc.wantCode {
				t.Errorf("X-Error-Code %q, want %q", got, tc.wantCode)
			}
			if tc.status != 200 {
				return
			}
			var a apiResp
			if err := json.Unmarshal(body, &a); err != nil {
				t.Fatal(err)
			}
			if a.ID != tc.wantID || a.SHA != tc.wantSHA {
				t.Errorf("id %q sha %q, want %q %q", a.ID, a.SHA, tc.wantID, tc.wantSHA)
			}
			for _, sib := range a.Siblings {
				_, hasSize := sib["size"]
				_, hasBlob := sib["blobId"]
				if hasSize != tc.blobs || hasBlob != tc.blobs {
					t.Errorf("sibling %s: size/blobId present %v/%v, want %v", sib["rfilename"], hasSize, hasBlob, tc.blobs)
				}
			}
		})
	}

	// The blobs=true listing matches the generated files field by field.
	_, body := do(t, http.DefaultClient, "GET", s.URL+"/api/models/org/model/revision/"+first.SHA+"?blobs=true")
	var full struct {
		Siblings []struct {
			RFilename string `json:"rfilename"`
			Size      int64  `json:"size"`
			BlobID    string `json:"blobId"`
			LFS       *struct {
				SHA256      string `json:"sha256"`
				Size        int64  `json:"size"`
				PointerSize int    `json:"pointerSize"`
			} `json:"lfs"`
		} `json:"siblings"`
	}
	if err := json.Unmarshal(body, &full); err != nil {
		t.Fatal(err)
	}
	if len(full.Siblings) != len(first.Files) {
		t.Fatalf("%d siblings, want %d", len(full.Siblings), len(first.Files))
	}
	for i, sib := range full.Siblings {
		f := first.Files[i]
		if sib.RFilename != f.Path || sib.Size != f.Size || sib.BlobID != f.BlobID || (sib.LFS != nil) != f.LFS {
			t.Errorf("sibling %+v, want %s %d %s lfs=%v", sib, f.Path, f.Size, f.BlobID, f.LFS)
		}
		if f.LFS && (sib.LFS.SHA256 != f.Etag || sib.LFS.Size != f.Size || sib.LFS.PointerSize != f.PointerSize) {
			t.Errorf("%s: lfs %+v, want sha256 %s", f.Path, *sib.LFS, f.Etag)
		}
	}
	if got := s.Requests(EndpointAPI); got != 11 {
		t.Errorf("api requests counted %d, want 11", got)
	}
}

func TestServerResolve(t *testing.T) {
	r := testRepo()
	c := r.Main()
	ds := GenRepo("org/data", 3, FileSpec{Path: "train/part-0.parquet", Size: 5000, LFS: true})
	ds.Type = "dataset"
	s := NewServer(t, r, ds)

	for _, f := range append(append([]*File(nil), c.Files...), ds.Main().Files...) {
		t.Run(f.Path, func(t *testing.T) {
			prefix := s.URL + "/org/model"
			commit := c.SHA
			if f.Path == "train/part-0.parquet" {
				prefix, commit = s.URL+"/datasets/org/data", ds.Main().SHA
			}
			url := prefix + "/resolve/main/" + f.Path
			// HEAD without following: what huggingface_hub's get_hf_file_metadata reads.
			resp, _ := do(t, noRedirect, "HEAD", url)
			if got := resp.Header.Get("X-Repo-Commit"); got != commit {
				t.Errorf("X-Repo-Commit %q, want %q", got, commit)
			}
			if got := resp.Header.Get("ETag"); got != `"`+f.Etag+`"` {
				t.Errorf("ETag %s, want quoted %s", got, f.Etag)
			}
			if f.LFS {
				if resp.StatusCode != http.StatusFound {
					t.Fatalf("LFS HEAD status %d, want 302", resp.StatusCode)
				}
				if got := resp.Header.Get("X-Linked-Etag"); got != `"`+f.Etag+`"` {
					t.Errorf("X-Linked-Etag %s, want %s", got, f.Etag)
				}
				if got := resp.Header.Get("X-Linked-Size"); got != strconv.FormatInt(f.Size, 10) {
					t.Errorf("X-Linked-Size %s, want %d", got, f.Size)
				}
				if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, s.CDNURL+"/") {
					t.Errorf("Location %q, want the CDN %s", loc, s.CDNURL)
				}
			} else {
				if resp.StatusCode != http.StatusOK || resp.ContentLength != f.Size {
					t.Errorf("HEAD status %d length %d, want 200 %d", resp.StatusCode, resp.ContentLength, f.Size)
				}
				if resp.Header.Get("X-Linked-Etag") != "" {
					t.Error("regular file has X-Linked-Etag")
				}
			}
			// GET following the redirect gets the bytes.
			resp, body := do(t, http.DefaultClient, "GET", url)
			if resp.StatusCode != 200 || !bytes.Equal(body, f.Bytes()) {
				t.Fatalf("GET status %d, %d bytes: content differs", resp.StatusCode, len(body))
			}
			if resp.Header.Get("Accept-Ranges") != "bytes" {
				t.Error("no Accept-Ranges: bytes")
			}
			// A Range request resumes from an offset.
			if f.Size > 10 {
				off := f.Size / 3
				resp, body = do(t, http.DefaultClient, "GET", url, "Range", "bytes="+strconv.FormatInt(off, 10)+"-")
				if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, f.Bytes()[off:]) {
					t.Errorf("Range from %d: status %d, %d bytes; want 206 and the tail", off, resp.StatusCode, len(body))
				}
			}
		})
	}
	// Counters: the tokenizer was fetched whole once and its tail once.
	tok := c.File("sub/dir/tokenizer.json")
	if got, want := s.Bytes(tok.Path), tok.Size+tok.Size-tok.Size/3; got != want {
		t.Errorf("Bytes(%s) = %d, want %d", tok.Path, got, want)
	}
	if s.Requests(EndpointCDN) == 0 || s.Requests(EndpointResolve) == 0 {
		t.Errorf("requests: cdn %d resolve %d", s.Requests(EndpointCDN), s.Requests(EndpointResolve))
	}

	for _, tc := range []struct {
		name, url string
		status    int
		code      string
	}{
		{"unknown file", s.URL + "/org/model/resolve/main/nope.bin", 404, "EntryNotFound"},
		{"unknown rev", s.URL + "/org/model/resolve/v9/config.json", 404, "RevisionNotFound"},
		{"unknown repo", s.URL + "/org/other/resolve/main/config.json", 404, "RepoNotFound"},
		{"by commit", s.URL + "/org/model/resolve/" + c.SHA + "/config.json", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := do(t, http.DefaultClient, "GET", tc.url)
			if resp.StatusCode != tc.status || resp.Header.Get("X-Error-Code") != tc.code {
				t.Errorf("status %d code %q, want %d %q", resp.StatusCode, resp.Header.Get("X-Error-Code"), tc.status, tc.code)
			}
		})
	}
}

func TestServerMovedMain(t *testing.T) {
	r := testRepo()
	s := NewServer(t, r)
	old := r.Main()
	c2 := r.AddCommit("", FileSpec{Path: "config.json", Size: 99})
	r.SetRef("main", c2.SHA)
	resp, body := do(t, http.DefaultClient, "GET", s.URL+"/org/model/resolve/main/config.json")
	if resp.Header.Get("X-Repo-Commit") != c2.SHA || len(body) != 99 {
		t.Errorf("after moving main: commit %s, %d bytes; want %s, 99", resp.Header.Get("X-Repo-Commit"), len(body), c2.SHA)
	}
	// The old commit stays reachable by its id.
	resp, body = do(t, http.DefaultClient, "GET", s.URL+"/org/model/resolve/"+old.SHA+"/config.json")
	if resp.StatusCode != 200 || len(body) != 1234 {
		t.Errorf("old commit: status %d, %d bytes", resp.StatusCode, len(body))
	}
}

func TestServerToken(t *testing.T) {
	r := testRepo()
	s := NewServer(t, r)
	s.SetToken("hf_secret")
	lfs := "/org/model/resolve/main/model-00001-of-00002.safetensors"
	for _, tc := range []struct {
		name, path, auth string
		status           int
	}{
		{"api without token", "/api/models/org/model/revision/main", "", 401},
		{"api wrong token", "/api/models/org/model/revision/main", "Bearer hf_wrong", 401},
		{"api with token", "/api/models/org/model/revision/main", "Bearer hf_secret", 200},
		{"resolve without token", "/org/model/resolve/main/config.json", "", 401},
		{"resolve with token", "/org/model/resolve/main/config.json", "Bearer hf_secret", 200},
		{"lfs without token", lfs, "", 401},
		{"lfs with token", lfs, "Bearer hf_secret", 302},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.auth != "" {
				hdr = []string{"Authorization", tc.auth}
			}
			resp, _ := do(t, noRedirect, "GET", s.URL+tc.path, hdr...)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
	// The CDN URL works without the token; a tampered one does not.
	resp, _ := do(t, noRedirect, "HEAD", s.URL+lfs, "Authorization", "Bearer hf_secret")
	loc := resp.Header.Get("Location")
	if resp, _ = do(t, noRedirect, "GET", loc); resp.StatusCode != 200 {
		t.Errorf("signed CDN url without token: %d, want 200", resp.StatusCode)
	}
	for _, bad := range []string{
		strings.Replace(loc, "Signature=", "Signature=0", 1),
		strings.Replace(loc, "model-00001", "model-00002", 1),
	} {
		if resp, _ = do(t, noRedirect, "GET", bad); resp.StatusCode != http.StatusForbidden {
			t.Errorf("tampered CDN url %s: %d, want 403", bad, resp.StatusCode)
		}
	}
}

func TestServerFaults(t *testing.T) {
	r := testRepo()
	s := NewServer(t, r)
	lfs := r.Main().File("model-00001-of-00002.safetensors")
	url := s.URL + "/org/model/resolve/main/" + lfs.Path

	// Cut twice after 100000 bytes: two short reads, then whole.
	s.CutAfter(lfs.Path, 100000, 2)
	for i := 0; i < 2; i++ {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil || len(b) != 100000 || !bytes.Equal(b, lfs.Bytes()[:100000]) {
			t.Fatalf("cut %d: read %d bytes, err %v; want the first 100000 bytes and an error", i, len(b), err)
		}
	}
	// Resume from the cut with Range: only the rest is sent.
	resp, body := do(t, http.DefaultClient, "GET", url, "Range", "bytes=100000-")
	if resp.StatusCode != 206 || !bytes.Equal(body, lfs.Bytes()[100000:]) {
		t.Fatalf("resume: status %d, %d bytes", resp.StatusCode, len(body))
	}
	if got, want := s.Bytes(lfs.Path), 2*100000+lfs.Size-100000; got != want {
		t.Errorf("Bytes = %d, want %d (two cuts and one resumed tail)", got, want)
	}
	if _, body = do(t, http.DefaultClient, "GET", url); len(body) != int(lfs.Size) {
		t.Errorf("after the cuts are used up: %d bytes, want %d", len(body), lfs.Size)
	}
	var cut, ranged int
	for _, q := range s.Log() {
		if q.Endpoint == EndpointCDN && q.Bytes == 100000 {
			cut++
		}
		if q.Endpoint == EndpointCDN && q.Range != "" {
			ranged++
		}
	}
	if cut != 2 || ranged != 1 {
		t.Errorf("log: %d cut responses, %d ranged; want 2, 1", cut, ranged)
	}

	// 404 for one path.
	s.Fail404("config.json")
	if resp, _ = do(t, http.DefaultClient, "GET", s.URL+"/org/model/resolve/main/config.json"); resp.StatusCode != 404 {
		t.Errorf("Fail404: status %d", resp.StatusCode)
	}
	s.ClearFaults()
	if resp, _ = do(t, http.DefaultClient, "GET", s.URL+"/org/model/resolve/main/config.json"); resp.StatusCode != 200 {
		t.Errorf("after ClearFaults: status %d", resp.StatusCode)
	}

	// Throttle: 300 KiB at 1 MiB/s cannot arrive in less than ~0.29 s (a
	// lower bound only: the server sleeps, so this cannot flake).
	s.Throttle(1 << 20)
	start := time.Now()
	if _, body = do(t, http.DefaultClient, "GET", url); len(body) != int(lfs.Size) {
		t.Fatalf("throttled: %d bytes", len(body))
	}
	if d, min := time.Since(start), time.Duration(float64(lfs.Size)/(1<<20)*float64(time.Second))*9/10; d < min {
		t.Errorf("throttled download took %v, want at least %v", d, min)
	}
	s.ResetCounters()
	if s.TotalBytes() != 0 || s.Requests(EndpointCDN) != 0 || len(s.Log()) != 0 {
		t.Error("ResetCounters left counts")
	}
}

// curl (what a node's receiver uses) follows the CDN redirect with the
// token given on stdin, and resumes a cut transfer with -C - so that the
// bytes already received are not sent again.
func TestServerWithCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	realpart.Need(t, "curl (apt-get install curl)", err)
	r := testRepo()
	s := NewServer(t, r)
	s.SetToken("hf_secret")
	f := r.Main().File("model-00001-of-00002.safetensors")
	out := filepath.Join(t.TempDir(), "blob.incomplete")
	get := func(args ...string) error {
		cmd := exec.Command(curl, append([]string{"-fsSL", "-K", "-", "-o", out}, args...)...)
		cmd.Stdin = strings.NewReader("header = \"Authorization: Bearer hf_secret\"\n")
		b, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, b)
		}
		return nil
	}
	url := s.URL + "/org/model/resolve/" + r.Main().SHA + "/" + f.Path
	s.CutAfter(f.Path, 100000, 1)
	var ee *exec.ExitError
	if err := get(url); !errors.As(err, &ee) || ee.ExitCode() != 18 {
		t.Fatalf("cut transfer: %v, want curl exit 18 (partial file)", err)
	}
	if st, err := os.Stat(out); err != nil || st.Size() != 100000 {
		t.Fatalf("after the cut: %v, want 100000 bytes on disk", err)
	}
	if err := get("-C", "-", url); err != nil {
		t.Fatalf("resume: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if sha256hex(b) != f.Etag {
		t.Errorf("resumed file hashes to %s, want %s", sha256hex(b), f.Etag)
	}
	if got := s.Bytes(f.Path); got != f.Size {
		t.Errorf("bytes sent %d, want %d: the first 100000 were sent again", got, f.Size)
	}
}

func TestServerTree(t *testing.T) {
	r := testRepo()
	s := NewServer(t, r)
	c := r.Main()
	for _, tc := range []struct {
		name, path string
		status     int
		want       []string // "d path" or "f path"
	}{
		{"root", "/api/models/org/model/tree/main", 200, []string{
			"f config.json", "f empty.txt", "f model-00001-of-00002.safetensors", "f model-00002-of-00002.safetensors", "d sub"}},
		{"recursive", "/api/models/org/model/tree/main?recursive=true", 200, []string{
			"f config.json", "f empty.txt", "f model-00001-of-00002.safetensors", "f model-00002-of-00002.safetensors",
			"d sub", "d sub/dir", "f sub/dir/tokenizer.json"}},
		{"folder", "/api/models/org/model/tree/" + c.SHA + "/sub", 200, []string{"d sub/dir"}},
		{"folder recursive", "/api/models/org/model/tree/main/sub?recursive=1", 200, []string{"d sub/dir", "f sub/dir/tokenizer.json"}},
		{"missing folder", "/api/models/org/model/tree/main/nope", 404, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, http.DefaultClient, "GET", s.URL+tc.path)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.status != 200 {
				return
			}
			var entries []treeEntry
			if err := json.Unmarshal(body, &entries); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Type[:1]+" "+e.Path)
				if e.Type != "file" {
					continue
				}
				f := c.File(e.Path)
				if e.OID != f.BlobID || e.Size != f.Size || (e.LFS != nil) != f.LFS || (f.LFS && e.LFS.OID != f.Etag) {
					t.Errorf("%s: entry %+v does not match the file", e.Path, e)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("entries %v, want %v", got, tc.want)
			}
		})
	}
}
