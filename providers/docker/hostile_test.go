package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
)

// TestBindCheckHostilePaths runs the plan-time bind-source check (the
// only shell script of this provider) on bind_files sources whose names
// hold shell syntax, quotes, globs, a leading '-' and a literal
// backslash-n: each is tested as itself, reported on one line of its own,
// and nothing in a name runs.
func TestBindCheckHostilePaths(t *testing.T) {
	dir := t.TempDir()
	// Names hold no '/', so the marker is relative: the script runs in dir.
	const markName = "pwned"
	mark := filepath.Join(dir, markName)
	names := []string{"$(touch MARK)", "`touch MARK`", "a b", "-rf", "*", "[a]?", `it's "q"`, `x\nmissing y`, "z;touch MARK", "${HOME}"}
	var in strings.Builder
	var want []string
	for i, name := range names {
		name = strings.ReplaceAll(name, "MARK", markName)
		p := filepath.Join(dir, name)
		switch i % 4 {
		case 0: // a regular file: fine, not reported
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		case 1:
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			want = append(want, "directory "+p)
		case 2:
			if err := os.Symlink("/etc/hostname", p); err != nil {
				t.Fatal(err)
			}
			want = append(want, "symlink "+p)
		case 3:
			want = append(want, "missing "+p)
		}
		in.WriteString("F " + p + "\n")
	}
	res, err := node.NewLocal("local").Run(context.Background(), node.Cmd{Argv: []string{"sh", "-c", bindCheckScript}, Dir: dir, Stdin: strings.NewReader(in.String())})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(res.Stdout), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reported:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("a name ran an injected command (%s exists)", mark)
	}
}
