package hubstage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sparkform/sparkform/providers/node"
)

// This file lists a hub cache that is already somewhere: on a node (ONE
// remote command, whatever the number of files) or on the operator's own
// machine (read in process, no command: the operator's machine may lack
// GNU find). Both give a snapListing built by the same rules, listingOf.

// etagRe is a blob name a snapshot may link to: a git blob sha1 (40 hex,
// a regular file) or a sha256 (64 hex, an LFS file).
var etagRe = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// listScript ($1 repo folder, $2 revision, $3 "ref" or "commit") prints
// "commit C" (or norepo, noref, "badref", nosnap) on its first line, then
// NUL-separated entries of snapshots/C: "L<path>" NUL "<link target>" for
// each symlink, "F<path>" for each regular file and "O<path>" for anything
// else (not a folder), then "S<path>" NUL "<size>" for each path that
// resolves to a regular file when links are followed. A dangling link or a
// loop has no S entry.
const listScript = `set -u
r=$1
[ -d "$r" ] || { echo norepo; exit 0; }
if [ "$3" = ref ]; then
  [ -f "$r/refs/$2" ] || { echo noref; exit 0; }
  c=$(cat "$r/refs/$2") || exit 1
else
  c=$2
fi
case $c in ''|*[!0-9a-f]*) echo badref; exit 0 ;; esac
[ ${#c} -eq 40 ] || { echo badref; exit 0; }
echo "commit $c"
[ -d "$r/snapshots/$c" ] || { echo nosnap; exit 0; }
cd "$r/snapshots/$c" || exit 1
find . -mindepth 1 \( -type l -printf 'L%P\0%l\0' \) -o \( -type f -printf 'F%P\0' \) -o \( ! -type d -printf 'O%P\0' \)
find -L . -mindepth 1 -type f -printf 'S%P\0%s\0' 2>/dev/null
exit 0
`

// rawListing is what a walk of snapshots/<commit> found, before the rules.
type rawListing struct {
	Commit string
	Links  map[string]string // path -> link target
	Sizes  map[string]int64  // path -> size of the regular file it resolves to
	Other  []string          // regular files and specials (not links)
}

// listNodeHub lists repo (a repo folder on the node conn reaches) at rev in
// one remote command. where names the place for messages.
func listNodeHub(ctx context.Context, conn node.Conn, become bool, repo, rev, where string) (*snapListing, error) {
	mode := "ref"
	if hex40.MatchString(rev) {
		mode = "commit"
	}
	res, err := conn.Run(ctx, node.Cmd{Argv: []string{"sh", "-c", listScript, "sh", repo, rev, mode}, Become: become})
	if err != nil {
		return nil, fmt.Errorf("%w: listing %s on %s: %v", ErrWalk, repo, where, err)
	}
	raw, err := parseListOutput(res.Stdout)
	if err != nil {
		return nil, listError(err, raw, repo, rev, where)
	}
	return listingOf(raw, repo, rev, where)
}

// listError says which part of the layout is missing, and where.
func listError(err error, raw *rawListing, repo, rev, where string) error {
	switch {
	case errors.Is(err, ErrNoRepo):
		return fmt.Errorf("%w: %s is not on %s", err, repo, where)
	case errors.Is(err, ErrNoRef):
		return fmt.Errorf("%w: %s/refs/%s is not on %s (give revision as a commit it holds, or fetch the ref there first)", err, repo, rev, where)
	case errors.Is(err, ErrBadRef):
		return fmt.Errorf("%w: %s/refs/%s on %s", err, repo, rev, where)
	case errors.Is(err, ErrNoSnapshot) && raw != nil:
		return fmt.Errorf("%w: %s/snapshots/%s is not on %s", err, repo, raw.Commit, where)
	}
	return fmt.Errorf("%s on %s: %w", repo, where, err)
}

// errListing turns the script's one-word answers into the sentinels.
var errListing = map[string]error{"norepo": ErrNoRepo, "noref": ErrNoRef, "badref": ErrBadRef, "nosnap": ErrNoSnapshot}

// parseListOutput reads listScript's output.
func parseListOutput(out []byte) (*rawListing, error) {
	first, rest, _ := bytes.Cut(out, []byte("\n"))
	head := string(first)
	if err, ok := errListing[head]; ok {
		return nil, err
	}
	c, ok := strings.CutPrefix(head, "commit ")
	if !ok {
		return nil, fmt.Errorf("%w: unexpected output %q", ErrWalk, head)
	}
	raw := &rawListing{Commit: c, Links: map[string]string{}, Sizes: map[string]int64{}}
	if r := string(rest); r == "nosnap\n" {
		return raw, ErrNoSnapshot
	}
	fields := strings.Split(string(rest), "\x00")
	if len(fields) > 0 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1]
	}
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if f == "" {
			return nil, fmt.Errorf("%w: empty entry in the listing", ErrWalk)
		}
		kind, p := f[0], f[1:]
		switch kind {
		case 'L', 'S':
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("%w: truncated listing at %q", ErrWalk, p)
			}
			i++
			if kind == 'L' {
				raw.Links[p] = fields[i]
				continue
			}
			n, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: size %q of %s", ErrWalk, fields[i], p)
			}
			raw.Sizes[p] = n
		case 'F', 'O':
			raw.Other = append(raw.Other, p)
		default:
			return nil, fmt.Errorf("%w: unexpected entry %q", ErrWalk, f)
		}
	}
	return raw, nil
}

// listingOf applies the layout rules to a walk: every entry of the
// snapshot is a relative link to ../../blobs/<etag> (one more "../" per
// folder level) whose blob is a regular file. Anything else is an error
// naming the file: copying a snapshot that is not in the hub's layout
// would spread a broken cache to every node.
func listingOf(raw *rawListing, repo, rev, where string) (*snapListing, error) {
	if len(raw.Other) > 0 {
		sort.Strings(raw.Other)
		return nil, fmt.Errorf("%w: %s/snapshots/%s/%s on %s is not a symlink into blobs/ (a cache written without symlinks cannot be copied as a snapshot)",
			ErrNotRegular, repo, raw.Commit, raw.Other[0], where)
	}
	l := &snapListing{Commit: raw.Commit, Files: make([]snapFile, 0, len(raw.Links))}
	for p, target := range raw.Links {
		at := repo + "/snapshots/" + raw.Commit + "/" + p
		blob := path.Clean(path.Join("snapshots", raw.Commit, path.Dir(p), target))
		etag, ok := strings.CutPrefix(blob, "blobs/")
		if path.IsAbs(target) || !ok || !etagRe.MatchString(etag) {
			return nil, fmt.Errorf("%w: %s on %s links to %q, not to ../../blobs/<etag> of its repository", ErrEscapesHub, at, where, target)
		}
		size, ok := raw.Sizes[p]
		if !ok {
			return nil, fmt.Errorf("%w: %s on %s: its blob %s is missing or not a regular file (an interrupted download at the source?)",
				ErrDangling, at, where, etag)
		}
		l.Files = append(l.Files, snapFile{Path: p, Etag: etag, Size: size})
	}
	if len(l.Files) == 0 {
		return nil, fmt.Errorf("%w: %s/snapshots/%s on %s holds no files", ErrNoSnapshot, repo, raw.Commit, where)
	}
	sort.Slice(l.Files, func(i, j int) bool { return l.Files[i].Path < l.Files[j].Path })
	return l, nil
}

// listLocalHub lists repo (a repo folder on this machine) at rev, reading
// it in process, by the same rules as listNodeHub.
func listLocalHub(repo, rev, where string) (*snapListing, error) {
	if fi, err := os.Stat(repo); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not on %s", ErrNoRepo, repo, where)
	}
	c := rev
	if !hex40.MatchString(rev) {
		b, err := os.ReadFile(filepath.Join(repo, "refs", filepath.FromSlash(rev)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s/refs/%s is not on %s (give revision as a commit it holds)", ErrNoRef, repo, rev, where)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s/refs/%s on %s: %v", ErrNoRef, repo, rev, where, err)
		}
		c = strings.TrimRight(string(b), "\n")
		if !hex40.MatchString(c) {
			return nil, fmt.Errorf("%w: %s/refs/%s on %s holds %q", ErrBadRef, repo, rev, where, c)
		}
	}
	snap := filepath.Join(repo, "snapshots", c)
	if fi, err := os.Stat(snap); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s/snapshots/%s is not on %s", ErrNoSnapshot, repo, c, where)
	}
	raw := &rawListing{Commit: c, Links: map[string]string{}, Sizes: map[string]int64{}}
	err := filepath.WalkDir(snap, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == snap {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, snap+string(filepath.Separator)))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			raw.Links[rel] = filepath.ToSlash(t)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				raw.Sizes[rel] = fi.Size()
			}
		case d.IsDir():
		default:
			raw.Other = append(raw.Other, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s on %s: %v", ErrWalk, snap, where, err)
	}
	return listingOf(raw, repo, rev, where)
}
