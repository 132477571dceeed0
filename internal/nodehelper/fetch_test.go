package nodehelper

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/hubtest"
)

const fetchToken = "hf_fetchHelperToken0123456789"

// fetchRepo: two LFS files (on the CDN, behind a redirect), regular files
// (git sha1 addresses), an empty file and a name that needs escaping.
func fetchRepo() (*hubtest.Repo, *hubtest.Commit) {
	r := hubtest.GenRepo("acme/fetch", 7,
		hubtest.FileSpec{Path: "model-1.safetensors", Size: 3<<20 + 5, LFS: true},
		hubtest.FileSpec{Path: "model-2.safetensors", Size: 1 << 20, LFS: true},
		hubtest.FileSpec{Path: "config.json", Size: 700},
		hubtest.FileSpec{Path: "tok/tokenizer.json", Size: 300 << 10},
		hubtest.FileSpec{Path: "with space.txt", Size: 10},
		hubtest.FileSpec{Path: "README.md", Size: 0},
	)
	return r, r.Main()
}

func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// fetchInput is hubfetch's stdin for files: the config line, job lines
// as the receiver writes them (some B, some S, other kinds mixed in), END.
func fetchInput(token string, files []*hubtest.File) string {
	var b strings.Builder
	if token != "" {
		b.WriteString(`header = "Authorization: Bearer ` + token + `"`)
	}
	b.WriteString("\nX\t" + strings.Repeat("0", 40) + "\t0\t-\n")
	for i, f := range files {
		t := "B"
		if i%2 == 1 {
			t = "S"
		}
		fmt.Fprintf(&b, "%s\t%s\t%d\t%s\n", t, f.Etag, f.Size, escapePath(f.Path))
	}
	b.WriteString("M\tsub\nEND\nL\tnot a job\n")
	return b.String()
}

type fetchRun struct {
	code int
	out  string
	err  string
	d    map[string]string // etag -> size (D lines)
	e    map[string]string // etag -> message (E lines)
	p    []string
}

func runFetch(t *testing.T, srv *hubtest.Server, c *hubtest.Commit, blobs, token string, files []*hubtest.File, par int) fetchRun {
	t.Helper()
	var out, errb bytes.Buffer
	base := srv.URL + "/acme/fetch/resolve/" + c.SHA + "/"
	code := Main([]string{"hubfetch", blobs, filepath.Join(blobs, ".sparkform-incoming."+c.SHA), fmt.Sprint(par), base},
		strings.NewReader(fetchInput(token, files)), &out, &errb)
	r := fetchRun{code: code, out: out.String(), err: errb.String(), d: map[string]string{}, e: map[string]string{}}
	for _, l := range strings.Split(strings.TrimSuffix(r.out, "\n"), "\n") {
		f := strings.SplitN(l, "\t", 3)
		switch {
		case f[0] == "D" && len(f) == 3:
			r.d[f[1]] = f[2]
		case f[0] == "E" && len(f) == 3:
			r.e[f[1]] = f[2]
		case f[0] == "P" && len(f) == 2:
			r.p = append(r.p, f[1])
		default:
			t.Errorf("hubfetch printed %q: not a P, D or E line", l)
		}
	}
	return r
}

func shortRetries(t *testing.T) {
	old := fetchRetryWait
	fetchRetryWait = 10 * time.Millisecond
	t.Cleanup(func() { fetchRetryWait = old })
}

// checkBlobs: every file of files is BLOBS/ETAG with its bytes, nothing
// else is there (no .incomplete, no inbox).
func checkBlobs(t *testing.T, blobs string, files []*hubtest.File) {
	t.Helper()
	want := map[string]bool{}
	for _, f := range files {
		want[f.Etag] = true
		b, err := os.ReadFile(filepath.Join(blobs, f.Etag))
		if err != nil {
			t.Errorf("%s: %v", f.Path, err)
			continue
		}
		if !bytes.Equal(b, f.Bytes()) {
			t.Errorf("%s: the blob's bytes differ from the file's", f.Path)
		}
	}
	ents, _ := os.ReadDir(blobs)
	for _, e := range ents {
		if !want[e.Name()] {
			t.Errorf("left in blobs/: %s", e.Name())
		}
	}
}

// TestHubFetch: every blob fetched, verified and renamed, the D lines the
// receiver's loop prints, the token sent to the hub and never to the CDN
// (a redirect to another host), the job kinds that are not blobs ignored.
func TestHubFetch(t *testing.T) {
	repo, c := fetchRepo()
	srv := hubtest.NewServer(t, repo)
	srv.SetToken(fetchToken)
	blobs := t.TempDir()
	r := runFetch(t, srv, c, blobs, fetchToken, c.Files, 3)
	if r.code != 0 || len(r.e) > 0 {
		t.Fatalf("hubfetch: status %d, errors %v, stderr %s", r.code, r.e, r.err)
	}
	for _, f := range c.Files {
		if r.d[f.Etag] != fmt.Sprint(f.Size) {
			t.Errorf("%s: D line %q, want its size %d", f.Path, r.d[f.Etag], f.Size)
		}
	}
	if len(r.p) == 0 {
		t.Error("no P line")
	}
	checkBlobs(t, blobs, c.Files)
	cdn := 0
	for _, q := range srv.Log() {
		switch q.Endpoint {
		case hubtest.EndpointCDN:
			cdn++
			if q.Authorized {
				t.Errorf("the token went to the CDN (another host) for %s", q.Path)
			}
		case hubtest.EndpointResolve:
			if !q.Authorized {
				t.Errorf("resolve of %s without the token", q.Path)
			}
		}
	}
	if cdn != 2 {
		t.Errorf("%d CDN requests, want 2 (the LFS files)", cdn)
	}
	if strings.Contains(r.out+r.err, fetchToken) {
		t.Error("the token is in the output")
	}

	// Again: every blob is there, D for each, nothing fetched.
	srv.ResetCounters()
	r = runFetch(t, srv, c, blobs, fetchToken, c.Files, 3)
	if r.code != 0 || len(r.d) != len(c.Files) || srv.TotalBytes() != 0 {
		t.Errorf("second run: status %d, %d D lines, %d bytes fetched", r.code, len(r.d), srv.TotalBytes())
	}
	checkBlobs(t, blobs, c.Files)
}

// TestHubFetchResumes: a partial .incomplete (and a small blob a batch
// left in the inbox) resume from their size: the hub sends only the rest.
func TestHubFetchResumes(t *testing.T) {
	repo, c := fetchRepo()
	srv := hubtest.NewServer(t, repo)
	blobs := t.TempDir()
	big, small := c.File("model-1.safetensors"), c.File("tok/tokenizer.json")
	must(t, os.WriteFile(filepath.Join(blobs, big.Etag+".incomplete"), big.Bytes()[:1<<20+77], 0o644))
	inbox := filepath.Join(blobs, ".sparkform-incoming."+c.SHA)
	must(t, os.MkdirAll(inbox, 0o755))
	must(t, os.WriteFile(filepath.Join(inbox, small.Etag), small.Bytes()[:1000], 0o600))
	r := runFetch(t, srv, c, blobs, "", c.Files, 2)
	if r.code != 0 {
		t.Fatalf("status %d: %v %s", r.code, r.e, r.err)
	}
	checkBlobs(t, blobs, c.Files)
	if got, want := srv.Bytes(big.Path), big.Size-(1<<20+77); got != want {
		t.Errorf("%s: %d bytes fetched, want the %d after the partial", big.Path, got, want)
	}
	if got, want := srv.Bytes(small.Path), small.Size-1000; got != want {
		t.Errorf("%s: %d bytes fetched, want the %d after the inbox's partial", small.Path, got, want)
	}
	if r.p[0] != fmt.Sprint(1<<20+77+1000) {
		t.Errorf("first P %s, want the partials' %d bytes", r.p[0], 1<<20+77+1000)
	}
	if fi, err := os.Stat(filepath.Join(blobs, small.Etag)); err == nil && fi.Mode().Perm() == 0o600 {
		t.Errorf("the inbox blob kept its mode %v", fi.Mode().Perm())
	}
}

// TestHubFetchFaults: cut connections and a throttled server are
// retried and resumed (each byte sent once); a bad byte or a 404 fails
// that blob clearly (status 2, an E line) and nothing of it is left under
// its final name (a mismatched partial is removed, as the script does).
func TestHubFetchFaults(t *testing.T) {
	shortRetries(t)
	for _, tc := range []struct {
		name   string
		fault  func(s *hubtest.Server, c *hubtest.Commit)
		failed string // the file that fails ("" none)
		msg    string
	}{
		{name: "cut", fault: func(s *hubtest.Server, c *hubtest.Commit) {
			s.CutAfter("model-1.safetensors", 1<<20+3, 2)
			s.CutAfter("tok/tokenizer.json", 4000, 1)
		}},
		{name: "throttled", fault: func(s *hubtest.Server, c *hubtest.Commit) { s.Throttle(8 << 20) }},
		{name: "bad byte", fault: func(s *hubtest.Server, c *hubtest.Commit) { s.Corrupt("model-2.safetensors", 12345) },
			failed: "model-2.safetensors", msg: "content address mismatch (got "},
		{name: "bad byte git", fault: func(s *hubtest.Server, c *hubtest.Commit) { s.Corrupt("config.json", 3) },
			failed: "config.json", msg: "content address mismatch (got "},
		{name: "404", fault: func(s *hubtest.Server, c *hubtest.Commit) { s.Fail404("config.json") },
			failed: "config.json", msg: "returned error: 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, c := fetchRepo()
			srv := hubtest.NewServer(t, repo)
			tc.fault(srv, c)
			blobs := t.TempDir()
			r := runFetch(t, srv, c, blobs, "", c.Files, 4)
			if tc.failed == "" {
				if r.code != 0 {
					t.Fatalf("status %d: %v", r.code, r.e)
				}
				checkBlobs(t, blobs, c.Files)
				for _, f := range c.Files {
					if got := srv.Bytes(f.Path); got != f.Size {
						t.Errorf("%s: the hub sent %d bytes for %d", f.Path, got, f.Size)
					}
				}
				return
			}
			bad := c.File(tc.failed)
			if r.code != 2 || len(r.e) != 1 || !strings.Contains(r.e[bad.Etag], tc.msg) {
				t.Fatalf("status %d, E lines %v: want 2 and one E for %s with %q", r.code, r.e, tc.failed, tc.msg)
			}
			if _, ok := r.d[bad.Etag]; ok {
				t.Errorf("D line for the failed blob")
			}
			var good []*hubtest.File
			for _, f := range c.Files {
				if f != bad {
					good = append(good, f)
				}
			}
			checkBlobs(t, blobs, good)
			if n := srv.Requests(hubtest.EndpointResolve); tc.name == "404" && n < 1+fetchRetries {
				t.Errorf("%d resolve requests: the failing blob was not retried", n)
			}
		})
	}
}

// TestHubFetchKilled: the helper killed (-9) mid-transfer leaves only
// .incomplete files; the next run resumes them, and the hub sends each
// byte once over both runs.
func TestHubFetchKilled(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sparkform-node")
	build := exec.Command("go", "build", "-o", bin, "github.com/sparkform/sparkform/cmd/sparkform-node")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v: %s", err, out)
	}
	repo, c := fetchRepo()
	srv := hubtest.NewServer(t, repo)
	srv.SetToken(fetchToken)
	srv.Throttle(2 << 20)
	blobs := t.TempDir()
	start := func() (*exec.Cmd, *bytes.Buffer) {
		var out bytes.Buffer
		cmd := exec.Command(bin, "hubfetch", blobs, filepath.Join(blobs, "inbox"), "4", srv.URL+"/acme/fetch/resolve/"+c.SHA+"/")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(fetchInput(fetchToken, c.Files)), &out, &out
		must(t, cmd.Start())
		return cmd, &out
	}
	cmd, _ := start()
	for deadline := time.Now().Add(20 * time.Second); srv.TotalBytes() < 2<<20; {
		if time.Now().After(deadline) {
			t.Fatal("no transfer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	ents, _ := os.ReadDir(blobs)
	partial := 0
	have := map[string]int64{} // etag -> bytes on disk after the kill
	for _, e := range ents {
		fi, _ := e.Info()
		if etag, ok := strings.CutSuffix(e.Name(), ".incomplete"); ok {
			if fi.Size() > 0 {
				partial++
			}
			have[etag] = fi.Size()
			continue
		}
		have[e.Name()] = fi.Size()
		f := fileOf(c, e.Name())
		if f == nil || f.Size != fi.Size() {
			t.Errorf("after the kill: %s is not a whole blob", e.Name())
		}
	}
	if partial == 0 {
		t.Fatal("no partial blob: the kill came after the transfer")
	}
	// The hub's handlers for the killed connections end (their last
	// writes are counted) before the counters start again.
	for n := int64(-1); n != srv.TotalBytes(); {
		n = srv.TotalBytes()
		time.Sleep(300 * time.Millisecond)
	}
	srv.Throttle(0)
	srv.ResetCounters()
	cmd, out := start()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("second run: %v: %s", err, out)
	}
	checkBlobs(t, blobs, c.Files)
	for _, f := range c.Files {
		if got, want := srv.Bytes(f.Path), f.Size-have[f.Etag]; got != want {
			t.Errorf("%s: %d bytes sent after the kill, want %d: the %d on the node are not fetched again", f.Path, got, want, have[f.Etag])
		}
	}
}

func fileOf(c *hubtest.Commit, etag string) *hubtest.File {
	for _, f := range c.Files {
		if f.Etag == etag {
			return f
		}
	}
	return nil
}

func TestHubFetchUsage(t *testing.T) {
	for _, args := range [][]string{{"hubfetch"}, {"hubfetch", "a", "b", "0", "http://x/"}, {"hubfetch", "a", "b", "2", "ftp-ish"},
		{"hubfetch", "-links"}, {"hubfetch", "-links", "", "a", "b", "2", "http://x/"}, {"hubfetch", "-links", "s", "a", "b", "2"}} {
		if code := Main(args, strings.NewReader(""), io.Discard, io.Discard); code != ExitUsage {
			t.Errorf("%q: status %d, want %d", args, code, ExitUsage)
		}
	}
	var errb bytes.Buffer
	code := Main([]string{"hubfetch", t.TempDir(), "x", "1", "http://127.0.0.1:1/"}, strings.NewReader("header = \"Authorization: Bearer sec\\ret\"\nEND\n"), io.Discard, &errb)
	if code != 1 || strings.Contains(errb.String(), "sec") {
		t.Errorf("a bad config line: status %d, stderr %q (must not echo it)", code, errb.String())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestTake: exactly N bytes, the rest left on stdin for the next reader
// (a pipe, as the receiver's stdin is).
func TestTake(t *testing.T) {
	r, w, err := os.Pipe()
	must(t, err)
	go func() {
		_, _ = io.WriteString(w, "B\tx\nEND\nTAR...")
		w.Close()
	}()
	var out bytes.Buffer
	if code := Main([]string{"take", "8"}, r, &out, io.Discard); code != 0 || out.String() != "B\tx\nEND\n" {
		t.Fatalf("take 8: status %d, %q", code, out.String())
	}
	rest, _ := io.ReadAll(r)
	if string(rest) != "TAR..." {
		t.Errorf("left on stdin %q, want the tar", rest)
	}
	if code := Main([]string{"take", "9"}, strings.NewReader("short"), io.Discard, io.Discard); code != 1 {
		t.Errorf("short stdin: status %d, want 1", code)
	}
	if code := Main([]string{"take", "x"}, strings.NewReader(""), io.Discard, io.Discard); code != ExitUsage {
		t.Errorf("take x: status %d", code)
	}
}

// TestLinks: the links of the L lines written, a right one kept, a wrong
// link and a file replaced, one PATH line each; an unclean path refused.
func TestLinks(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Symlink("../../blobs/aa", filepath.Join(dir, "keep")))
	must(t, os.Symlink("../../blobs/old", filepath.Join(dir, "wrong")))
	must(t, os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644))
	in := "B\taa\t1\tkeep\nM\tsub\nL\t../../blobs/aa\tkeep\nL\t../../blobs/bb\twrong\nL\t../../blobs/cc\tfile\n" +
		"L\t../../../blobs/dd\tsub/new link \\ é\nEND\n"
	var out bytes.Buffer
	if code := Main([]string{"links", dir}, strings.NewReader(in), &out, io.Discard); code != 0 {
		t.Fatalf("status %d", code)
	}
	if want := "keep\nwrong\nfile\nsub/new link \\ é\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	for p, want := range map[string]string{"keep": "../../blobs/aa", "wrong": "../../blobs/bb", "file": "../../blobs/cc", "sub/new link \\ é": "../../../blobs/dd"} {
		if got, err := os.Readlink(filepath.Join(dir, p)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", p, got, err, want)
		}
	}
	for _, bad := range []string{"../up", "/abs", "a/../../b", "missing/dir"} {
		if code := Main([]string{"links", dir}, strings.NewReader("L\tt\t"+bad+"\n"), io.Discard, io.Discard); code != 1 {
			t.Errorf("%q: status %d, want 1", bad, code)
		}
	}
}

// TestHubFetchLinks: with -links, a blob's links are written once it is
// complete (a blob that fails gets none, so no link ever names a blob
// that is not whole), links of blobs that are not jobs and paths that
// leave the folder are not written.
func TestHubFetchLinks(t *testing.T) {
	shortRetries(t)
	repo, c := fetchRepo()
	srv := hubtest.NewServer(t, repo)
	root := t.TempDir()
	blobs := filepath.Join(root, "blobs")
	snap := filepath.Join(root, "snapshots", c.SHA)
	must(t, os.MkdirAll(blobs, 0o755))
	must(t, os.MkdirAll(filepath.Join(snap, "tok"), 0o755))
	// config.json is always served with a bad byte: it fails, and its
	// link must not appear.
	bad := fileByPath(c, "config.json")
	srv.Corrupt(bad.Path, 3)
	var in strings.Builder
	in.WriteString("\n")
	for _, f := range c.Files {
		fmt.Fprintf(&in, "B\t%s\t%d\t%s\n", f.Etag, f.Size, escapePath(f.Path))
		up := strings.Repeat("../", strings.Count(f.Path, "/")+2)
		fmt.Fprintf(&in, "L\t%sblobs/%s\t%s\n", up, f.Etag, f.Path)
	}
	other := strings.Repeat("e", 64)
	fmt.Fprintf(&in, "L\t../../blobs/%s\tnot-a-job.bin\n", other)
	fmt.Fprintf(&in, "L\t../../blobs/%s\t../escape\n", c.Files[0].Etag)
	in.WriteString("END\n")
	var out, errb bytes.Buffer
	code := Main([]string{"hubfetch", "-links", snap, blobs, filepath.Join(blobs, ".sparkform-incoming."+c.SHA), "2",
		srv.URL + "/acme/fetch/resolve/" + c.SHA + "/"}, strings.NewReader(in.String()), &out, &errb)
	if code != 2 {
		t.Fatalf("hubfetch: status %d, want 2 (one blob fails); stderr %s", code, errb.String())
	}
	for _, f := range c.Files {
		at := filepath.Join(snap, f.Path)
		got, err := os.Readlink(at)
		if f == bad {
			if err == nil {
				t.Errorf("%s: a link (%s) to a blob that failed", f.Path, got)
			}
			continue
		}
		want := strings.Repeat("../", strings.Count(f.Path, "/")+2) + "blobs/" + f.Etag
		if err != nil || got != want {
			t.Errorf("%s: link %q (%v), want %q", f.Path, got, err, want)
			continue
		}
		if st, err := os.Stat(at); err != nil || st.Size() != f.Size {
			t.Errorf("%s: the link does not reach its whole blob: %v", f.Path, err)
		}
	}
	for _, p := range []string{filepath.Join(snap, "not-a-job.bin"), filepath.Join(root, "snapshots", "escape")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

func fileByPath(c *hubtest.Commit, p string) *hubtest.File {
	for _, f := range c.Files {
		if f.Path == p {
			return f
		}
	}
	panic("no file " + p)
}
