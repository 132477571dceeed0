package node_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/nodehelper/helpertest"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// helperSetup makes the test's own build of the helper the one the node
// check installs, in a fresh helper folder (node.HelperDirEnv) with the
// bed user's folder, and returns the build.
func helperSetup(t *testing.T, binary func(goarch string) bool) []byte {
	t.Helper()
	b := bed(t)
	bin := helpertest.Binary(t)
	sum := sha256.Sum256(bin)
	id := "t" + hex.EncodeToString(sum[:])[:15]
	t.Setenv(node.HelperEnv, id)
	dir, err := os.MkdirTemp("", "sparkform-helper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u, err := user.Lookup(b.User)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Mkdir(filepath.Join(dir, b.User), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(dir, b.User), uid, gid); err != nil {
		t.Fatal(err)
	}
	t.Setenv(node.HelperDirEnv, dir)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the seen records (no become)
	t.Cleanup(node.SetHelperBinary(func(got, goarch string) ([]byte, bool) {
		if got != id || !binary(goarch) {
			return nil, false
		}
		return bin, true
	}))
	return bin
}

// checked is what one plan's node check did.
type checked struct {
	trips   int64    // round trips on the connection
	notices []string // lines for the user
	debug   []string // debug lines (message and values)
	script  string   // what a script with the helper's fallback ran
}

// planCheck runs the node check of one plan (a fresh pool) on n.
func planCheck(t *testing.T, n sdk.Node) checked {
	t.Helper()
	var mu sync.Mutex
	var c checked
	p := node.NewPoolWith(node.Options{
		Notify: func(msg string) { mu.Lock(); c.notices = append(c.notices, msg); mu.Unlock() },
		Debug: func(msg string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			var b strings.Builder
			b.WriteString(msg)
			for _, a := range args {
				b.WriteString(" ")
				b.WriteString(strings.TrimSpace(strings.ReplaceAll(fmtAny(a), "\n", " ")))
			}
			c.debug = append(c.debug, b.String())
		},
	})
	defer p.Close()
	if err := p.Check(ctxT(t), n); err != nil {
		t.Fatalf("the node check failed: %v", err)
	}
	conn, err := p.Get(ctxT(t), n)
	if err != nil {
		t.Fatal(err)
	}
	c.trips = conn.RoundTrips()
	// The helper's path as a provider's script sees it.
	res, err := conn.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", "h=$1\n" + node.HelperShell("h") +
		`[ -n "$h" ] && exec "$h" version; echo scripts`, "sh", node.HelperPath(n)}})
	if err != nil {
		t.Fatal(err)
	}
	c.script = strings.TrimSpace(string(res.Stdout))
	// A privileged command still works after whatever the check did.
	if n.Become {
		if res, err := conn.Run(ctxT(t), node.Cmd{Argv: []string{"id", "-u"}, Become: true}); err != nil || string(res.Stdout) != "0\n" {
			t.Fatalf("a Become command after the check: %q, %v", res.Stdout, err)
		}
	}
	return c
}

func fmtAny(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	}
	return ""
}

// TestHelperInstall: the node check installs the helper on a node that
// lacks it, once: with become in a root-owned folder through the held
// shell (the held shell's ready line says it is missing, no command of
// its own), without become in the user's folder; a second plan's check
// finds it and installs nothing: with become the held shell's round trip
// alone, without become not even a probe (this machine's record of the
// install spares it for a day; then one probe renews it). A new version
// replaces the folder's other sparkform-node-* files and keeps
// everything else there. With become the folder's parent
// gets go+x (the restore records' /var/lib/sparkform is 0700).
func TestHelperInstall(t *testing.T) {
	for _, become := range []bool{true, false} {
		t.Run("become="+strconv.FormatBool(become), func(t *testing.T) {
			bin := helperSetup(t, func(goarch string) bool { return goarch == runtime.GOARCH })
			n := bed(t).Nodes[0].SDK()
			n.Become = become
			path := node.HelperPath(n)
			folder := filepath.Dir(path)
			wantUID := uint32(0)
			if !become {
				u, _ := user.Lookup(n.User)
				uid, _ := strconv.Atoi(u.Uid)
				wantUID = uint32(uid)
			} else {
				if _, err := os.Stat(folder); err == nil {
					t.Fatalf("%s exists before the first plan", folder)
				}
				// Its parent as the restore records make it
				// (/var/lib/sparkform, umask 077): the login user's
				// scripts must still reach the helper.
				if err := os.Chmod(filepath.Dir(folder), 0o700); err != nil {
					t.Fatal(err)
				}
			}

			c := planCheck(t, n)
			if c.trips != 2 || len(c.notices) != 0 {
				t.Errorf("first plan: %d round trips, notices %q; want 2 (the check, the install) and none", c.trips, c.notices)
			}
			fi := checkInstalled(t, path, bin, wantUID)
			if st, err := os.Stat(folder); err != nil || st.Mode().Perm() != 0o755 || st.Sys().(*syscall.Stat_t).Uid != wantUID {
				t.Errorf("helper folder %s: %v, %v; want mode 0755 owned by uid %d", folder, st.Mode(), err, wantUID)
			}
			if c.script != "sparkform-node 1" {
				t.Errorf("a script after the install ran %q, want the helper", c.script)
			}

			// Found: with become by the held shell (its one round trip),
			// without by this machine's record of the install (none).
			wantTrips := int64(1)
			if !become {
				wantTrips = 0
			}
			c = planCheck(t, n)
			if c.trips != wantTrips || len(c.notices) != 0 {
				t.Errorf("second plan: %d round trips, notices %q; want %d", c.trips, c.notices, wantTrips)
			}
			if fi2 := checkInstalled(t, path, bin, wantUID); !os.SameFile(fi, fi2) || !fi.ModTime().Equal(fi2.ModTime()) {
				t.Errorf("second plan replaced the helper")
			}
			if !become {
				// A record older than a day: one probe, which finds it.
				records := seenRecords(t)
				if len(records) != 1 {
					t.Fatalf("seen records %q, want one", records)
				}
				old := time.Now().Add(-25 * time.Hour)
				if err := os.Chtimes(records[0], old, old); err != nil {
					t.Fatal(err)
				}
				if c = planCheck(t, n); c.trips != 1 || len(c.notices) != 0 {
					t.Errorf("plan after a day: %d round trips, notices %q; want 1 (the probe)", c.trips, c.notices)
				}
				if fi2 := checkInstalled(t, path, bin, wantUID); !os.SameFile(fi, fi2) {
					t.Errorf("the probe's plan replaced the helper")
				}
				if st, err := os.Stat(records[0]); err != nil || time.Since(st.ModTime()) > time.Hour {
					t.Errorf("the probe did not renew the record: %v", err)
				}
				os.RemoveAll(os.Getenv("XDG_CACHE_HOME")) // a new version has none
			}

			// A new version: the old one (a day old) goes; a recent other
			// version (another sparkform using this node now) and other
			// files stay.
			old := filepath.Join(folder, "sparkform-node-0123456789abcdef")
			keep := []string{"notes.txt", "sparkform-nodes", "sparkform-node", "sparkform-node-fedcba9876543210"}
			if err := os.Rename(path, old); err != nil {
				t.Fatal(err)
			}
			dayAgo := time.Now().Add(-25 * time.Hour)
			if err := os.Chtimes(old, dayAgo, dayAgo); err != nil {
				t.Fatal(err)
			}
			for _, k := range keep {
				if err := os.WriteFile(filepath.Join(folder, k), []byte("keep"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c = planCheck(t, n)
			if c.trips != 2 || len(c.notices) != 0 {
				t.Errorf("plan of a new version: %d round trips, notices %q; want 2", c.trips, c.notices)
			}
			checkInstalled(t, path, bin, wantUID)
			if _, err := os.Lstat(old); err == nil {
				t.Errorf("the old version %s is still there", old)
			}
			for _, k := range keep {
				if b, err := os.ReadFile(filepath.Join(folder, k)); err != nil || string(b) != "keep" {
					t.Errorf("%s, not the helper's, was touched: %q, %v", k, b, err)
				}
			}
			ents, _ := os.ReadDir(folder)
			if len(ents) != len(keep)+1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("folder holds %q, want the helper and %q (no temporary file left)", names, keep)
			}
			waitNoHeld(t, "after the plans")
		})
	}
}

// seenRecords lists the seen records in the test's cache folder.
func seenRecords(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "sparkform", "helper-seen", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkInstalled checks the helper at path: bin, mode 0755, owned by uid.
func checkInstalled(t *testing.T, path string, bin []byte, uid uint32) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("helper not installed: %v", err)
	}
	if fi.Mode().Perm() != 0o755 || fi.Sys().(*syscall.Stat_t).Uid != uid {
		t.Errorf("helper %s: mode %v uid %d, want 0755 uid %d", path, fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid, uid)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, bin) {
		t.Errorf("helper %s: %d bytes differ from the build's %d", path, len(got), len(bin))
	}
	return fi
}

// TestHelperInstallFails: a node the helper cannot be installed on still
// passes its check and runs the scripts: no build for its arch (a debug
// line), or an upload that fails (a notice naming the node and path).
func TestHelperInstallFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		become bool
		noArch bool // no build for the node's arch
		want   string
	}{
		{"arch not shipped, become", true, true, "debug: none for this node's arch"},
		{"arch not shipped", false, true, "debug: none for this node's arch"},
		{"upload fails, become", true, false, "notice: could not install sparkform's node helper"},
		{"upload fails", false, false, "notice: could not install sparkform's node helper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			helperSetup(t, func(string) bool { return !tc.noArch })
			if !tc.noArch {
				// The folder cannot be made: its parent is a file.
				f := filepath.Join(t.TempDir(), "file")
				if err := os.WriteFile(f, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Setenv(node.HelperDirEnv, f)
			}
			n := bed(t).Nodes[0].SDK()
			n.Become = tc.become
			c := planCheck(t, n)
			lines := append([]string{}, c.debug...)
			for _, m := range c.notices {
				lines = append(lines, "notice: "+m)
			}
			all := strings.Join(lines, "\n")
			kind, msg, _ := strings.Cut(tc.want, ": ")
			if kind == "debug" && !strings.Contains(all, msg) || kind == "notice" && (len(c.notices) != 1 || !strings.Contains(c.notices[0], msg) || !strings.Contains(c.notices[0], node.HelperPath(n))) {
				t.Errorf("want a %s line %q, got:\n%s", kind, msg, all)
			}
			if c.script != "scripts" {
				t.Errorf("a script ran %q, want its shell fallback", c.script)
			}
			if _, err := os.Stat(node.HelperPath(n)); err == nil {
				t.Errorf("a helper is at %s", node.HelperPath(n))
			}
			waitNoHeld(t, "after the plan")
		})
	}
}

// TestGoArch: the helper builds that `uname -m` names.
func TestGoArch(t *testing.T) {
	for machine, want := range map[string]string{
		"aarch64": "arm64", "arm64": "arm64", "x86_64": "amd64", "amd64": "amd64", "x86_64\n": "amd64",
		"armv7l": "", "riscv64": "", "i686": "", "": "",
	} {
		if got := node.GoArch(machine); got != want {
			t.Errorf("GoArch(%q) = %q, want %q", machine, got, want)
		}
	}
}
