package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/node"
)

func TestRecordText(t *testing.T) {
	r := restore.Record{"made": {"/a/b", "/a"}, "key": {"/a/b/c d"}}
	text, err := r.Text()
	if err != nil {
		t.Fatal(err)
	}
	if want := "key /a/b/c d\nmade /a/b\nmade /a\n"; text != want {
		t.Fatalf("Text() = %q, want %q", text, want)
	}
	if got := restore.Parse(text); !reflect.DeepEqual(got, r) {
		t.Fatalf("Parse(Text()) = %v, want %v", got, r)
	}
	for _, bad := range []restore.Record{{"made": {"a\nb"}}, {"two words": {"x"}}, {"": {"x"}}, {"f": {"nul\x00"}}} {
		if _, err := bad.Text(); err == nil {
			t.Errorf("Text(%q) accepted", bad)
		}
	}
}

// TestStoreOnANode drives the real shell functions through the local
// transport: first create wins, append keeps what was there, remove takes
// the empty folders with it, modes are 0700/0600.
func TestStoreOnANode(t *testing.T) {
	ctx := context.Background()
	conn := node.NewLocal("local")
	base := filepath.Join(t.TempDir(), "state")
	s := restore.Store{Kind: "kmod_module", Dir: base}
	other := restore.Store{Kind: "gitkit_checkout", Dir: base}
	key := "/sys/module/nvidia_drm"
	if s.Name(key) == other.Name(key) || s.Name(key) == s.Name(key+"x") {
		t.Fatal("names must differ by kind and key")
	}

	if _, ok, err := s.Get(ctx, conn, false, key); err != nil || ok {
		t.Fatalf("Get before any record: ok=%v err=%v", ok, err)
	}
	first, err := s.Create(ctx, conn, false, key, restore.Record{"prior": {`{"loaded":true,"params":{"modeset":"N"}}`}})
	if err != nil {
		t.Fatal(err)
	}
	if first.First("prior") != `{"loaded":true,"params":{"modeset":"N"}}` || first.First("key") != key {
		t.Fatalf("Create returned %v", first)
	}
	// A second create (a replacement after a crash) gets the first back.
	second, err := s.Create(ctx, conn, false, key, restore.Record{"prior": {`{"loaded":true,"params":{"modeset":"Y"}}`}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(second, first) {
		t.Fatalf("second Create = %v, want the first record %v", second, first)
	}
	if err := s.Append(ctx, conn, false, key, restore.Record{"sha256": {"aa", "bb"}}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Get(ctx, conn, false, key)
	if err != nil || !ok {
		t.Fatalf("Get: ok=%v err=%v", ok, err)
	}
	if got.First("prior") != first.First("prior") || !got.Has("sha256", "bb") || len(got["sha256"]) != 2 {
		t.Fatalf("after Append: %v", got)
	}
	// Append without a record makes one with the key.
	if err := other.Append(ctx, conn, false, "/k", restore.Record{"made": {"/k"}}); err != nil {
		t.Fatal(err)
	}
	if r, ok, _ := other.Get(ctx, conn, false, "/k"); !ok || r.First("key") != "/k" || r.First("made") != "/k" {
		t.Fatalf("Append to no record: %v %v", r, ok)
	}

	dir := filepath.Join(base, "restore", "kmod_module")
	for p, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(base, "restore"): 0o700, filepath.Join(dir, s.Name(key)): 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("record folder holds %d entries (a temp file left?)", len(entries))
	}

	if err := s.Remove(ctx, conn, false, key); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, conn, false, key); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("empty kind folder kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "restore")); err != nil {
		t.Errorf("restore/ removed while gitkit_checkout still has a record: %v", err)
	}
	if err := other.Remove(ctx, conn, false, "/k"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Errorf("base folder kept after the last record went: %v", err)
	}
}

// TestDefaultFolder: with no Dir, a non-root user's records go under
// XDG_STATE_HOME (or ~/.local/state), never beside the user's files.
func TestDefaultFolder(t *testing.T) {
	xdg := t.TempDir()
	out, err := node.NewLocal("local").Run(context.Background(), node.Cmd{
		Argv: []string{"sh", "-c", restore.Prelude + "\nid() { echo 1000; }\nsf_rdir '' kmod_module", "sh"},
		Env:  map[string]string{"XDG_STATE_HOME": xdg},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out.Stdout)), xdg+"/sparkform/restore/kmod_module"; got != want {
		t.Fatalf("sf_rdir = %q, want %q", got, want)
	}
	out, err = node.NewLocal("local").Run(context.Background(), node.Cmd{
		Argv: []string{"sh", "-c", restore.Prelude + "\nid() { echo 0; }\nsf_rdir '' kmod_module", "sh"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out.Stdout)); got != "/var/lib/sparkform/restore/kmod_module" {
		t.Fatalf("sf_rdir as root = %q", got)
	}
}

// TestCreateKilledLeavesNoTemp: a record write cancelled half-way (SIGTERM,
// as sudo relays it when sparkform cancels a command) takes its temp file
// along and leaves no record.
func TestCreateKilledLeavesNoTemp(t *testing.T) {
	base := t.TempDir()
	_, err := node.NewLocal("local").Run(context.Background(), node.Cmd{
		Argv: []string{"sh", "-c", restore.Prelude + "\nsync() { kill -TERM $$; }\nsf_rcreate \"$1\" kmod_module rec 'prior x\n'", "sh", base},
	})
	var ee *node.ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 143 {
		t.Fatalf("want exit 143 from the TERM trap, got %v", err)
	}
	ents, err := os.ReadDir(filepath.Join(base, "restore", "kmod_module"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left in the record folder: %s", e.Name())
	}
}

// TestCreateRetriesWhenFolderVanishes: another run on the node removing
// the record folder (its sf_rrm, once the folder is empty) between this
// write's mkdir and its mktemp does not fail the write. The mktemp below
// removes the folder before its first call, as that run would.
func TestCreateRetriesWhenFolderVanishes(t *testing.T) {
	base := t.TempDir()
	mark := filepath.Join(t.TempDir(), "removed")
	script := restore.Prelude + `
mktemp() {
	if [ ! -e "$MARK" ]; then : >"$MARK"; rmdir "${1%/*}"; fi
	command mktemp "$@"
}
sf_rcreate "$1" kmod_module rec 'prior x
'`
	_, err := node.NewLocal("local").Run(context.Background(), node.Cmd{
		Argv: []string{"sh", "-c", strings.ReplaceAll(script, "$MARK", mark), "sh", base},
	})
	if err != nil {
		t.Fatalf("record write failed after the folder was removed: %v", err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the folder was never removed under the write: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(base, "restore", "kmod_module", "rec"))
	if err != nil || string(b) != "prior x\n" {
		t.Fatalf("record %q, %v; want %q", b, err, "prior x\n")
	}
}
