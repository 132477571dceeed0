package hubtest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Endpoint names used by the request counters.
const (
	EndpointAPI     = "api"     // GET /api/{models,datasets}/{repo}[/revision/{rev}]
	EndpointResolve = "resolve" // HEAD|GET /[datasets/]{repo}/resolve/{rev}/{path}
	EndpointCDN     = "cdn"     // HEAD|GET on the CDN listener (LFS bytes)
)

// Request is one request the server answered (for assertions).
type Request struct {
	Endpoint string // EndpointAPI, EndpointResolve, EndpointCDN
	Method   string
	Repo     string // repo id
	Path     string // file path in the repo ("" for the API)
	Rev      string // revision as asked ("" on the CDN)
	Range    string // the Range header, if any
	// Authorized: the request carried an Authorization header (on the
	// CDN: a client that forwarded the hub token across hosts).
	Authorized bool
	Agent      string // the User-Agent header
	Status     int
	Bytes      int64 // body bytes written
	// Arrived is when the request came. It is logged when its answer
	// ends, with every byte of it: one that was in flight at a
	// ResetCounters is logged after it, older than the reset.
	Arrived time.Time
}

// Server is a fake huggingface.co on two real loopback listeners: the hub
// (URL: API and resolve endpoints) and a "CDN" (CDNURL) that serves LFS
// bytes behind signed 302 redirects, like the real hub's CloudFront.
// All methods are safe for concurrent use with requests in flight.
type Server struct {
	// URL is the hub endpoint (what HF_ENDPOINT would be), no trailing slash.
	URL string
	// CDNURL is the second listener that serves LFS content.
	CDNURL string

	hub, cdn *httptest.Server
	secret   []byte

	mu       sync.Mutex
	repos    map[string]*Repo // "model:org/name" -> repo
	token    string
	throttle int64
	cuts     map[string]*cut
	fail404  map[string]bool
	corrupt  map[string]int64
	bytes    map[string]int64
	total    int64
	reqs     map[string]int
	log      []Request
}

type cut struct {
	after int64
	left  int // responses still to cut; <=0: all
}

// NewServer starts a server serving repos and closes it when t ends.
func NewServer(t testing.TB, repos ...*Repo) *Server {
	t.Helper()
	s := Start(repos...)
	t.Cleanup(s.Close)
	return s
}

// Start starts a server serving repos on 127.0.0.1 (for programs; tests
// use NewServer). Close stops it.
func Start(repos ...*Repo) *Server {
	s, err := StartAt("127.0.0.1", repos...)
	if err != nil {
		panic(err) // as httptest.NewServer does when loopback cannot listen
	}
	return s
}

// StartAt is Start with both listeners on host (an IP address that
// clients can reach, such as a bridge address test nodes use), free ports.
func StartAt(host string, repos ...*Repo) (*Server, error) {
	s := &Server{
		repos:   map[string]*Repo{},
		cuts:    map[string]*cut{},
		fail404: map[string]bool{},
		corrupt: map[string]int64{},
		bytes:   map[string]int64{},
		reqs:    map[string]int{},
		secret:  make([]byte, 32),
	}
	_, _ = rand.Read(s.secret)
	for _, r := range repos {
		s.AddRepo(r)
	}
	s.hub = httptest.NewUnstartedServer(http.HandlerFunc(s.serveHub))
	s.cdn = httptest.NewUnstartedServer(http.HandlerFunc(s.serveCDN))
	for _, h := range []*httptest.Server{s.hub, s.cdn} {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("hubtest: listen on %s: %w", host, err)
		}
		h.Listener.Close()
		h.Listener = l
		h.Start()
	}
	s.URL, s.CDNURL = s.hub.URL, s.cdn.URL
	return s, nil
}

// Stats are the counters in one value (also served as JSON at
// GET /_hubtest/stats on the hub listener, for scripts).
type Stats struct {
	TotalBytes int64            `json:"total_bytes"`
	Bytes      map[string]int64 `json:"bytes"`
	Requests   map[string]int   `json:"requests"`
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{TotalBytes: s.total, Bytes: map[string]int64{}, Requests: map[string]int{}}
	for k, v := range s.bytes {
		st.Bytes[k] = v
	}
	for k, v := range s.reqs {
		st.Requests[k] = v
	}
	return st
}

// Close stops both listeners and closes open connections.
func (s *Server) Close() {
	s.hub.CloseClientConnections()
	s.cdn.CloseClientConnections()
	s.hub.Close()
	s.cdn.Close()
}

// AddRepo serves r (keyed by its Type and ID).
func (s *Server) AddRepo(r *Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[r.typ()+":"+r.ID] = r
}

// SetToken makes every hub request require "Authorization: Bearer tok"
// (401 otherwise); "" turns the check off. CDN URLs are signed instead.
func (s *Server) SetToken(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = tok
}

// Throttle limits every response body to bytesPerSec (0: unlimited).
func (s *Server) Throttle(bytesPerSec int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = bytesPerSec
}

// CutAfter makes the next `times` responses carrying file path (in any repo,
// hub or CDN) close the connection after `after` body bytes, mid-file;
// times <= 0 cuts every response until ClearFaults.
func (s *Server) CutAfter(path string, after int64, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cuts[path] = &cut{after: after, left: times}
}

// Fail404 makes resolve answer 404 (EntryNotFound) for path in any repo.
func (s *Server) Fail404(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail404[path] = true
}

// Corrupt makes every response carrying file path (any repo, hub or CDN)
// send byte `at` of the file changed (a bad disk or proxy on the way): the
// client must find the content address wrong.
func (s *Server) Corrupt(path string, at int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corrupt[path] = at
}

// ClearFaults removes throttling, cuts, corruptions and 404s.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttle = 0
	s.cuts = map[string]*cut{}
	s.fail404 = map[string]bool{}
	s.corrupt = map[string]int64{}
}

// Bytes is how many body bytes of file path (any repo) were sent so far.
func (s *Server) Bytes(path string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes[path]
}

// TotalBytes is how many file body bytes were sent so far (API JSON excluded).
func (s *Server) TotalBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Requests is how many requests reached endpoint (EndpointAPI...).
func (s *Server) Requests(endpoint string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs[endpoint]
}

// Log returns a copy of every answered request, in order of completion.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// ResetCounters zeroes bytes, request counts and the log.
func (s *Server) ResetCounters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes = map[string]int64{}
	s.total = 0
	s.reqs = map[string]int{}
	s.log = nil
}

// arrived counts a request when it arrives, before any answer: a client
// (and a test reading Requests) may have the answer before the handler
// returns and record logs it.
func (s *Server) arrived(endpoint string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs[endpoint]++
	return time.Now()
}

func (s *Server) record(q Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, q)
}

func (s *Server) addBytes(path string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes[path] += n
	s.total += n
}

// --- hub ---------------------------------------------------------------------

// hubError answers like the real hub: a status, X-Error-Code and a JSON body.
func hubError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// segments splits the escaped path, unescaping each segment so that
// "refs%2Fpr%2F1" stays one segment "refs/pr/1".
func segments(r *http.Request) []string {
	raw := strings.Trim(r.URL.EscapedPath(), "/")
	if raw == "" {
		return nil
	}
	parts := strings.Split(raw, "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	return parts
}

// findRepo matches the longest known repo id ("org/name" then "name") at the
// start of segs and returns it with the rest.
func (s *Server) findRepo(typ string, segs []string) (*Repo, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := 2; n >= 1; n-- {
		if len(segs) < n {
			continue
		}
		if r := s.repos[typ+":"+strings.Join(segs[:n], "/")]; r != nil {
			return r, segs[n:]
		}
	}
	return nil, nil
}

func (s *Server) authorized(r *http.Request) bool {
	s.mu.Lock()
	tok := s.token
	s.mu.Unlock()
	if tok == "" {
		return true
	}
	got := r.Header.Get("Authorization")
	return subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+tok)) == 1
}

func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	segs := segments(r)
	if len(segs) == 2 && segs[0] == "_hubtest" && segs[1] == "stats" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Stats())
		return
	}
	if len(segs) >= 2 && segs[0] == "api" && (segs[1] == "models" || segs[1] == "datasets") {
		s.serveAPI(w, r, strings.TrimSuffix(segs[1], "s"), segs[2:])
		return
	}
	typ := "model"
	if len(segs) > 0 && segs[0] == "datasets" {
		typ, segs = "dataset", segs[1:]
	}
	repo, rest := s.findRepo(typ, segs)
	if repo != nil && len(rest) >= 3 && rest[0] == "resolve" {
		rev, fileSegs := rest[1], rest[2:]
		// An unescaped "refs/pr/N" spans three segments.
		if rev == "refs" && len(fileSegs) >= 3 {
			rev, fileSegs = strings.Join(rest[1:4], "/"), rest[4:]
		}
		s.serveResolve(w, r, repo, rev, strings.Join(fileSegs, "/"))
		return
	}
	q := Request{Endpoint: EndpointResolve, Method: r.Method, Status: http.StatusNotFound}
	if repo != nil {
		q.Repo = repo.ID
	}
	q.Arrived = s.arrived(q.Endpoint)
	s.record(q)
	hubError(w, http.StatusNotFound, "RepoNotFound", "Repository not found")
}

type apiLFS struct {
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

type apiSibling struct {
	RFilename string  `json:"rfilename"`
	Size      *int64  `json:"size,omitempty"`
	BlobID    string  `json:"blobId,omitempty"`
	LFS       *apiLFS `json:"lfs,omitempty"`
}

// apiInfo is the subset of the hub's model/dataset info we answer; every
// field name is the real API's.
type apiInfo struct {
	HiddenID     string       `json:"_id"`
	ID           string       `json:"id"`
	ModelID      string       `json:"modelId,omitempty"`
	Author       string       `json:"author,omitempty"`
	SHA          string       `json:"sha"`
	LastModified time.Time    `json:"lastModified"`
	CreatedAt    time.Time    `json:"createdAt"`
	Private      bool         `json:"private"`
	Disabled     bool         `json:"disabled"`
	Gated        bool         `json:"gated"`
	Tags         []string     `json:"tags"`
	Siblings     []apiSibling `json:"siblings"`
}

var epoch = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, typ string, segs []string) {
	q := Request{Endpoint: EndpointAPI, Method: r.Method}
	q.Arrived = s.arrived(q.Endpoint)
	defer func() { s.record(q) }()
	if !s.authorized(r) {
		q.Status = http.StatusUnauthorized
		hubError(w, q.Status, "", "Invalid credentials in Authorization header")
		return
	}
	repo, rest := s.findRepo(typ, segs)
	if repo == nil {
		q.Status = http.StatusNotFound
		hubError(w, q.Status, "RepoNotFound", "Repository not found")
		return
	}
	q.Repo = repo.ID
	rev, tree, treePath := "main", false, ""
	switch {
	case len(rest) == 0:
	case len(rest) >= 2 && rest[0] == "revision":
		rev = strings.Join(rest[1:], "/")
	case len(rest) >= 2 && rest[0] == "tree":
		tree, rev, rest = true, rest[1], rest[2:]
		if rev == "refs" && len(rest) >= 2 { // unescaped refs/pr/N
			rev, rest = "refs/"+rest[0]+"/"+rest[1], rest[2:]
		}
		treePath = strings.Join(rest, "/")
	default:
		q.Status = http.StatusNotFound
		hubError(w, q.Status, "", "Sorry, we can't find the page you are looking for.")
		return
	}
	q.Rev = rev
	c, ok := repo.Resolve(rev)
	if !ok {
		q.Status = http.StatusNotFound
		hubError(w, q.Status, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	if tree {
		rec := r.URL.Query().Get("recursive")
		entries, found := treeEntries(c, treePath, rec == "true" || rec == "1")
		if !found {
			q.Status = http.StatusNotFound
			hubError(w, q.Status, "EntryNotFound", treePath+" does not exist on \""+rev+"\"")
			return
		}
		q.Status = http.StatusOK
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(entries)
		return
	}
	blobs := r.URL.Query().Get("blobs") == "true"
	info := apiInfo{
		HiddenID: c.SHA[:24], ID: repo.ID, SHA: c.SHA,
		LastModified: epoch, CreatedAt: epoch, Tags: []string{}, Siblings: make([]apiSibling, len(c.Files)),
	}
	if i := strings.IndexByte(repo.ID, '/'); i > 0 {
		info.Author = repo.ID[:i]
	}
	if repo.typ() == "model" {
		info.ModelID = repo.ID
	}
	for i, f := range c.Files {
		sib := apiSibling{RFilename: f.Path}
		if blobs {
			size := f.Size
			sib.Size, sib.BlobID = &size, f.BlobID
			if f.LFS {
				sib.LFS = &apiLFS{SHA256: f.Etag, Size: f.Size, PointerSize: f.PointerSize}
			}
		}
		info.Siblings[i] = sib
	}
	q.Status = http.StatusOK
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(info)
}

func (s *Server) serveResolve(w http.ResponseWriter, r *http.Request, repo *Repo, rev, path string) {
	q := Request{Endpoint: EndpointResolve, Method: r.Method, Repo: repo.ID, Path: path, Rev: rev, Range: r.Header.Get("Range"),
		Authorized: r.Header.Get("Authorization") != "", Agent: r.Header.Get("User-Agent")}
	q.Arrived = s.arrived(q.Endpoint)
	defer func() { s.record(q) }()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		q.Status = http.StatusMethodNotAllowed
		hubError(w, q.Status, "", "method not allowed")
		return
	}
	if !s.authorized(r) {
		q.Status = http.StatusUnauthorized
		hubError(w, q.Status, "", "Invalid credentials in Authorization header")
		return
	}
	c, ok := repo.Resolve(rev)
	if !ok {
		q.Status = http.StatusNotFound
		hubError(w, q.Status, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	s.mu.Lock()
	gone := s.fail404[path]
	s.mu.Unlock()
	f := c.File(path)
	if f == nil || gone {
		q.Status = http.StatusNotFound
		w.Header().Set("X-Repo-Commit", c.SHA)
		hubError(w, q.Status, "EntryNotFound", "Entry not found")
		return
	}
	h := w.Header()
	h.Set("X-Repo-Commit", c.SHA)
	h.Set("ETag", `"`+f.Etag+`"`)
	if f.LFS {
		h.Set("X-Linked-Etag", `"`+f.Etag+`"`)
		h.Set("X-Linked-Size", strconv.FormatInt(f.Size, 10))
		h.Set("Location", s.signedURL(repo, f))
		h.Set("Content-Length", "0")
		q.Status = http.StatusFound
		w.WriteHeader(q.Status)
		return
	}
	s.serveFile(w, r, f, &q)
}

// --- CDN ---------------------------------------------------------------------

const cdnValidity = time.Hour

func (s *Server) sign(repoKey, etag, path, expires string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(repoKey + "\n" + etag + "\n" + path + "\n" + expires))
	return hex.EncodeToString(m.Sum(nil))
}

// signedURL is the CDN address of f's bytes, valid for an hour, usable
// without the token (like the real hub's pre-signed CloudFront URLs).
func (s *Server) signedURL(repo *Repo, f *File) string {
	key := repo.typ() + ":" + repo.ID
	exp := strconv.FormatInt(time.Now().Add(cdnValidity).Unix(), 10)
	v := url.Values{}
	v.Set("repo", key)
	v.Set("path", f.Path)
	v.Set("Expires", exp)
	v.Set("Signature", s.sign(key, f.Etag, f.Path, exp))
	return s.CDNURL + "/lfs/" + f.Etag + "?" + v.Encode()
}

func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := Request{Endpoint: EndpointCDN, Method: r.Method, Path: v.Get("path"), Range: r.Header.Get("Range"),
		Authorized: r.Header.Get("Authorization") != "", Agent: r.Header.Get("User-Agent")}
	q.Arrived = s.arrived(q.Endpoint)
	defer func() { s.record(q) }()
	segs := segments(r)
	if len(segs) != 2 || segs[0] != "lfs" {
		q.Status = http.StatusNotFound
		http.Error(w, "not found", q.Status)
		return
	}
	etag, key, exp := segs[1], v.Get("repo"), v.Get("Expires")
	want := s.sign(key, etag, q.Path, exp)
	ok := hmac.Equal([]byte(want), []byte(v.Get("Signature")))
	if t, err := strconv.ParseInt(exp, 10, 64); err != nil || time.Now().Unix() > t {
		ok = false
	}
	if !ok {
		q.Status = http.StatusForbidden
		http.Error(w, "AccessDenied: bad or expired signature", q.Status)
		return
	}
	s.mu.Lock()
	repo := s.repos[key]
	s.mu.Unlock()
	var f *File
	if repo != nil {
		q.Repo = repo.ID
		f = repo.blobByEtag(etag)
	}
	if f == nil {
		q.Status = http.StatusNotFound
		http.Error(w, "NoSuchKey", q.Status)
		return
	}
	// The path in the signed URL names the file for the counters (several
	// paths may share the blob).
	fc := *f
	fc.Path = q.Path
	s.serveFile(w, r, &fc, &q)
}

// serveFile sends f's bytes with Range support, applying throttle and cut
// faults and counting body bytes under f.Path; q gets the outcome even when
// a cut aborts the handler.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, f *File, q *Request) {
	s.mu.Lock()
	fw := &faultWriter{ResponseWriter: w, s: s, path: f.Path, rate: s.throttle, cutAt: -1, start: time.Now()}
	if c := s.cuts[f.Path]; c != nil && r.Method == http.MethodGet {
		fw.cutAt = c.after
		if c.left > 0 {
			c.left--
			if c.left == 0 {
				delete(s.cuts, f.Path)
			}
		}
	}
	bad, corrupt := s.corrupt[f.Path]
	s.mu.Unlock()
	defer func() { q.Status, q.Bytes = fw.statusCode(), fw.n }()
	h := w.Header()
	h.Set("ETag", `"`+f.Etag+`"`)
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Accept-Ranges", "bytes")
	content := f.Open()
	if corrupt {
		content = &corruptReader{ReadSeeker: content, at: bad}
	}
	// http.ServeContent implements Range (206, 416, If-Range on the ETag).
	http.ServeContent(fw, r, "", time.Time{}, content)
}

// treeEntry is one element of the hub's tree listing
// (/api/{type}s/{repo}/tree/{rev}[/{path}][?recursive=true]).
type treeEntry struct {
	Type string   `json:"type"` // "file" or "directory"
	OID  string   `json:"oid"`
	Size int64    `json:"size"`
	Path string   `json:"path"`
	LFS  *treeLFS `json:"lfs,omitempty"`
}

type treeLFS struct {
	OID         string `json:"oid"`
	Size        int64  `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

// treeEntries lists the folder dir of c (all levels when recursive),
// directories before the files they hold, in path order. The listing is one
// page (the real hub pages long listings with a Link header).
func treeEntries(c *Commit, dir string, recursive bool) ([]treeEntry, bool) {
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	found := dir == ""
	dirs := map[string]bool{}
	var out []treeEntry
	for _, f := range c.Files {
		if !strings.HasPrefix(f.Path, prefix) {
			continue
		}
		found = true
		rest := strings.TrimPrefix(f.Path, prefix)
		parts := strings.Split(rest, "/")
		for i := 1; i < len(parts); i++ {
			if i > 1 && !recursive {
				break
			}
			d := prefix + strings.Join(parts[:i], "/")
			if !dirs[d] {
				dirs[d] = true
				out = append(out, treeEntry{Type: "directory", OID: GitBlobSHA1([]byte("tree " + c.SHA + " " + d)), Path: d})
			}
		}
		if len(parts) > 1 && !recursive {
			continue
		}
		e := treeEntry{Type: "file", OID: f.BlobID, Size: f.Size, Path: f.Path}
		if f.LFS {
			e.LFS = &treeLFS{OID: f.Etag, Size: f.Size, PointerSize: f.PointerSize}
		}
		out = append(out, e)
	}
	if out == nil {
		out = []treeEntry{}
	}
	return out, found
}
