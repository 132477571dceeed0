//go:build linux

package nodehelper

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestWalkFormat pins walk's lines for small trees (the format of
// gitkit's walk.sh: find -printf and GNU sha256sum [--tag] lines, "#end"
// between paths, "#newline" for a newline in a name or symlink target) and
// its exit status. gitkit's TestWalkHelperDifferential checks it against
// the script itself.
func TestWalkFormat(t *testing.T) {
	const (
		hEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		hX     = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881" // "x"
	)
	t.Chdir(t.TempDir()) // walk changes the working folder
	dir := t.TempDir()
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	file := func(p, data string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	tree := mk("tree")
	mk("tree/sub")
	file(filepath.Join(tree, "plain"), "x", 0o644)
	file(filepath.Join(tree, "sub/run"), "", 0o755)
	file(filepath.Join(tree, `back\slash`), "x", 0o644)
	file(filepath.Join(tree, "cr\rexe"), "", 0o700)
	file(filepath.Join(tree, "group-x"), "", 0o615)
	if err := os.Symlink("sub/run", filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(tree, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	listing := []string{
		"d .", "d ./sub", "SHA256 (./sub/run) = " + hEmpty, hX + "  ./plain", `\` + hX + `  ./back\\slash`,
		`\SHA256 (./cr\rexe) = ` + hEmpty, hEmpty + "  ./group-x", "l ./link -> sub/run", "o ./fifo",
	}
	nl := mk("nl")
	file(filepath.Join(nl, "a\nb"), "", 0o644)
	nlLink := mk("nllink")
	if err := os.Symlink("a\nb", filepath.Join(nlLink, "l")); err != nil {
		t.Fatal(err)
	}
	file(filepath.Join(dir, "file"), "", 0o644)
	if err := os.Symlink("tree", filepath.Join(dir, "symlink")); err != nil {
		t.Fatal(err)
	}
	empty := mk("empty")

	tests := []struct {
		name  string
		paths []string
		want  []string // blocks; a walk's listing sorted
		code  int
	}{
		{"no paths", nil, nil, 0},
		{"a tree", []string{tree}, append([]string{"walk"}, listing...), 0},
		{"paths of every kind", []string{filepath.Join(dir, "file"), filepath.Join(dir, "none"), filepath.Join(dir, "symlink"), "", empty},
			[]string{"other file", "absent", "other symlink", "absent", "walk", "d ."}, 0},
		{"trees in a row", []string{empty, tree, empty},
			append(append([]string{"walk", "d .", "#end 0", "walk"}, listing...), "#end 0", "walk", "d ."), 0},
		{"a newline in a name", []string{nl, empty}, []string{"walk", "d .", "#newline", "#end 0", "walk", "d ."}, 0},
		{"a newline in a symlink target", []string{nlLink}, []string{"walk", "d .", "#newline"}, 0},
		// walk.sh cds to / after a walk: later relative paths are from /.
		{"relative paths", []string{empty, strings.TrimPrefix(empty, "/")}, []string{"walk", "d .", "#end 0", "walk", "d ."}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, stderr strings.Builder
			code := Main(append([]string{"walk"}, tc.paths...), nil, &out, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d (%s)", code, tc.code, stderr.String())
			}
			if got := sortWalks(out.String()); !slices.Equal(got, sortWalks(strings.Join(tc.want, "\n")+"\n")) {
				t.Errorf("printed %q\nwant %q", out.String(), tc.want)
			}
		})
	}
}

// sortWalks is out's lines with each walk's listing sorted.
func sortWalks(out string) []string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "\n" || out == "" {
		return nil
	}
	for i := 0; i < len(lines); i++ {
		if lines[i] != "walk" {
			continue
		}
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "#") {
			j++
		}
		slices.Sort(lines[i+1 : j])
		i = j - 1
	}
	return lines
}
