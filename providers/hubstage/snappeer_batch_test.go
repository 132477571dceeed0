package hubstage

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
)

// TestBatchReceive drives the receiver's batch step (sf_batch) with a real
// tar stream from a real source folder: the small blobs that are neither
// present nor partial come in one stream and are named only when their
// content is their address (sha256 and git blob sha1); a wrong one stays
// an .incomplete for the per-blob fetch, a partial one and a big one are
// not asked for, and the jobs left are exactly those not made present.
// With git on the node and without it (sha1 computed blob by blob).
func TestBatchReceive(t *testing.T) {
	t.Run("git", func(t *testing.T) { testBatchReceive(t, "") })
	t.Run("no git", func(t *testing.T) { testBatchReceive(t, pathWithout(t, "git")) })
}

// pathWithout is a PATH folder with every tool of this machine's PATH but
// the one named.
func pathWithout(t *testing.T, tool string) string {
	dir := t.TempDir()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if e.Name() == tool {
				continue
			}
			_ = os.Symlink(filepath.Join(d, e.Name()), filepath.Join(dir, e.Name())) // the first of a name wins
		}
	}
	return dir
}

func testBatchReceive(t *testing.T, path string) {
	src, rd, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(rd, "blobs"), 0o755))
	type blob struct {
		name, content, etag string
	}
	mk := func(name string, n int, lfs bool) blob {
		b := content(name, n)
		e := gitBlobSHA1(b)
		if lfs {
			e = sum(string(b))
		}
		must(t, os.WriteFile(filepath.Join(src, e), b, 0o644))
		return blob{name, string(b), e}
	}
	reg, lfs, empty := mk("config.json", 300, false), mk("w.bin", 5000, true), mk("empty", 0, false)
	wrong := mk("wrong", 100, false)
	must(t, os.WriteFile(filepath.Join(src, wrong.etag), []byte("not the content"), 0o644))
	partial := mk("partial", 100, true)
	must(t, os.WriteFile(filepath.Join(rd, "blobs", partial.etag+".incomplete"), []byte(partial.content[:10]), 0o644))
	present := mk("present", 50, false)
	must(t, os.WriteFile(filepath.Join(rd, "blobs", present.etag), []byte(present.content), 0o644))
	big := blob{"big", "", strings.Repeat("b", 64)}

	var jobs strings.Builder
	for _, b := range []blob{reg, lfs, empty, wrong, partial, present} {
		jobs.WriteString("B\t" + b.etag + "\t" + strconv.Itoa(len(b.content)) + "\t" + b.name + "\n")
	}
	jobs.WriteString("B\t" + big.etag + "\t" + strconv.Itoa(16<<20) + "\tbig\n")
	jobs.WriteString("L\t../../blobs/" + reg.etag + "\tconfig.json\n")
	// The source: what the serve script's tar request answers.
	for _, w := range []string{"sh", "-c", `cd "$0" && while IFS= read -r e; do printf '%s\n' "$e" >> asked; set -- "$@" "$e"; done && exec tar -chf - --format=gnu -- "$@"`, src} {
		jobs.WriteString("T\t" + w + "\n")
	}
	must(t, os.WriteFile(filepath.Join(tmp, "jobs"), []byte(jobs.String()), 0o644))

	script := "tab=$(printf '\\t'); tmp=$1; rd=$2\n" + snapBatchFuncs + "sf_batch\n"
	cmd := node.Cmd{Argv: []string{"sh", "-c", script, "sh", tmp, rd}}
	if path != "" {
		cmd.Env = map[string]string{"PATH": path}
		cmd.Argv[2] = "command -v git >/dev/null && exit 99\n" + script
	}
	res, err := node.NewLocal("local").Run(context.Background(), cmd)
	must(t, err)

	asked, _ := os.ReadFile(filepath.Join(src, "asked"))
	if got, want := strings.Fields(string(asked)), []string{reg.etag, lfs.etag, empty.etag, wrong.etag}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the batch asked for %v, want %v (not the partial, present or big ones)", got, want)
	}
	for _, b := range []blob{reg, lfs, empty} {
		got, err := os.ReadFile(filepath.Join(rd, "blobs", b.etag))
		if err != nil || string(got) != b.content {
			t.Errorf("%s: %v, %d bytes", b.name, err, len(got))
		}
		if !strings.Contains(string(res.Stdout), "D\t"+b.etag+"\t"+strconv.Itoa(len(b.content))+"\n") {
			t.Errorf("no D line for %s in %q", b.name, res.Stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(rd, "blobs", wrong.etag)); !os.IsNotExist(err) {
		t.Errorf("a blob whose content is not its address got its name: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(rd, "blobs", partial.etag+".incomplete")); string(got) != partial.content[:10] {
		t.Errorf("the partial blob was touched: %q", got)
	}
	left, _ := os.ReadFile(filepath.Join(tmp, "jobs"))
	for _, b := range []blob{reg, lfs, empty} {
		if strings.Contains(string(left), "B\t"+b.etag) {
			t.Errorf("the job of %s is still listed", b.name)
		}
	}
	for _, want := range []string{"B\t" + wrong.etag, "B\t" + partial.etag, "B\t" + present.etag, "B\t" + big.etag, "L\t../../blobs/" + reg.etag} {
		if !strings.Contains(string(left), want) {
			t.Errorf("job %q was dropped", want)
		}
	}
}
