package hubstage

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"golang.org/x/crypto/ssh"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// peerHub is a hub cache with one repository whose blobs are named by
// their real content addresses: git blob sha1 for regular files, sha256
// for LFS files, as the hub names them.
type peerHub struct {
	dir, repo string
	commit    string
	files     map[string][]byte // snapshot path -> content
	etags     map[string]string // snapshot path -> etag
}

func gitBlobSHA1(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// content is deterministic bytes of size n for name.
func content(name string, n int) []byte {
	out := make([]byte, 0, n+32)
	seed := sha256.Sum256([]byte(name))
	for len(out) < n {
		seed = sha256.Sum256(seed[:])
		out = append(out, seed[:]...)
	}
	return out[:n]
}

// makePeerHub writes repo_id "org/model" at commit under dir/hub with the
// given files (path -> size; sizes over 1000 are LFS files), ref main,
// readable by every test user.
func makePeerHub(t *testing.T, dir string, files map[string]int) *peerHub {
	t.Helper()
	h := &peerHub{dir: filepath.Join(dir, "hub"), commit: commitOf(dir), files: map[string][]byte{}, etags: map[string]string{}}
	h.repo = filepath.Join(h.dir, "models--org--model")
	snap := filepath.Join(h.repo, "snapshots", h.commit)
	for p, n := range files {
		b := content(p, n)
		etag := gitBlobSHA1(b)
		if n > 1000 {
			etag = sum(string(b))
		}
		h.files[p], h.etags[p] = b, etag
		blob := filepath.Join(h.repo, "blobs", etag)
		must(t, os.MkdirAll(filepath.Dir(blob), 0o755))
		must(t, os.WriteFile(blob, b, 0o644))
		at := filepath.Join(snap, p)
		must(t, os.MkdirAll(filepath.Dir(at), 0o755))
		rel, err := filepath.Rel(filepath.Dir(at), blob)
		must(t, err)
		must(t, os.Symlink(rel, at))
	}
	must(t, os.MkdirAll(filepath.Join(h.repo, "refs"), 0o755))
	must(t, os.WriteFile(filepath.Join(h.repo, "refs", "main"), []byte(h.commit), 0o644))
	return h
}

// chownTree gives dir to the bed's user (the nodes log in as it).
func chownTree(t *testing.T, dir string) {
	t.Helper()
	u, err := user.Lookup(testbed.User)
	must(t, err)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	must(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}))
}

// nodeValue is the value node.x[k] gives for n (engine/config.NodeValue).
func nodeValue(n sdk.Node) cty.Value {
	hop := cty.Object(map[string]cty.Type{"host": cty.String, "port": cty.Number, "user": cty.String,
		"identity_files": cty.List(cty.String), "identities_only": cty.Bool})
	return cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal(n.Name), "transport": cty.StringVal(n.Transport), "host": cty.StringVal(n.Host),
		"port": cty.NumberIntVal(int64(n.Port)), "user": cty.StringVal(n.User), "identity_file": cty.StringVal(n.IdentityFile),
		"known_hosts": cty.StringVal(n.KnownHosts), "become": cty.BoolVal(n.Become), "timeout": cty.StringVal(n.Timeout.String()),
		"ssh_config": cty.StringVal("none"), "identity_files": cty.ListValEmpty(cty.String), "identities_only": cty.False,
		"proxy_jump": cty.ListValEmpty(hop),
	})
}

// peerBed is two sshd nodes: S (the source) and D (the destination).
type peerBed struct {
	bed    *testbed.Bed
	pool   *node.Pool
	S, D   sdk.Node
	sc, dc node.Conn
	hub    *peerHub
	// authKeys is S's login user's ~/.ssh/authorized_keys; akBefore its
	// content when the bed started (nil: no file).
	authKeys string
	akBefore []byte
}

// checkAuthKeysRestored fails t unless authorized_keys is as it was when
// the bed started (gone when there was none). One-time key lines are left
// out of the comparison: tests in other processes (other packages) copy
// from nodes of their own beds, which log in as the same user; each test
// checks its own keys by id (keyLines) or by owner (ownerRecords).
func (b *peerBed) checkAuthKeysRestored(t *testing.T) {
	t.Helper()
	now, err := os.ReadFile(b.authKeys)
	switch {
	case b.akBefore == nil && err == nil && len(oneTimeLines(now)) == 0:
		t.Errorf("authorized_keys was created and left behind:\n%q", now)
	case b.akBefore == nil && err == nil && len(userLines(now)) > 0:
		t.Errorf("authorized_keys holds lines that are no one-time keys:\n%s", now)
	case b.akBefore != nil && !slices.Equal(userLines(now), userLines(b.akBefore)):
		t.Errorf("authorized_keys changed:\n%s\nwas:\n%s", now, b.akBefore)
	}
}

// userLines are the lines of an authorized_keys that are not one-time
// keys (the last one without its newline, if it has none).
func userLines(data []byte) []string {
	var out []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if l != "" && !strings.Contains(l, " "+keyMarker) {
			out = append(out, strings.TrimSuffix(l, "\n"))
		}
	}
	return out
}

func oneTimeLines(data []byte) []string {
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, " "+keyMarker) {
			out = append(out, l)
		}
	}
	return out
}

// ownerRecords are the names of the key records on S that owner has.
func (b *peerBed) ownerRecords(t *testing.T, owner string) []string {
	t.Helper()
	ents, _ := os.ReadDir(b.recordDir(t))
	var out []string
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(b.recordDir(t), e.Name()))
		if err == nil && strings.Contains(string(data), "\nowner "+owner+"\n") {
			out = append(out, e.Name())
		}
	}
	return out
}

func startPeerBed(t *testing.T, files map[string]int) *peerBed {
	t.Helper()
	for _, tool := range []string{"ssh", "ssh-keyscan"} {
		_, err := exec.LookPath(tool)
		realpart.Need(t, tool+" (apt-get install openssh-client)", err)
	}
	realpart.Need(t, "the sshd test bed", testbed.Available())
	bed, err := testbed.Start(t.TempDir(), 2)
	must(t, err)
	t.Cleanup(func() {
		if err := bed.Stop(); err != nil {
			t.Errorf("testbed stop: %v", err)
		}
	})
	pool := node.NewPool()
	t.Cleanup(func() { pool.Close() })
	b := &peerBed{bed: bed, pool: pool, S: bed.Nodes[0].SDK(), D: bed.Nodes[1].SDK()}
	b.S.Name, b.D.Name = `node.spark["s"]`, `node.spark["d"]`
	ctx := context.Background()
	b.sc, err = pool.Get(ctx, b.S)
	must(t, err)
	b.dc, err = pool.Get(ctx, b.D)
	must(t, err)
	u, err := user.Lookup(testbed.User)
	must(t, err)
	b.authKeys = filepath.Join(u.HomeDir, ".ssh", "authorized_keys")
	b.akBefore, _ = os.ReadFile(b.authKeys)
	b.hub = makePeerHub(t, bed.Nodes[0].Root, files)
	chownTree(t, b.hub.dir)
	return b
}

func (b *peerBed) spec(transfer string) *snapSpec {
	return &snapSpec{HubDir: filepath.Join(b.bed.Nodes[1].Root, "hub"), RepoID: "org/model", RepoType: "model",
		Revision: "main", SourceNode: nodeValue(b.S), SourceHubDir: b.hub.dir, Transfer: transfer}
}

func (b *peerBed) env(dst sdk.Node) *snapEnv {
	return &snapEnv{conn: b.pool.Get, dst: dst, getenv: func(string) string { return "" }}
}

// keyLines are S's authorized_keys lines of the one-time key id.
func (b *peerBed) keyLines(t *testing.T, id string) []string {
	t.Helper()
	data, err := os.ReadFile(b.authKeys)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	must(t, err)
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasSuffix(l, " "+keyMarker+id) {
			out = append(out, l)
		}
	}
	return out
}

// recordDir is the folder of the one-time keys' restore records on S.
func (b *peerBed) recordDir(t *testing.T) string {
	u, err := user.Lookup(testbed.User)
	must(t, err)
	return filepath.Join(u.HomeDir, ".local/state/sparkform/restore", peerKeyKind)
}

// fetch runs the transfer's NodeFetch argv on D with "ETAG OFFSET PATH"
// appended (as the receiver does), its stdout into out on D.
func fetch(ctx context.Context, dc node.Conn, argv []string, f snapFile, offset int64, out string) error {
	cmd := append([]string{"sh", "-c", `out=$1; shift; "$@" >"$out"`, "sh", out}, argv...)
	cmd = append(cmd, f.Etag, strconv.FormatInt(offset, 10), f.Path)
	_, err := dc.Run(ctx, node.Cmd{Argv: cmd})
	return err
}

var peerFiles = map[string]int{"config.json": 321, "model-00001-of-00002.safetensors": 3 << 20,
	"model-00002-of-00002.safetensors": 1 << 20, "tokenizer/vocab.txt": 777, "a b/it's \"odd\".txt": 5}

// TestPeerDirectCopy: D pulls every blob from S itself over S's sshd with
// the one-time key: the bytes are identical, a resumed fetch gives the
// tail, 0 bytes pass through this process; the key line carries restrict,
// the forced serve script, expiry-time and from=; the key serves nothing
// but this repository's blobs; Close takes the key line, the serve script,
// the record and D's key folder away.
func TestPeerDirectCopy(t *testing.T) {
	b := startPeerBed(t, peerFiles)
	ctx := context.Background()
	s := b.spec("direct")
	src, err := newPeerSource(b.env(b.D), s)
	must(t, err)
	if d := src.Describe(); d != `node.spark["s"] direct over `+b.bed.Nodes[0].Addr() {
		t.Errorf("Describe() = %q", d)
	}
	l, err := src.List(ctx, b.dc, s)
	must(t, err)
	if l.Commit != b.hub.commit || len(l.Files) != len(peerFiles) {
		t.Fatalf("listing: commit %s, %d files; want %s, %d", l.Commit, len(l.Files), b.hub.commit, len(peerFiles))
	}
	for i, f := range l.Files {
		if i > 0 && l.Files[i-1].Path >= f.Path {
			t.Errorf("listing not sorted at %s", f.Path)
		}
		if f.Etag != b.hub.etags[f.Path] || f.Size != int64(len(b.hub.files[f.Path])) {
			t.Errorf("listing %s: etag %s size %d; want %s %d", f.Path, f.Etag, f.Size, b.hub.etags[f.Path], len(b.hub.files[f.Path]))
		}
	}

	tr, err := src.Open(ctx, b.dc, s)
	must(t, err)
	defer tr.Close(ctx)
	pt := tr.(*peerTransfer)
	lines := b.keyLines(t, pt.id)
	if len(lines) != 1 {
		t.Fatalf("authorized_keys has %d lines of key %s, want 1", len(lines), pt.id)
	}
	for _, want := range []string{"restrict,", `command="/bin/sh '`, `expiry-time="`, `from="127.0.0.1"`, "ssh-ed25519 "} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("key line %q lacks %q", lines[0], want)
		}
	}
	if fi, err := os.Stat(filepath.Join(pt.dir, "id")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("private key on D: %v %v, want mode 0600", fi, err)
	}
	record := filepath.Join(b.recordDir(t), src.records.Name(pt.id))
	if _, err := os.Stat(record); err != nil {
		t.Errorf("no restore record on S while the key is installed: %v", err)
	}

	argv, stdin, ok := tr.NodeFetch()
	if !ok || stdin != nil {
		t.Fatalf("NodeFetch: ok=%v stdin=%q, want a direct argv", ok, stdin)
	}
	if strings.Contains(strings.Join(argv, " "), "PRIVATE KEY") {
		t.Fatal("the private key is on the command line")
	}
	out := filepath.Join(b.bed.Nodes[1].Root, "got")
	for _, f := range l.Files {
		must(t, fetch(ctx, b.dc, argv, f, 0, out))
		got, err := os.ReadFile(out)
		must(t, err)
		if !bytes.Equal(got, b.hub.files[f.Path]) {
			t.Errorf("%s: D got %d bytes that differ from S's %d", f.Path, len(got), len(b.hub.files[f.Path]))
		}
	}
	var big snapFile // model-00001: resume from the middle
	for _, f := range l.Files {
		if strings.HasPrefix(f.Path, "model-00001") {
			big = f
		}
	}
	must(t, fetch(ctx, b.dc, argv, big, 1234567, out))
	if got, _ := os.ReadFile(out); !bytes.Equal(got, b.hub.files[big.Path][1234567:]) {
		t.Errorf("resumed fetch from 1234567: %d bytes, want the %d-byte tail", len(got), len(b.hub.files[big.Path])-1234567)
	}
	if n := tr.Relayed(); n != 0 {
		t.Errorf("Relayed() = %d after a direct copy, want 0", n)
	}

	// Many blobs in one request: a tar of them, entries named by etag.
	bargv, ok := tr.(*peerTransfer).NodeFetchBatch()
	if !ok {
		t.Fatal("no batch fetch on a direct copy")
	}
	var etags strings.Builder
	for _, f := range l.Files {
		etags.WriteString(f.Etag + "\n")
	}
	xdir := filepath.Join(b.bed.Nodes[1].Root, "batch")
	cmd := append([]string{"sh", "-c", `d=$1; shift; mkdir -p "$d" && "$@" | tar -x -C "$d"`, "sh", xdir}, bargv...)
	_, err = b.dc.Run(ctx, node.Cmd{Argv: cmd, Stdin: strings.NewReader(etags.String())})
	must(t, err)
	for _, f := range l.Files {
		got, err := os.ReadFile(filepath.Join(xdir, f.Etag))
		if err != nil || !bytes.Equal(got, b.hub.files[f.Path]) {
			t.Errorf("batch: %s: %d bytes, %v", f.Path, len(got), err)
		}
	}

	// The key serves blobs of this repository and nothing else.
	for _, bad := range [][]string{{"cat /etc/passwd"}, {"blob", "../../../../etc/passwd", "0"}, {"blob", big.Etag, "-1"},
		{"blob", big.Etag, "1;id"}, {"blob", strings.Repeat("a", 40), "0"}, {"tar", "../x"}, {"tar"}} {
		// The batch argv runs `ssh ... tar`: send raw requests instead.
		raw, ok := strings.CutSuffix(bargv[2], " tar")
		if !ok {
			t.Fatalf("batch argv %q", bargv)
		}
		raw += ` "$@"`
		cmd := append([]string{"sh", "-c", raw, "sh"}, bad...)
		res, err := b.dc.Run(ctx, node.Cmd{Argv: cmd, Stdin: strings.NewReader("../../etc/passwd\n")})
		var ee *node.ExitError
		if !errors.As(err, &ee) || !strings.Contains(ee.Stderr, "sparkform serve: ") {
			t.Errorf("request %q: %v, output %q; want the serve script's refusal", bad, err, res.Stdout)
		}
	}

	// The small blobs went over one master connection, which Close ends.
	if procs := procsWith(pt.dir + "/cm"); len(procs) == 0 {
		t.Error("no ssh master connection on D while the transfer is open")
	}
	must(t, tr.Close(ctx))
	must(t, tr.Close(ctx)) // idempotent
	if procs := procsWith(pt.dir); len(procs) != 0 {
		t.Errorf("processes of the transfer left on D after Close: %q", procs)
	}
	if lines := b.keyLines(t, pt.id); len(lines) != 0 {
		t.Errorf("after Close authorized_keys still has %q", lines)
	}
	if _, err := os.Stat(pt.dir); !os.IsNotExist(err) {
		t.Errorf("D's key folder %s after Close: %v", pt.dir, err)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Errorf("restore record left on S after Close: %v", err)
	}
	if err := fetch(ctx, b.dc, argv, big, 0, out); err == nil {
		t.Error("the one-time key still logs in after Close")
	}
	b.checkAuthKeysRestored(t)
}

// TestPeerKeySweptAfterKill: a transfer killed before its Close (here:
// never closed) leaves its key on S and its key folder on D; the next
// Open of the same snapshot on the same destination removes both before
// it installs its own, and an expired key of another destination goes
// too. A failed Open (D cannot take the key) takes its key back.
func TestPeerKeySweptAfterKill(t *testing.T) {
	b := startPeerBed(t, map[string]int{"config.json": 10})
	ctx := context.Background()
	s := b.spec("")
	src, err := newPeerSource(b.env(b.D), s)
	must(t, err)
	first, err := src.Open(ctx, b.dc, s)
	must(t, err)
	killed := first.(*peerTransfer)
	if len(b.keyLines(t, killed.id)) != 1 {
		t.Fatal("the first key is not installed")
	}

	// Another destination's transfer whose key has expired (a crash two
	// hours ago): its record's expiry is moved into the past.
	other := b.D
	other.Name, other.Port = "node.spark[\"other\"]", b.D.Port // same sshd, another Key
	other.IdentityFiles = []string{"x"}
	osrc, err := newPeerSource(b.env(other), s)
	must(t, err)
	otr, err := osrc.Open(ctx, b.dc, s)
	must(t, err)
	expired := otr.(*peerTransfer)
	rec := filepath.Join(b.recordDir(t), src.records.Name(expired.id))
	data, err := os.ReadFile(rec)
	must(t, err)
	must(t, os.WriteFile(rec, regexp.MustCompile(`expires [0-9]+`).ReplaceAll(data, []byte("expires 1000")), 0o600))

	second, err := src.Open(ctx, b.dc, s)
	must(t, err)
	next := second.(*peerTransfer)
	if lines := b.keyLines(t, killed.id); len(lines) != 0 {
		t.Errorf("the killed transfer's key is still in authorized_keys: %q", lines)
	}
	if _, err := os.Stat(killed.dir); !os.IsNotExist(err) {
		t.Errorf("the killed transfer's key folder on D: %v", err)
	}
	if lines := b.keyLines(t, expired.id); len(lines) != 0 {
		t.Errorf("the expired key is still in authorized_keys: %q", lines)
	}
	if len(b.keyLines(t, next.id)) != 1 {
		t.Error("the next transfer's key is not installed")
	}
	argv, _, _ := next.NodeFetch()
	must(t, fetch(ctx, b.dc, argv, snapFile{Path: "config.json", Etag: b.hub.etags["config.json"]}, 0, filepath.Join(b.bed.Nodes[1].Root, "got")))
	must(t, next.Close(ctx))
	if len(b.keyLines(t, next.id)) != 0 {
		t.Error("key left after Close")
	}

	must(t, otr.Close(ctx)) // its record is gone: it removes its folder on D only

	// A failed Open: D refuses the key folder (TMPDIR is not writable).
	bad := &badTmpConn{Conn: b.dc}
	before, _ := os.ReadFile(b.authKeys)
	if tr, err := src.Open(ctx, bad, s); err == nil || tr != nil {
		t.Fatalf("Open succeeded without a key folder on D: %v", err)
	}
	if bad.installs != 1 {
		t.Fatalf("the failed Open wrote %d key folders on D, want 1 (the key was installed on S first)", bad.installs)
	}
	if after, _ := os.ReadFile(b.authKeys); !bytes.Equal(before, after) {
		t.Errorf("a failed Open left authorized_keys changed:\n%s", after)
	}
	b.checkAuthKeysRestored(t)
	for _, o := range []string{src.owner(s), osrc.owner(s)} {
		if recs := b.ownerRecords(t, o); len(recs) != 0 {
			t.Errorf("records of owner %s left on S: %v", o, recs)
		}
	}
}

// badTmpConn makes the key folder on D fail, as a full /tmp would.
type badTmpConn struct {
	node.Conn
	installs int
}

func (c *badTmpConn) Run(ctx context.Context, cmd node.Cmd) (node.Result, error) {
	if len(cmd.Argv) > 2 && cmd.Argv[2] == dstKeyScript {
		c.installs++
		cmd.Env = map[string]string{"TMPDIR": "/nonexistent/tmp"}
	}
	return c.Conn.Run(ctx, cmd)
}

// TestPeerHostKeyRefused: D gets S's host key by ssh-keyscan, and uses it
// only when it matches the operator's known_hosts entry for S. Another
// machine answering at source_address (here: D's own sshd), a known_hosts
// with another key for S, or none at all, are refused at List and at
// Open, and nothing is written on S.
func TestPeerHostKeyRefused(t *testing.T) {
	b := startPeerBed(t, map[string]int{"config.json": 10})
	ctx := context.Background()
	wrongKH := filepath.Join(t.TempDir(), "known_hosts")
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	k, err := ssh.NewPublicKey(pub)
	must(t, err)
	must(t, os.WriteFile(wrongKH, []byte(testbed.KnownHostsLine(b.S.Host, b.S.Port, k)), 0o644))
	emptyKH := filepath.Join(t.TempDir(), "known_hosts")
	must(t, os.WriteFile(emptyKH, nil, 0o644))
	for _, tc := range []struct {
		name, addr, kh string
		want           error
	}{
		{"another machine at source_address", b.bed.Nodes[1].Addr(), "", node.ErrHostKeyChanged},
		{"known_hosts has another key", "", wrongKH, node.ErrHostKeyChanged},
		{"known_hosts has no key", "", emptyKH, node.ErrHostKeyUnknown},
		{"nothing listens", "127.0.0.1:1", "", ErrSourceUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := b.spec("direct")
			s.SourceAddress = tc.addr
			src, err := newPeerSource(b.env(b.D), s)
			must(t, err)
			src.knownHosts = tc.kh
			_, err = src.List(ctx, b.dc, s)
			if !errors.Is(err, tc.want) {
				t.Fatalf("List: %v, want %v", err, tc.want)
			}
			if tc.want == ErrSourceUnreachable && !strings.Contains(err.Error(), `transfer = "relay"`) {
				t.Errorf("the error does not suggest the relay: %v", err)
			}
			tr, err := src.Open(ctx, b.dc, s)
			if tr != nil {
				tr.Close(ctx)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			b.checkAuthKeysRestored(t)
		})
	}
}

// TestPeerRelayCounted: transfer = "relay" streams each blob from S
// through this process (any offset), counts every byte, and names the
// relay in the plan words; nothing is installed on S.
func TestPeerRelayCounted(t *testing.T) {
	b := startPeerBed(t, peerFiles)
	ctx := context.Background()
	s := b.spec("relay")
	src, err := newPeerSource(b.env(b.D), s)
	must(t, err)
	if d := src.Describe(); !strings.Contains(d, "relayed through sparkform") {
		t.Errorf("Describe() = %q", d)
	}
	l, err := src.List(ctx, b.dc, s)
	must(t, err)
	tr, err := src.Open(ctx, b.dc, s)
	must(t, err)
	defer tr.Close(ctx)
	if _, _, ok := tr.NodeFetch(); ok {
		t.Fatal("a relay offers a node fetch")
	}
	var want int64
	for _, f := range l.Files {
		off := f.Size / 3
		rc, err := tr.Stream(ctx, f, off)
		must(t, err)
		got, err := io.ReadAll(rc)
		must(t, err)
		must(t, rc.Close())
		if !bytes.Equal(got, b.hub.files[f.Path][off:]) {
			t.Errorf("%s from %d: %d bytes differ", f.Path, off, len(got))
		}
		want += f.Size - off
	}
	if n := tr.Relayed(); n != want {
		t.Errorf("Relayed() = %d, want %d", n, want)
	}
	b.checkAuthKeysRestored(t)
	if _, err := tr.Stream(ctx, snapFile{Path: "x", Etag: "../../etc/passwd"}, 0); err == nil {
		t.Error("Stream took a path for an etag")
	}
}

// TestPeerKeyKeepsUserFile: an authorized_keys the user has (their own
// key, no newline at its end, mode 0640) is given back byte for byte and
// with its mode after a copy; the one-time key line was on a line of its
// own while it was there.
func TestPeerKeyKeepsUserFile(t *testing.T) {
	b := startPeerBed(t, map[string]int{"config.json": 10})
	ctx := context.Background()
	u, err := user.Lookup(testbed.User)
	must(t, err)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if b.akBefore == nil {
		must(t, os.MkdirAll(filepath.Dir(b.authKeys), 0o700))
		must(t, os.Chown(filepath.Dir(b.authKeys), uid, gid))
		t.Cleanup(func() { os.RemoveAll(filepath.Dir(b.authKeys)) })
	} else {
		t.Cleanup(func() { os.WriteFile(b.authKeys, b.akBefore, 0o600) })
	}
	own := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwnKeyOfTheUserXXXXXXXXXXXXXXXXXXXXXXXXXXX user@laptop"
	must(t, os.WriteFile(b.authKeys, []byte(own), 0o640))
	must(t, os.Chmod(b.authKeys, 0o640))
	must(t, os.Chown(b.authKeys, uid, gid))

	s := b.spec("direct")
	src, err := newPeerSource(b.env(b.D), s)
	must(t, err)
	tr, err := src.Open(ctx, b.dc, s)
	must(t, err)
	id := tr.(*peerTransfer).id
	data, err := os.ReadFile(b.authKeys)
	must(t, err)
	if !strings.HasPrefix(string(data), own+"\n") || len(b.keyLines(t, id)) != 1 {
		t.Errorf("with the key installed authorized_keys is:\n%s", data)
	}
	argv, _, _ := tr.NodeFetch()
	must(t, fetch(ctx, b.dc, argv, snapFile{Path: "config.json", Etag: b.hub.etags["config.json"]}, 0, filepath.Join(b.bed.Nodes[1].Root, "got")))
	must(t, tr.Close(ctx))
	after, err := os.ReadFile(b.authKeys)
	must(t, err)
	if !slices.Equal(userLines(after), []string{own}) || len(oneTimeLines(after)) == 0 && string(after) != own {
		t.Errorf("authorized_keys after Close:\n%q\nwant\n%q", after, own)
	}
	fi, err := os.Stat(b.authKeys)
	must(t, err)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v after Close, want 0640", fi.Mode().Perm())
	}
}

// TestPeerLoginRefused: when S's sshd does not take the one-time key
// (here: it is written to a file sshd does not read), Open fails at once
// with a clear error suggesting the relay, and takes the key back.
func TestPeerLoginRefused(t *testing.T) {
	b := startPeerBed(t, map[string]int{"config.json": 10})
	ctx := context.Background()
	s := b.spec("direct")
	src, err := newPeerSource(b.env(b.D), s)
	must(t, err)
	other := filepath.Join(b.bed.Nodes[0].Root, "not-read-by-sshd", "authorized_keys")
	src.authorizedKeys = other
	tr, err := src.Open(ctx, b.dc, s)
	if !errors.Is(err, ErrSourceUnreachable) || tr != nil || !strings.Contains(err.Error(), `transfer = "relay"`) {
		t.Fatalf("Open: %v, want ErrSourceUnreachable suggesting the relay", err)
	}
	t.Log(err)
	if _, err := os.Stat(filepath.Dir(other)); !os.IsNotExist(err) {
		t.Errorf("the key file (and the folder made for it) left behind: %v", err)
	}
	b.checkAuthKeysRestored(t)
}

// procsWith lists the command lines of this machine's processes (the
// nodes run here) that contain s.
func procsWith(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// TestPeerSourceConfig: what source_node, source_address and transfer
// accept, and the clear errors for the rest (no node is reached).
func TestPeerSourceConfig(t *testing.T) {
	src := sdk.Node{Name: `node.spark["a"]`, Transport: "ssh", Host: "10.0.0.1", Port: 2222, User: "u"}
	dst := sdk.Node{Name: `node.spark["b"]`, Transport: "ssh", Host: "10.0.0.2", Port: 22, User: "u"}
	local := sdk.Node{Name: "node.local", Transport: "local"}
	for _, tc := range []struct {
		name      string
		src       cty.Value
		addr, xfr string
		srcHub    string
		wantDesc  string
		wantErr   string
	}{
		{name: "defaults", src: nodeValue(src), wantDesc: `node.spark["a"] direct over 10.0.0.1:2222`},
		{name: "an address", src: nodeValue(src), addr: "192.168.100.1", wantDesc: `node.spark["a"] direct over 192.168.100.1:2222`},
		{name: "an address and port", src: nodeValue(src), addr: "192.168.100.1:22", wantDesc: `node.spark["a"] direct over 192.168.100.1:22`},
		{name: "IPv6", src: nodeValue(src), addr: "[fd00::1]:22", wantDesc: `node.spark["a"] direct over [fd00::1]:22`},
		{name: "bare IPv6", src: nodeValue(src), addr: "fd00::1", wantDesc: `node.spark["a"] direct over [fd00::1]:2222`},
		{name: "relay", src: nodeValue(src), xfr: "relay", wantDesc: `node.spark["a"] relayed through sparkform (every byte passes through this machine)`},
		{name: "relay from this machine", src: nodeValue(local), xfr: "relay", wantDesc: "node.local relayed through sparkform (every byte passes through this machine)"},
		{name: "direct from this machine", src: nodeValue(local), wantErr: "use source_local_dir, or transfer = \"relay\""},
		{name: "not a node", src: cty.StringVal("spark-01"), wantErr: "source_node: the value is not a node"},
		{name: "bad transfer", src: nodeValue(src), xfr: "rsync", wantErr: `transfer "rsync"`},
		{name: "an option for an address", src: nodeValue(src), addr: "-oProxyCommand=x", wantErr: "is not a host name or address"},
		{name: "a bad port", src: nodeValue(src), addr: "h:99999", wantErr: "port \"99999\" is not 1-65535"},
		{name: "itself", src: nodeValue(dst), wantErr: "is the destination node and source_hub_dir is hub_dir"},
		{name: "itself, another hub", src: nodeValue(dst), srcHub: "/other/hub", wantDesc: `node.spark["b"] direct over 10.0.0.2:22`},
		{name: "a relative source_hub_dir", src: nodeValue(src), srcHub: "hub", wantErr: "source_hub_dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapSpec{HubDir: "/srv/hub", RepoID: "org/model", RepoType: "model", Revision: "main",
				SourceNode: tc.src, SourceAddress: tc.addr, Transfer: tc.xfr, SourceHubDir: tc.srcHub}
			p, err := newPeerSource(&snapEnv{dst: dst}, s)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrBadConfig with %q", err, tc.wantErr)
				}
				return
			}
			must(t, err)
			if d := p.Describe(); d != tc.wantDesc {
				t.Errorf("Describe() = %q, want %q", d, tc.wantDesc)
			}
		})
	}
}

// TestPeerDirectLoginsPerMaster: every blob of a direct copy, big ones
// included, is a session on one of the master connections the transfer
// opened (min(parallel, maxMasters) logins with the one-time key on S in
// all, however many blobs), not a login (a handshake) each; the batch too.
// Close ends the masters.
func TestPeerDirectLoginsPerMaster(t *testing.T) {
	files := map[string]int{"config.json": 321, "a.safetensors": 17 << 20, "b.safetensors": 17 << 20, "c.safetensors": 5 << 20}
	b := startPeerBed(t, files)
	ctx := context.Background()
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallel %d", par), func(t *testing.T) {
			s := b.spec("direct")
			s.Parallel = par
			src, err := newPeerSource(b.env(b.D), s)
			must(t, err)
			l, err := src.List(ctx, b.dc, s)
			must(t, err)
			tr, err := src.Open(ctx, b.dc, s)
			must(t, err)
			defer tr.Close(ctx)
			pt := tr.(*peerTransfer)
			argv, _, _ := tr.NodeFetch()
			var wg sync.WaitGroup
			errs := make([]error, len(l.Files))
			for i, f := range l.Files {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out := filepath.Join(b.bed.Nodes[1].Root, fmt.Sprintf("got%d", i))
					if errs[i] = fetch(ctx, b.dc, argv, f, 0, out); errs[i] == nil {
						if got, _ := os.ReadFile(out); !bytes.Equal(got, b.hub.files[f.Path]) {
							errs[i] = fmt.Errorf("%s: D got %d bytes that differ from S's", f.Path, len(got))
						}
					}
				}()
			}
			wg.Wait()
			must(t, errors.Join(errs...))
			bargv, _ := pt.NodeFetchBatch()
			cmd := append([]string{"sh", "-c", `"$@" >/dev/null`, "sh"}, bargv...)
			_, err = b.dc.Run(ctx, node.Cmd{Argv: cmd, Stdin: strings.NewReader(l.Files[0].Etag + "\n")})
			must(t, err)
			logins := strings.Count(b.bed.Nodes[0].Log(), "Accepted publickey for "+testbed.User+" ") // all keys
			mine := 0
			for _, line := range strings.Split(b.bed.Nodes[0].Log(), "\n") {
				if strings.Contains(line, "Accepted publickey") && strings.Contains(line, pt.keyFP) {
					mine++
				}
			}
			if want := mastersFor(par); mine != want {
				t.Errorf("%d logins with the one-time key on S for %d blobs and a batch (parallel %d), want %d (one per master); %d logins in all",
					mine, len(l.Files), par, want, logins)
			}
			if procs := procsWith(pt.dir + "/cm"); len(procs) != mastersFor(par) {
				t.Errorf("%d master processes on D, want %d: %q", len(procs), mastersFor(par), procs)
			}
			must(t, tr.Close(ctx))
			if procs := procsWith(pt.dir); len(procs) != 0 {
				t.Errorf("processes of the transfer left on D after Close: %q", procs)
			}
		})
	}
}
