package hubstage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/providers/node"
)

// countingConn runs every command with a PATH whose find and realpath
// are shims that note each start in a log, then run the real tool.
type countingConn struct {
	node.Conn
	bin string
}

func (c countingConn) Run(ctx context.Context, cmd node.Cmd) (node.Result, error) {
	env := map[string]string{"PATH": c.bin + ":/usr/bin:/bin"}
	for k, v := range cmd.Env {
		env[k] = v
	}
	cmd.Env = env
	return c.Conn.Run(ctx, cmd)
}

func countingShims(t *testing.T, tools ...string) (bin, log string) {
	t.Helper()
	dir := t.TempDir()
	bin, log = filepath.Join(dir, "bin"), filepath.Join(dir, "starts")
	must(t, os.MkdirAll(bin, 0o755))
	for _, tool := range tools {
		real, err := exec.LookPath(tool)
		realpart.Need(t, tool, err)
		shim := fmt.Sprintf("#!/bin/sh\necho %s >> '%s'\nexec '%s' \"$@\"\n", tool, log, real)
		must(t, os.WriteFile(filepath.Join(bin, tool), []byte(shim), 0o755))
	}
	return bin, log
}

// TestWalkStartsOneRealpath: a snapshot of 1,500 files with the long
// names of a sharded checkpoint, in a hub folder as deep as a test's
// temp dir, is resolved with one find and one realpath (GNU find is
// assumed, and asked again without -printf only where find refuses it:
// no find to tell GNU from busybox). Walking the absolute paths gave
// realpath over 200 KB of arguments, two or more starts per walk.
func TestWalkStartsOneRealpath(t *testing.T) {
	bin, log := countingShims(t, "find", "realpath")
	h := newHub(t, t.TempDir())
	repo := h.repo("model", "org/m")
	files := map[string]string{}
	const n = 1500
	for i := 1; i <= n; i++ {
		files[fmt.Sprintf("shards/model-%05d-of-%05d.safetensors", i, n)] = fmt.Sprint("weights ", i)
	}
	h.snapshot(repo, commitOf("a"), files, false)
	s := spec{HubDir: h.dir, RepoID: "org/m", RepoType: "model", Revision: commitOf("a"), Target: "/model"}
	if !strings.HasPrefix(h.dir, "/") || len(h.dir)+len("/models--org--m/snapshots/")+40+len("/shards/model-00001-of-01500.safetensors") < 130 {
		t.Fatalf("hub folder %q is too short to show the batching", h.dir)
	}
	res, err := resolveOn(t, testNode{name: "counting", conn: countingConn{Conn: node.NewLocal("node.counting"), bin: bin}}, &s)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != n {
		t.Fatalf("%d entries, want %d", len(res.Entries), n)
	}
	for _, e := range res.Entries {
		if !strings.HasPrefix(e.Source, h.real(repo)+"/blobs/") {
			t.Fatalf("entry %s: source %s is not a blob of %s", e.Target, e.Source, repo)
		}
	}
	b, err := os.ReadFile(log)
	must(t, err)
	starts := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		starts[l]++
	}
	if starts["realpath"] != 1 || starts["find"] != 1 {
		t.Fatalf("the walk started %v, want find 1 and realpath 1", starts)
	}
}

// The walk's paths are relative to the snapshot folder; what the parser
// and the messages show is the path in it.
func TestWalkPathsInSnapshot(t *testing.T) {
	const snap = "/hub/models--o--m/snapshots/c"
	for _, tc := range []struct{ in, want string }{
		{".", snap},
		{"./a/b.bin", snap + "/a/b.bin"},
		{"/hub/blobs/x", "/hub/blobs/x"}, // an absolute link target
		{"-", "-"},                       // no incomplete file
		{"../blobs/x", "../blobs/x"},     // never produced; left alone
		{".hidden/x", ".hidden/x"},       // not a walk path
	} {
		if got := inSnap(snap, tc.in); got != tc.want {
			t.Errorf("inSnap(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"find: './a': Permission denied", "find: '" + snap + "/a': Permission denied"},
		{"find: File system loop detected; './up' is part of the same file system loop as '.'.",
			"find: File system loop detected; '" + snap + "/up' is part of the same file system loop as '" + snap + "'."},
		{"find: File system loop detected; ‘./up’ is part of the same file system loop as ‘.’.",
			"find: File system loop detected; ‘" + snap + "/up’ is part of the same file system loop as ‘" + snap + "’."},
		{"find: ./a/b: Permission denied", "find: " + snap + "/a/b: Permission denied"},
		{"find: .: Permission denied", "find: " + snap + ": Permission denied"},
		{"find: ./a ./b: Permission denied", "find: " + snap + "/a ./b: Permission denied"}, // a name with " ./" in it
	} {
		if got := complaintInSnap(snap, tc.in); got != tc.want {
			t.Errorf("complaintInSnap(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
