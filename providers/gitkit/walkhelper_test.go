package gitkit

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/nodehelper/helpertest"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
)

// walkRun is what one walk command printed and its exit status.
type walkRun struct {
	out, stderr string
	code        int
}

// TestWalkHelperDifferential runs walk.sh (GNU find and sha256sum) and the
// node helper's walk (exec'd by the same script, as on a node) on the same
// trees and paths, as root and as a plain user over SSH (a bed node), and
// checks that they say the same: the same blocks and, for every tree read
// whole, the same lines (in any order; the provider sorts them), so the
// same digests after parseWalk; an unreadable tree fails both, a newline
// in a name or symlink target stops both ("#newline"), with the same
// status class.
func TestWalkHelperDifferential(t *testing.T) {
	bn := testbed.StartT(t, 1).Nodes[0]
	pool := node.NewPool()
	defer pool.Close()
	conn, err := pool.Get(context.Background(), bn.SDK())
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(bn.Root, "bin", "sparkform-node")
	if err := os.MkdirAll(filepath.Dir(helper), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(helper, helpertest.Binary(t), 0o755); err != nil {
		t.Fatal(err)
	}
	runners := []struct {
		name string
		run  func(argv []string) walkRun
	}{
		{"root", func(argv []string) walkRun {
			cmd := exec.Command(argv[0], argv[1:]...)
			var out, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			return walkRun{out.String(), stderr.String(), cmd.ProcessState.ExitCode()}
		}},
		{"user", func(argv []string) walkRun {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := conn.Run(ctx, node.Cmd{Argv: argv})
			var ee *node.ExitError
			switch {
			case errors.As(err, &ee):
				return walkRun{string(res.Stdout), ee.Stderr, ee.ExitCode}
			case err != nil:
				t.Fatal(err)
			}
			return walkRun{out: string(res.Stdout)}
		}},
	}

	ok, failed, fallback := walkOK, walkFailed, walkFallback
	cases := []struct {
		name string
		// make builds the trees under dir and returns the paths to walk.
		make func(t *testing.T, dir string) []string
		// want is the state parseWalk gives as root and as the user.
		root, user walkState
		// digests, when set, are the digests the walk must give.
		digests []string
	}{
		{"no paths", func(t *testing.T, dir string) []string { return nil }, ok, ok, nil},
		{"empty dir", func(t *testing.T, dir string) []string {
			return []string{mkdirs(t, dir, "tree")}
		}, ok, ok, []string{"sha256:" + listingDigest([]string{"d ."})}},
		{"nested, executables, a big file", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree", "tree/a/b/c", "tree/empty")
			files(t, tree, map[string]fileSpec{
				"a/b/c/deep": {"deep\n", 0o644}, "run.sh": {"#!/bin/sh\n", 0o755}, "a/own": {"x", 0o744},
				"a/group-x": {"g", 0o654}, "a/other-x": {"o", 0o645}, "empty-file": {"", 0o644}, "a/b/ro": {"r", 0o444},
				"a/exe-ro": {"e", 0o544}, "setuid": {"s", 0o4755},
			})
			big := make([]byte, 3<<20+17) // more than a read buffer
			if _, err := rand.Read(big); err != nil {
				t.Fatal(err)
			}
			writeMode(t, filepath.Join(tree, "a/big.bin"), string(big), 0o644)
			writeMode(t, filepath.Join(tree, "a/big.exe"), string(big), 0o755)
			if err := os.Link(filepath.Join(tree, "run.sh"), filepath.Join(tree, "a/hardlink")); err != nil {
				t.Fatal(err)
			}
			return []string{tree}
		}, ok, ok, nil},
		{"symlinks", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree", "tree/sub")
			files(t, tree, map[string]fileSpec{"f": {"f", 0o644}, "sub/x": {"x", 0o755}})
			links(t, tree, map[string]string{
				"to-file": "f", "to-dir": "sub", "sub/up": "..", "dangling": "nowhere/at all", "absolute": "/etc/passwd",
				"self": "self", "sp ace": "t a r g e t", `back\slash`: `x\y`, "uni": "ünï/日本", "cr": "a\rb", "empty-ish": ".",
			})
			return []string{tree}
		}, ok, ok, nil},
		{"fifo, socket, device", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree")
			for name, mode := range map[string]uint32{"fifo": syscall.S_IFIFO | 0o644, "socket": syscall.S_IFSOCK | 0o755, "null": syscall.S_IFCHR | 0o666} {
				if err := syscall.Mknod(filepath.Join(tree, name), mode, 1<<8|3); err != nil {
					t.Fatal(err)
				}
			}
			return []string{tree}
		}, ok, ok, nil},
		{"awkward names", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree", "tree/we ird", "tree/ünïcødé", "tree/\\dir\\")
			files(t, tree, map[string]fileSpec{
				"sp ace": {"a", 0o644}, "sp ace.sh": {"b", 0o755}, `back\slash`: {"c", 0o644}, `\lead.sh`: {"d", 0o755},
				"we ird/日本語.txt": {"e", 0o644}, "ünïcødé/rün": {"f", 0o755}, "\\dir\\/in": {"g", 0o644},
				"cr\rname": {"h", 0o644}, "cr\rexe": {"i", 0o755}, "both\\\r": {"j", 0o644}, "tab\tx": {"k", 0o644},
				"SHA256 (x) = " + strings.Repeat("0", 64): {"l", 0o644}, "x) = " + strings.Repeat("0", 64): {"m", 0o755},
				"-dash": {"n", 0o644}, "bytes \xff\x01\x1b[31m": {"o", 0o644},
			})
			return []string{tree}
		}, ok, ok, nil},
		{"the pinned tree", func(t *testing.T, dir string) []string {
			// Some of its files are root's and only root's: not the user's to read.
			return []string{copyTree(t, oneWalkTree(t), filepath.Join(dir, "tree"))}
		}, ok, failed, []string{"sha256:" + oneWalkDigest}},
		{"a newline in a name", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree", "tree/a")
			files(t, tree, map[string]fileSpec{"a/one\ntwo": {"x", 0o644}, "f": {"f", 0o644}, "x": {"x", 0o755}})
			return []string{tree}
		}, fallback, fallback, nil},
		{"a newline in a folder name", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree", "tree/nl\ndir")
			files(t, tree, map[string]fileSpec{"nl\ndir/f": {"x", 0o644}})
			return []string{tree}
		}, fallback, fallback, nil},
		{"a newline in a link target, then more paths", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree", "other")
			files(t, tree, map[string]fileSpec{"f": {"f", 0o644}})
			links(t, tree, map[string]string{"l": "a\nb"})
			files(t, filepath.Join(dir, "other"), map[string]fileSpec{"g": {"g", 0o755}})
			return []string{tree, filepath.Join(dir, "other"), filepath.Join(dir, "nothing")}
		}, fallback, fallback, nil},
		{"an unreadable subfolder", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree", "tree/open", "tree/closed/deeper")
			files(t, tree, map[string]fileSpec{"open/f": {"f", 0o644}, "closed/g": {"g", 0o644}, "closed/deeper/h": {"h", 0o755}})
			chmod(t, filepath.Join(tree, "closed"), 0o700)
			return []string{tree}
		}, ok, failed, nil},
		{"a subfolder readable, not searchable", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree", "tree/rx", "tree/rx/d")
			files(t, tree, map[string]fileSpec{"rx/g": {"g", 0o644}})
			chmod(t, filepath.Join(tree, "rx"), 0o744)
			return []string{tree}
		}, ok, failed, nil},
		{"unreadable files", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree")
			files(t, tree, map[string]fileSpec{"secret": {"s", 0o600}, "exe": {"e", 0o700}, "f": {"f", 0o644}})
			return []string{tree, tree}
		}, ok, failed, nil},
		{"a tree that cannot be entered, first and last", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree", "good")
			files(t, tree, map[string]fileSpec{"f": {"f", 0o644}})
			chmod(t, tree, 0o744)
			good := filepath.Join(dir, "good")
			return []string{tree, good, tree}
		}, ok, failed, nil},
		{"a tree that cannot be listed", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree")
			files(t, tree, map[string]fileSpec{"f": {"f", 0o644}})
			chmod(t, tree, 0o711)
			return []string{tree}
		}, ok, failed, nil},
		{"paths that are not trees", func(t *testing.T, dir string) []string {
			tree := mkdirs(t, dir, "tree", "locked/inside")
			files(t, dir, map[string]fileSpec{"file": {"f", 0o644}, "exe": {"x", 0o755}})
			links(t, dir, map[string]string{"to-tree": "tree", "to-file": "file", "dangling": "nowhere"})
			if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
				t.Fatal(err)
			}
			chmod(t, filepath.Join(dir, "locked"), 0o700) // the user cannot see inside: absent, as [ -e ] says
			return []string{filepath.Join(dir, "file"), filepath.Join(dir, "nothing"), filepath.Join(dir, "to-tree"),
				filepath.Join(dir, "to-file"), filepath.Join(dir, "dangling"), filepath.Join(dir, "fifo"), "",
				filepath.Join(dir, "locked", "inside"), filepath.Join(dir, "exe"), tree, filepath.Join(dir, "file", "under")}
		}, ok, ok, nil},
		{"several trees", func(t *testing.T, dir string) []string {
			a := mkdirs(t, dir, "a", "a/x")
			b := mkdirs(t, dir, "b")
			files(t, a, map[string]fileSpec{"x/f": {"f", 0o644}})
			files(t, b, map[string]fileSpec{"g": {"g", 0o755}})
			return []string{a, b, a, filepath.Join(dir, "nothing"), b}
		}, ok, ok, nil},
	}
	for i, tc := range cases {
		dir := filepath.Join(bn.Root, "walk", string(rune('a'+i)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		paths := tc.make(t, dir)
		for _, r := range runners {
			t.Run(tc.name+"/"+r.name, func(t *testing.T) {
				want := tc.root
				if r.name == "user" {
					want = tc.user
				}
				script := r.run(walkArgv("", paths...))
				// The helper's run has no script to fall back to: what it
				// prints is the helper's.
				helped := r.run(helperArgv(helper, "walk", "echo walk.sh ran >&2; exit 99", paths...))
				if strings.Contains(helped.stderr, "find") || strings.Contains(helped.stderr, "sha256sum") {
					t.Errorf("the helper's walk ran the tools: %s", helped.stderr)
				}
				sObs, sState := parseRun(script, len(paths))
				hObs, hState := parseRun(helped, len(paths))
				if sState != want || hState != want {
					t.Errorf("state: script %v, helper %v; want %v\nscript (exit %d): %q %s\nhelper (exit %d): %q %s",
						sState, hState, want, script.code, script.out, script.stderr, helped.code, helped.out, helped.stderr)
				}
				if (script.code == 0) != (helped.code == 0) {
					t.Errorf("exit status: script %d, helper %d\nscript: %s\nhelper: %s", script.code, helped.code, script.stderr, helped.stderr)
				}
				if helped.code != 0 && strings.TrimSpace(helped.stderr) == "" {
					t.Errorf("the helper failed (exit %d) without saying why", helped.code)
				}
				if !reflect.DeepEqual(sObs, hObs) {
					t.Errorf("observations: script %+v, helper %+v", sObs, hObs)
				}
				if tc.digests != nil && want == walkOK && hState == walkOK {
					for j, d := range tc.digests {
						if hObs[j].digest != d {
							t.Errorf("path %d: digest %s, want %s", j, hObs[j].digest, d)
						}
					}
				}
				sb, hb := walkBlocks(script.out, script.code), walkBlocks(helped.out, helped.code)
				if len(sb) != len(hb) {
					t.Fatalf("blocks: script %d, helper %d\nscript: %q\nhelper: %q", len(sb), len(hb), script.out, helped.out)
				}
				for j := range sb {
					s, h := sb[j], hb[j]
					if s.failed || s.newline {
						s.lines, h.lines = nil, nil // what was listed before stopping differs by order
					}
					if !reflect.DeepEqual(s, h) {
						t.Errorf("path %d (%q): script %+v\nhelper %+v", j, pathAt(paths, j), s, h)
					}
				}
			})
		}
	}
}

// parseRun is what walk makes of a run: a failed command is a failed walk.
func parseRun(r walkRun, n int) ([]observation, walkState) {
	if r.code != 0 {
		return nil, walkFailed
	}
	return parseWalk([]byte(r.out), n)
}

func pathAt(paths []string, i int) string {
	if i < len(paths) {
		return paths[i]
	}
	return "?"
}

// walkBlock is one PATH's answer in walk.sh's output.
type walkBlock struct {
	head    string   // absent, other ..., walk
	lines   []string // a walk's listing, sorted
	newline bool     // the walk met a newline
	end     string   // "#end N", or the exit status class of a last walk
	failed  bool
}

// walkBlocks splits walk.sh's output (exit status code) into blocks.
func walkBlocks(out string, code int) []walkBlock {
	var blocks []walkBlock
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		lines = nil
	}
	for i := 0; i < len(lines); i++ {
		b := walkBlock{head: lines[i]}
		if b.head == "walk" {
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "#"); i++ {
				b.lines = append(b.lines, lines[i])
			}
			if i < len(lines) && lines[i] == "#newline" {
				b.newline = true
				// find -quit still runs the sha256sum it had gathered.
				for i++; i < len(lines) && !strings.HasPrefix(lines[i], "#end "); i++ {
				}
			}
			switch {
			case i < len(lines):
				b.end = lines[i]
				b.failed = b.end != "#end 0"
			default: // the last walk: the command's status
				b.end, b.failed = "exit 0", code != 0
				if b.failed {
					b.end = "exit non-zero"
				}
			}
			slices.Sort(b.lines)
		}
		blocks = append(blocks, b)
	}
	return blocks
}

type fileSpec struct {
	data string
	mode os.FileMode
}

// mkdirs makes the folders (relative to dir) and returns the first.
func mkdirs(t *testing.T, dir string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, names[0])
}

func files(t *testing.T, dir string, fs map[string]fileSpec) {
	t.Helper()
	for name, f := range fs {
		writeMode(t, filepath.Join(dir, name), f.data, f.mode)
	}
}

func writeMode(t *testing.T, p, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	chmod(t, p, mode)
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	// os.Chmod keeps setuid only through its own bit.
	m := uint32(mode.Perm())
	if mode&os.ModeSetuid != 0 || mode&0o4000 != 0 {
		m |= syscall.S_ISUID
	}
	if err := syscall.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func links(t *testing.T, dir string, ls map[string]string) {
	t.Helper()
	for name, target := range ls {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// copyTree copies src to dst with cp -a (fifos, modes and links kept).
func copyTree(t *testing.T, src, dst string) string {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	return dst
}
