package nodehelper

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func init() { register("links", links) }

// links DIR writes the symbolic links of the hubstage_snapshot
// receiver's job lines on stdin ("L TARGET PATH", tab-separated; other
// lines are ignored) at DIR/PATH, in place of the `tar -x -v` of the
// same links: a link already there with TARGET is kept, anything else at
// PATH is replaced (a folder is not: an error, as tar's). The folders
// the links need are there (the receiver makes them, recorded, first).
// Output: PATH per link, one a line, as `tar -v` lists them (the
// receiver counts them). Exit status: 0, 1 on the first link it cannot
// write (the receiver then runs tar), ExitUsage bad arguments.
func links(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: sparkform-node links DIR")
		return ExitUsage
	}
	dir := args[0]
	out := bufio.NewWriter(stdout)
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 || f[0] != "L" {
			continue
		}
		target, p := f[1], f[2]
		if !cleanLinkPath(p) {
			fmt.Fprintf(stderr, "sparkform-node links: not a clean relative path: %q\n", p)
			return 1
		}
		if err := link1(target, filepath.Join(dir, p)); err != nil {
			fmt.Fprintln(stderr, "sparkform-node links:", err)
			return 1
		}
		fmt.Fprintln(out, p)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(stderr, "sparkform-node links:", err)
		return 1
	}
	if err := out.Flush(); err != nil {
		return 1
	}
	return 0
}

// cleanLinkPath: p is a clean relative path that stays below its folder.
func cleanLinkPath(p string) bool {
	return p != "" && !filepath.IsAbs(p) && p == filepath.Clean(p) && !strings.HasPrefix(p, "../") && p != ".."
}

// link1 makes at a link to target: kept when it is one already, else a
// new link renamed over what is there.
func link1(target, at string) error {
	err := os.Symlink(target, at)
	if err == nil || !os.IsExist(err) {
		return err
	}
	if cur, err := os.Readlink(at); err == nil && cur == target {
		return nil
	}
	tmp := at + ".sparkform-link"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, at); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}
