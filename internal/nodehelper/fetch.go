package nodehelper

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func init() { register("hubfetch", hubFetch) }

// hubfetch [-links SNAPDIR] BLOBS INBOX PARALLEL URLBASE
//
// It replaces the job loop of the hubstage_snapshot receiver (the
// provider's snapReceiveScript, fetch mode, hub source): for each blob,
// a curl resumed by Range into BLOBS/ETAG.incomplete, the whole file
// hashed with openssl (sha256, or git's blob sha1 for a 40-hex etag) and
// renamed to BLOBS/ETAG when its size and content address match. Here one
// process runs PARALLEL blobs at once over reused connections and hashes
// each byte while it writes it (a resumed blob's prefix is hashed from
// the file first), so a byte is read from the network, written and hashed
// once.
//
// stdin: the first line is the hub source's curl config line, the secret
// (`header = "Authorization: Bearer TOKEN"`, or empty): it comes on stdin
// so that it is in no command line or environment, and it is sent only
// to URLBASE's scheme, host and port (curl's rule for a custom header: a
// redirect to the CDN gets no token). Then the receiver's job lines
// ("B|S ETAG SIZE URLPATH", tab-separated; other kinds are ignored) up to
// a line "END" or the end. The URL of a blob is URLBASE followed by
// URLPATH (already escaped by the provider).
//
// Output, what the script's job loop and its monitor print:
//
//	P BYTES        bytes in the .incomplete files of this run now, every
//	               quarter second: the progress, and the heartbeat: when
//	               it cannot be written (the connection is gone) the
//	               helper stops at once, leaving no writer behind
//	D ETAG SIZE    a blob is complete (verified and renamed)
//	E ETAG MSG     a blob failed after its retries (its partial is kept)
//
// With -links, the job lines' links ("L TARGET PATH", TARGET ending in
// the blob's etag) are written at SNAPDIR/PATH as `links` writes them,
// each once its blob is complete (before its D line), so that the links
// of the small blobs are written while the big ones stream and the
// receiver's `links` after the fetch finds them there. A link that cannot
// be written here is left to that step, which reports it. Folders are
// the receiver's (made, recorded, before the fetch).
//
// Exit status: 0 every blob done, 2 some failed (the script's
// "$tmp/failed"), 1 the helper could not start (bad stdin, the heartbeat
// lost), ExitUsage bad arguments. Like the script: a left-over small
// blob of a batch (INBOX/ETAG) resumes as the .incomplete; each blob's
// .incomplete is flock'ed while it is worked on (two snapshots sharing a
// blob, one fetches it, the other then finds it whole); a failed attempt
// is retried fetchRetries times, a second apart, from what arrived; a
// connection that moves no byte for 120 s is dropped (curl --speed-time).
// Proxies: the http_proxy/https_proxy/no_proxy variables, as curl reads
// them.
func hubFetch(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	linkDir := ""
	if len(args) > 0 && args[0] == "-links" {
		if len(args) < 2 || args[1] == "" {
			fmt.Fprintln(stderr, "sparkform-node hubfetch: -links needs a folder")
			return ExitUsage
		}
		linkDir, args = args[1], args[2:]
	}
	if len(args) != 4 {
		fmt.Fprintln(stderr, "usage: sparkform-node hubfetch [-links SNAPDIR] BLOBS INBOX PARALLEL URLBASE")
		return ExitUsage
	}
	par, err := strconv.Atoi(args[2])
	if err != nil || par < 1 {
		fmt.Fprintln(stderr, "sparkform-node hubfetch: PARALLEL must be a positive number")
		return ExitUsage
	}
	f := &fetcher{blobs: args[0], inbox: args[1], base: args[3], out: stdout, retryWait: fetchRetryWait, idle: 120 * time.Second, linkDir: linkDir}
	if u := strings.Index(f.base, "://"); u > 0 {
		rest := f.base[u+3:]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i]
		}
		f.origin = strings.ToLower(f.base[:u]) + "://" + strings.ToLower(rest)
	}
	if f.origin == "" {
		fmt.Fprintln(stderr, "sparkform-node hubfetch: URLBASE is not an http(s) URL")
		return ExitUsage
	}
	in := bufio.NewReader(stdin)
	cfg, err := in.ReadString('\n')
	if err != nil && (err != io.EOF || cfg == "") {
		fmt.Fprintln(stderr, "sparkform-node hubfetch: no config line on stdin")
		return 1
	}
	if f.hdrName, f.hdrValue, err = curlHeader(strings.TrimRight(cfg, "\r\n")); err != nil {
		fmt.Fprintln(stderr, "sparkform-node hubfetch:", err)
		return 1
	}
	var jobs []*fetchJob
	for {
		l, err := in.ReadString('\n')
		l = strings.TrimRight(l, "\n")
		if l == "END" {
			break
		}
		if fl := strings.Split(l, "\t"); len(fl) == 4 && (fl[0] == "B" || fl[0] == "S") {
			sz, perr := strconv.ParseInt(fl[2], 10, 64)
			if perr != nil || sz < 0 || !isEtag(fl[1]) {
				fmt.Fprintf(stderr, "sparkform-node hubfetch: bad job line %q\n", l)
				return 1
			}
			jobs = append(jobs, &fetchJob{etag: fl[1], size: sz, path: fl[3]})
		} else if len(fl) == 3 && fl[0] == "L" && linkDir != "" && cleanLinkPath(fl[2]) {
			if f.links == nil {
				f.links = map[string][]fetchLink{}
			}
			e := fl[1][strings.LastIndexByte(fl[1], '/')+1:]
			f.links[e] = append(f.links[e], fetchLink{target: fl[1], path: fl[2]})
		}
		if err != nil {
			break
		}
	}
	return f.run(jobs, par)
}

// fetchRetries is the script's retries: a blob is tried 1+fetchRetries
// times.
const fetchRetries = 5

// fetchAgent is the User-Agent of the helper's requests.
const fetchAgent = "sparkform-node-hubfetch"

// fetchRetryWait is the pause before a retry (a variable: tests shorten it).
var fetchRetryWait = time.Second

type fetchJob struct {
	etag string
	size int64
	path string
	pre  int64 // bytes of its partial counted in the first P
}

// fetchLink is one link of a blob, written once the blob is complete.
type fetchLink struct{ target, path string }

type fetcher struct {
	blobs, inbox, base string
	linkDir            string                 // -links: where the links go ("" none)
	links              map[string][]fetchLink // by the etag their target names
	origin             string                 // scheme://host:port of base: the only one that gets the header
	hdrName, hdrValue  string
	out                io.Writer
	retryWait, idle    time.Duration

	client   *http.Client
	inflight atomic.Int64
	outMu    sync.Mutex
	outErr   bool
	cancel   context.CancelFunc
	mode     os.FileMode
}

// curlHeader reads the hub source's config line: empty, or one header.
// The value never appears in an error.
func curlHeader(l string) (name, value string, err error) {
	if strings.TrimSpace(l) == "" {
		return "", "", nil
	}
	v, ok := strings.CutPrefix(l, `header = "`)
	if ok {
		v, ok = strings.CutSuffix(v, `"`)
	}
	if ok {
		name, value, ok = strings.Cut(v, ": ")
	}
	if !ok || name == "" || strings.ContainsAny(v, "\"\\\r\n") {
		return "", "", errors.New(`the config line on stdin is not one curl header line (header = "NAME: VALUE")`)
	}
	return name, value, nil
}

func isEtag(e string) bool {
	if len(e) != 40 && len(e) != 64 {
		return false
	}
	for _, c := range e {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// line writes one output line; a failed write (the connection is gone)
// stops everything.
func (f *fetcher) line(s string, adjust int64) {
	f.outMu.Lock()
	defer f.outMu.Unlock()
	f.inflight.Add(adjust)
	if f.outErr {
		return
	}
	if _, err := io.WriteString(f.out, s+"\n"); err != nil {
		f.outErr = true
		f.cancel()
	}
}

func (f *fetcher) run(jobs []*fetchJob, par int) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.cancel = cancel
	u := syscall.Umask(0)
	syscall.Umask(u)
	f.mode = 0o666 &^ os.FileMode(u)
	f.client = &http.Client{
		Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: 30 * time.Second,
			MaxIdleConnsPerHost: par + 1,
			DisableCompression:  true, // bytes as stored: Range offsets are file offsets
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 50 {
				return errors.New("more than 50 redirects")
			}
			if f.hdrName != "" && !f.sameOrigin(req) {
				req.Header.Del(f.hdrName)
			}
			return nil
		},
	}
	defer f.client.CloseIdleConnections()
	// The partials there now count in the first P, as the script's
	// monitor sums every .incomplete.
	for _, j := range jobs {
		j.pre = max(fileSize(filepath.Join(f.blobs, j.etag+".incomplete")), fileSize(filepath.Join(f.inbox, j.etag)), 0)
		f.inflight.Add(j.pre)
	}
	// Heartbeat and progress, from the start.
	hbDone := make(chan struct{})
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			f.line("P\t"+strconv.FormatInt(f.inflight.Load(), 10), 0)
			select {
			case <-ctx.Done():
				close(hbDone)
				return
			case <-t.C:
			}
		}
	}()
	// The most bytes first: the streams end together.
	order := append([]*fetchJob(nil), jobs...)
	sort.SliceStable(order, func(a, b int) bool { return order[a].size-order[a].pre > order[b].size-order[b].pre })
	queue := make(chan *fetchJob)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < min(par, max(1, len(order))); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for j := range queue {
				if !f.one(ctx, j, buf) {
					failed.Store(true)
				}
			}
		}()
	}
feed:
	for _, j := range order {
		select {
		case queue <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	f.outMu.Lock()
	lost := f.outErr
	f.outMu.Unlock()
	cancel()
	<-hbDone
	if lost {
		return 1
	}
	if failed.Load() {
		return 2
	}
	_ = os.Remove(f.inbox) // when empty, as the script's rmdir
	return 0
}

func (f *fetcher) sameOrigin(req *http.Request) bool {
	return strings.ToLower(req.URL.Scheme)+"://"+strings.ToLower(req.URL.Host) == f.origin
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	return st.Size()
}

// one makes blob j present; false when it failed (E printed).
func (f *fetcher) one(ctx context.Context, j *fetchJob, buf []byte) bool {
	b := filepath.Join(f.blobs, j.etag)
	inc := b + ".incomplete"
	// A small blob a batch left: it resumes as the .incomplete, with this
	// node's mode (a tar batch keeps the archive's).
	if ib := filepath.Join(f.inbox, j.etag); fileSize(ib) >= 0 && fileSize(inc) <= 0 {
		if os.Rename(ib, inc) == nil {
			_ = os.Chmod(inc, f.mode)
		}
	}
	// Two snapshots sharing the blob: one fetches, the other waits here
	// and then finds it whole (the script's flock on the same file).
	lk, err := os.OpenFile(inc, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		f.line("E\t"+j.etag+"\tcannot write "+inc, 0)
		return false
	}
	defer lk.Close()
	if err := flock(ctx, lk); err != nil {
		f.line("E\t"+j.etag+"\t"+err.Error(), 0)
		return false
	}
	counted := j.pre // what the P sum holds for this blob
	var msgs []string
	for n := 0; ; n++ {
		if fileSize(b) == j.size {
			_ = os.Remove(inc)
			f.done(j, counted)
			return true
		}
		done, msg := f.attempt(ctx, j, inc, b, buf, &counted)
		if done {
			f.done(j, counted)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		msgs = append(msgs, msg)
		if n >= fetchRetries {
			if len(msgs) > 3 {
				msgs = msgs[len(msgs)-3:]
			}
			f.line("E\t"+j.etag+"\t"+strings.Join(msgs, " "), 0)
			if fileSize(inc) == 0 {
				_ = os.Remove(inc) // what the lock made, nothing fetched
			}
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(f.retryWait):
		}
	}
}

// done reports blob j complete, after its links (-links).
func (f *fetcher) done(j *fetchJob, counted int64) {
	for _, l := range f.links[j.etag] {
		_ = link1(l.target, filepath.Join(f.linkDir, l.path)) // else the receiver's links step says why
	}
	f.line("D\t"+j.etag+"\t"+strconv.FormatInt(j.size, 10), -counted)
}

// attempt resumes inc from its size, hashing it whole, and renames it to
// b when its size and content address match; else it says why.
func (f *fetcher) attempt(ctx context.Context, j *fetchJob, inc, b string, buf []byte, counted *int64) (bool, string) {
	w, err := os.OpenFile(inc, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return false, "cannot write " + inc
	}
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	st, err := w.Stat()
	if err != nil {
		return false, err.Error()
	}
	off := st.Size()
	if off > j.size {
		if err := w.Truncate(0); err != nil {
			return false, err.Error()
		}
		off = 0
	}
	f.count(counted, off)
	h := newBlobHash(j.etag, j.size)
	// The bytes already there are hashed first (read once, from the page
	// cache or the disk), then the rest streams after them.
	if off > 0 {
		if _, err := io.CopyBuffer(h, io.LimitReader(w, off), buf); err != nil {
			return false, "reading " + inc + ": " + err.Error()
		}
	}
	now := off
	if off < j.size {
		var msg string
		now, msg = f.get(ctx, j, w, h, off, buf, counted)
		if msg != "" && now != j.size {
			return false, msg
		}
	}
	if now > j.size {
		_ = os.Remove(inc)
		f.count(counted, 0)
		return false, fmt.Sprintf("the source sent %d bytes for a %d-byte file", now, j.size)
	}
	if now != j.size {
		return false, fmt.Sprintf("got %d of %d bytes", now, j.size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != j.etag {
		_ = os.Remove(inc)
		f.count(counted, 0)
		return false, "content address mismatch (got " + got + ")"
	}
	err = w.Close()
	w = nil
	if err != nil {
		return false, err.Error()
	}
	if err := os.Rename(inc, b); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// count sets the bytes the P sum holds for one blob.
func (f *fetcher) count(counted *int64, n int64) {
	f.inflight.Add(n - *counted)
	*counted = n
}

// get fetches j from off into w (at off) and h; it returns the file's
// size after and, when the fetch did not end cleanly, why.
func (f *fetcher) get(ctx context.Context, j *fetchJob, w *os.File, h hash.Hash, off int64, buf []byte, counted *int64) (int64, string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.base+j.path, nil)
	if err != nil {
		return off, err.Error()
	}
	if f.hdrName != "" && f.sameOrigin(req) {
		req.Header.Set(f.hdrName, f.hdrValue)
	}
	req.Header.Set("User-Agent", fetchAgent)
	if off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
	}
	// No byte for f.idle: the connection is dropped (curl --speed-limit 1
	// --speed-time 120), the headers' wait included.
	idle := time.AfterFunc(f.idle, cancel)
	defer idle.Stop()
	resp, err := f.client.Do(req)
	if err != nil {
		return off, strings.TrimPrefix(err.Error(), "Get ")
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && off > 0:
		if !strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes "+strconv.FormatInt(off, 10)+"-") {
			return off, "the server answered range " + strconv.Quote(resp.Header.Get("Content-Range")) + " for bytes " + strconv.FormatInt(off, 10) + "-"
		}
	case resp.StatusCode == http.StatusOK:
		if off > 0 {
			// No range support: the whole file, from the start.
			if _, err := w.Seek(0, io.SeekStart); err != nil {
				return off, err.Error()
			}
			if err := w.Truncate(0); err != nil {
				return off, err.Error()
			}
			h.Reset()
			if len(j.etag) == 40 {
				fmt.Fprintf(h, "blob %d\x00", j.size)
			}
			off = 0
			f.count(counted, 0)
		}
	default:
		return off, "The requested URL returned error: " + strconv.Itoa(resp.StatusCode)
	}
	// One byte more than the file can hold is read: a source that sends
	// more is caught (and its partial removed).
	now := off
	body := io.LimitReader(resp.Body, j.size-off+1)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			idle.Reset(f.idle)
			if _, err := w.Write(buf[:n]); err != nil {
				return now, "writing " + w.Name() + ": " + err.Error()
			}
			h.Write(buf[:n])
			now += int64(n)
			f.count(counted, now)
		}
		if rerr == io.EOF {
			return now, ""
		}
		if rerr != nil {
			if ctx.Err() != nil && now < j.size {
				return now, "no byte for " + f.idle.String() + " or cancelled: " + rerr.Error()
			}
			return now, rerr.Error()
		}
	}
}

// newBlobHash is the hash of a blob's content address: sha256 for an LFS
// etag (64 hex), git's blob sha1 ("blob SIZE\0" then the bytes) for a
// regular file's (40 hex).
func newBlobHash(etag string, size int64) hash.Hash {
	if len(etag) == 64 {
		return sha256.New()
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	return h
}

// flock takes an exclusive flock on fd, waiting; ctx ends the wait.
func flock(ctx context.Context, fd *os.File) error {
	for {
		err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("flock %s: %w", fd.Name(), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
