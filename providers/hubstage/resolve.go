package hubstage

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Entry is one file of a resolved snapshot: the real blob on the node and
// where it is bound in the container.
type Entry struct {
	// Source is the real path of the regular file on the node (every
	// symlink resolved), inside hub_dir.
	Source string
	// Target is the clean absolute path in the container, under target.
	Target string
	Size   int64
	// MTime is the blob's modification time (Unix seconds): a blob
	// replaced in place at the same path changes the digest.
	MTime int64
}

// resolution is what one instance resolves to on the node right now.
type resolution struct {
	Commit     string
	Entries    []Entry // sorted by Target
	TotalBytes int64
	Digest     string
	// ManifestSHA is the sha256 of the manifest_path file as found on the
	// node ("" when missing or not asked for).
	ManifestSHA string
}

// maxDepth bounds the walk: busybox find does not detect folder link
// loops, so a loop shows up as a path this deep and is refused.
const maxDepth = 64

// resolveScript walks and resolves every instance given in its arguments
// in one remote command. Its first argument is the node helper's path
// (node.HelperPath; "" none), then maxd, gnu and the stderr marker, then
// groups of four: hub_dir, repo folder, revision, manifest_path (empty:
// none). With the helper there and gnu set, the script execs
// `sparkform-node resolve` with the rest (internal/nodehelper/resolve.go):
// one process prints what the GNU path below prints, where the script
// starts find, realpath and a shell per odd batch. It needs only a POSIX sh,
// find (-L, -exec +), stat -L -c, realpath, readlink, sha256sum: GNU and
// busybox both have them. Output, one record per line, tab-separated:
//
//	I n            start of instance n
//	M sha|-        manifest_path observed (sha256 of its content, - missing)
//	H realhub      hub_dir with every link resolved
//	E code detail  the instance cannot be resolved (nohub norepo noref badref nosnap)
//	C commit / S snapdir
//	B n            then n lines "SIZE MTIME PATH" (stat -L) and n real paths
//	F size mtime path   (GNU find) a file; its real path is the next
//	               "/..." line in order (realpath batches follow the F lines)
//	X kind path final incomplete   an entry that is not a file or folder
//	O name         an entry whose name holds a tab or newline (shown with ?)
//	D dir          a folder (to spot loops by depth)
//	W line         the snapshot folder cannot be entered
//	Z rc           end of the walk, with find's exit status (not after
//	               the last instance's walk: its find runs in the
//	               script's place, and the script's exit status is rc)
//
// find's complaints (loops, permissions) go to stderr between two lines
// of a random marker (the third argument), "MARK\tn" before instance n's
// walk and "MARK" after it (the last walk's run to the end of stderr);
// findComplaints gives them to the instance.
// Nothing on the node captures them: no subshell, no read loop.
//
// The walk runs in the snapshot folder on ".", so every path in F, B, X,
// O and D records and in find's complaints starts with "./" (parseResolve
// puts the snapshot folder back): realpath then takes one batch of short
// names where the full paths filled two or more, and takes half the time.
// A snapshot folder the user cannot enter is a W record, as find's
// complaints are.
var resolveScript = `h=$1; shift
` + resolveHelper + `set -u
nl='
'
tab='` + "\t" + `'
good='printf "B\t%d\n" "$#"; stat -L -c "%s %Y %n" "$@" && realpath "$@"'
dirs='printf "D\t%s\n" "$@"'
odd='for f do printf "O\t"; printf "%s" "$f" | tr "\t\n" "??"; echo; done'
bad='for f do
  if [ -L "$f" ]; then
    cur=$f; n=0
    while [ -L "$cur" ] && [ $n -lt 40 ]; do
      t=$(readlink "$cur"); n=$((n+1))
      case $t in /*) cur=$t ;; *) cur=${cur%/*}/$t ;; esac
    done
    if [ -L "$cur" ]; then k=loop; elif [ -e "$cur" ]; then k=special; else k=dangling; fi
    inc=-; if [ -e "$cur.incomplete" ]; then inc=$cur.incomplete; fi
    printf "X\t%s\t%s\t%s\t%s\n" "$k" "$f" "$cur" "$inc"
  else
    printf "X\tspecial\t%s\t-\t-\n" "$f"
  fi
done'
one() {
  hub=$1 repo=$2 rev=$3 mp=$4
  if [ -n "$mp" ]; then
    if [ -f "$mp" ]; then s=$(sha256sum < "$mp"); printf 'M\t%s\n' "${s%% *}"; else printf 'M\t-\n'; fi
  fi
  cd -P -- "$hub" 2>/dev/null || { printf 'E\tnohub\t%s\n' "$hub"; return; }
  rh=$PWD
  printf 'H\t%s\n' "$rh"
  rd=$rh/$repo
  [ -d "$rd" ] || { printf 'E\tnorepo\t%s\n' "$rd"; return; }
  c=$rev
  case $rev in
  *[!0-9a-f]*) c= ;;
  *) [ ${#rev} -eq 40 ] || c= ;;
  esac
  if [ -z "$c" ]; then
    rf=$rd/refs/$rev
    [ -f "$rf" ] || { printf 'E\tnoref\t%s\n' "$rf"; return; }
    IFS= read -r c < "$rf" || :
    case $c in *[!0-9a-f]*|'') printf 'E\tbadref\t%s\n' "$rf"; return ;; esac
    [ ${#c} -eq 40 ] || { printf 'E\tbadref\t%s\n' "$rf"; return; }
  fi
  printf 'C\t%s\n' "$c"
  sd=$rd/snapshots/$c
  [ -d "$sd" ] || { printf 'E\tnosnap\t%s\n' "$sd"; return; }
  printf 'S\t%s\n' "$sd"
  cd "$sd" 2>/dev/null || { printf 'W\t%s: cannot enter the folder (permission denied?)\n' "$sd"; printf 'Z\t1\n'; return; }
  # find's complaints go to stderr between two marker lines: the
  # provider reads them as this instance's W records.
  printf '%s\t%d\n' "$wmark" "$i" >&2
  # The last instance's find runs in the shell's place: its status is the
  # command's, and no Z record or end marker follows.
  [ -z "$last" ] || eval "exec $walk"
  eval "$walk"
  rc=$?
  printf '%s\n' "$wmark" >&2
  printf 'Z\t%d\n' "$rc"
}
# maxd, then gnu: 1 when find is GNU find (it prints size, mtime and path
# itself: no stat process per batch; the provider asks again without it
# when find refused -printf), then wmark: the stderr marker.
maxd=$1 gnu=$2 wmark=$3; shift 3
if [ -n "$gnu" ]; then
  walk='find -L . -mindepth 1 -maxdepth "$maxd" \( -name "*$nl*" -o -name "*$tab*" \) -exec sh -c "$odd" sh {} + \
    -o -type f -printf "F\t%s\t%T@\t%p\n" -exec realpath {} + -o -type d -printf "D\t%p\n" \
    -o -exec sh -c "$bad" sh {} +'
else
  walk='find -L . -mindepth 1 -maxdepth "$maxd" \( -name "*$nl*" -o -name "*$tab*" \) -exec sh -c "$odd" sh {} + \
    -o -type f -exec sh -c "$good" sh {} + -o -type d -exec sh -c "$dirs" sh {} + \
    -o -exec sh -c "$bad" sh {} +'
fi
i=0 last=
while [ $# -ge 4 ]; do
  [ $# -ge 8 ] || last=1
  printf 'I\t%d\n' "$i"
  one "$1" "$2" "$3" "$4"
  shift 4
  i=$((i+1))
done
`

// resolveHelper sets h to the helper or clears it, and execs it when
// there is one and find's -printf is asked for (the helper has only the
// GNU path's output).
var resolveHelper = node.HelperShell("h") + `[ -n "$h" ] && [ -n "$2" ] && exec "$h" resolve "$@"
`

// helperUsage is the node helper's status for a subcommand it does not
// have (nodehelper.ExitUsage).
const helperUsage = 125

// rawFile is a regular file the walk found.
type rawFile struct {
	Path, Real  string
	Size, MTime int64
}

// rawBad is an entry that is neither a regular file nor a folder.
type rawBad struct {
	Kind, Path, Final, Incomplete string
}

// rawItem is the parsed output for one instance.
type rawItem struct {
	ManifestSHA  string
	RealHub      string
	FatalCode    string
	FatalDetail  string
	Commit, Snap string
	Files        []rawFile
	Bad          []rawBad
	Odd, Dirs    []string
	FindErrs     []string
	FindRC       int
	Ended        bool
	execEnded    bool // the walk was the script's last command (exec'd)
	nreal        int  // files whose real path has been read
	// manifestUnread: manifest_path is there but could not be read.
	manifestUnread bool
}

// runResolve runs resolveScript once for every spec on conn: one remote
// round trip however many instances and files.
//
// A hub is normally readable by the login user, so with become it walks
// as that user first, and walks again through sudo only when the first
// walk met something it could not read or resolve (a refused folder,
// ref or manifest shows up as an error there): one sudo less per
// refresh, and the same answer, since root reads what the user reads.
// It returns the round trips made.
func runResolve(ctx context.Context, conn node.Conn, n sdk.Node, specs []*spec) ([]*rawItem, int, error) {
	helper, become := node.HelperPath(n), n.Become
	items, err := resolveAs(ctx, conn, helper, false, specs)
	if !become || (err == nil && walkedClean(items)) {
		return items, 1, err
	}
	items, err = resolveAs(ctx, conn, helper, true, specs)
	return items, 2, err
}

// walkedClean reports whether every item resolved without a complaint.
func walkedClean(items []*rawItem) bool {
	for _, it := range items {
		if it.FatalCode != "" || len(it.FindErrs) > 0 || it.FindRC != 0 || it.manifestUnread || len(it.Bad) > 0 {
			return false
		}
	}
	return true
}

// resolveAs runs resolveScript for specs once, as root when become: with
// GNU find's -printf, and once more without it when find refused it
// (busybox).
func resolveAs(ctx context.Context, conn node.Conn, helper string, become bool, specs []*spec) ([]*rawItem, error) {
	if _, ok := noPrintf.Load(conn); ok {
		return resolveMode(ctx, conn, helper, become, specs, "")
	}
	items, err := resolveMode(ctx, conn, helper, become, specs, "1")
	if err == nil && slices.ContainsFunc(items, func(it *rawItem) bool {
		return it.FindRC != 0 && slices.ContainsFunc(it.FindErrs, func(e string) bool { return strings.Contains(e, "-printf") })
	}) {
		noPrintf.Store(conn, true)
		return resolveMode(ctx, conn, helper, become, specs, "")
	}
	return items, err
}

// noPrintf holds the connections whose find refused -printf (busybox):
// their later walks do without it at once.
var noPrintf sync.Map

// resolveMode is one run of resolveScript; gnu is its GNU find argument.
func resolveMode(ctx context.Context, conn node.Conn, helper string, become bool, specs []*spec, gnu string) ([]*rawItem, error) {
	var mark [8]byte
	_, _ = rand.Read(mark[:])
	wmark := "#sparkform-find-" + hex.EncodeToString(mark[:])
	argv := []string{"sh", "-c", resolveScript, "sh", helper, strconv.Itoa(maxDepth), gnu, wmark}
	for _, s := range specs {
		argv = append(argv, s.HubDir, s.repoDir(), s.Revision, s.ManifestPath)
	}
	res, err := conn.Run(ctx, node.Cmd{Argv: argv, Become: become})
	// The last walk's find exits in the script's place: a non-zero exit
	// is its status when the output stops inside that walk.
	exit := 0
	var ee *node.ExitError
	if errors.As(err, &ee) && !errors.Is(err, node.ErrBecome) {
		exit = ee.ExitCode
	} else if err != nil {
		return nil, fmt.Errorf("%w on %s: %v", ErrWalk, conn.Name(), err)
	}
	if helper != "" && ee != nil && len(res.Stdout) == 0 && (exit == helperUsage || exit == 126 || exit == 127) {
		// The helper refused the subcommand (one older than this script:
		// not while its path carries this build's id) or could not be
		// exec'd; its output starts with "I" otherwise. The script's
		// tools answer.
		return resolveMode(ctx, conn, "", become, specs, gnu)
	}
	items, perr := parseResolve(res.Stdout, exit)
	if ee != nil && (perr != nil || len(items) == 0 || !items[len(items)-1].execEnded) {
		return nil, fmt.Errorf("%w on %s: the resolve script exited with status %d: %s", ErrWalk, conn.Name(), ee.ExitCode, strings.TrimSpace(ee.Stderr))
	}
	if perr != nil {
		return nil, fmt.Errorf("%w on %s: %v", ErrWalk, conn.Name(), perr)
	}
	if len(items) != len(specs) {
		return nil, fmt.Errorf("%w on %s: got %d results for %d instances", ErrWalk, conn.Name(), len(items), len(specs))
	}
	findComplaints(items, res.Stderr, wmark)
	return items, nil
}

// findComplaints gives each item the lines find wrote to stderr between
// its pair of marker lines ("MARK\tI" ... "MARK"), as W records were.
func findComplaints(items []*rawItem, stderr []byte, mark string) {
	var cur *rawItem
	if len(stderr) == 0 {
		return
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(stderr), "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, mark+"\t"):
			cur = nil
			if i, err := strconv.Atoi(l[len(mark)+1:]); err == nil && i >= 0 && i < len(items) {
				cur = items[i]
			}
		case l == mark:
			cur = nil
		case cur != nil:
			cur.FindErrs = append(cur.FindErrs, complaintInSnap(cur.Snap, l))
		}
	}
}

// parseResolve reads resolveScript's output; exit is the script's exit
// status, the status of the last walk when that was exec'd.
func parseResolve(out []byte, exit int) ([]*rawItem, error) {
	var items []*rawItem
	var cur *rawItem
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	for {
		line, ok := next()
		if !ok {
			break
		}
		if strings.HasPrefix(line, "/") && cur != nil { // a realpath line of the GNU path
			if cur.nreal >= len(cur.Files) {
				return nil, fmt.Errorf("more real paths than files (the snapshot changed during the walk?); run again")
			}
			cur.Files[cur.nreal].Real = line
			cur.nreal++
			continue
		}
		tag, rest, _ := strings.Cut(line, "\t")
		if tag != "I" && cur == nil {
			return nil, fmt.Errorf("unexpected output before the first instance: %q", line)
		}
		switch tag {
		case "I":
			cur = &rawItem{}
			items = append(items, cur)
		case "M":
			switch rest {
			case "-":
			case "": // there, but sha256sum could not read it
				cur.manifestUnread = true
			default:
				cur.ManifestSHA = rest
			}
		case "H":
			cur.RealHub = rest
		case "E":
			cur.FatalCode, cur.FatalDetail, _ = strings.Cut(rest, "\t")
			cur.Ended = true
		case "C":
			cur.Commit = rest
		case "S":
			cur.Snap = rest
		case "B":
			n, err := strconv.Atoi(rest)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad batch header %q", line)
			}
			base := len(cur.Files)
			for i := 0; i < n; i++ {
				l, ok := next()
				if !ok {
					return nil, fmt.Errorf("the snapshot changed during the walk (short stat output); run again")
				}
				f, err := parseStat(l, cur.Snap)
				if err != nil {
					return nil, err
				}
				cur.Files = append(cur.Files, f)
			}
			for i := 0; i < n; i++ {
				l, ok := next()
				if !ok || !strings.HasPrefix(l, "/") {
					return nil, fmt.Errorf("the snapshot changed during the walk (short realpath output); run again")
				}
				cur.Files[base+i].Real = l
			}
			cur.nreal = len(cur.Files)
		case "F":
			sz, r1, _ := strings.Cut(rest, "\t")
			mt, p, _ := strings.Cut(r1, "\t")
			mt, _, _ = strings.Cut(mt, ".")
			f, err := parseStat(sz+" "+mt+" "+p, cur.Snap)
			if err != nil {
				return nil, err
			}
			cur.Files = append(cur.Files, f)
		case "X":
			f := strings.Split(rest, "\t")
			if len(f) != 4 {
				return nil, fmt.Errorf("bad entry record %q", line)
			}
			cur.Bad = append(cur.Bad, rawBad{Kind: f[0], Path: inSnap(cur.Snap, f[1]), Final: inSnap(cur.Snap, f[2]), Incomplete: inSnap(cur.Snap, f[3])})
		case "O":
			cur.Odd = append(cur.Odd, inSnap(cur.Snap, rest))
		case "D":
			cur.Dirs = append(cur.Dirs, inSnap(cur.Snap, rest))
		case "W":
			cur.FindErrs = append(cur.FindErrs, complaintInSnap(cur.Snap, rest))
		case "Z":
			rc, err := strconv.Atoi(rest)
			if err != nil {
				return nil, fmt.Errorf("bad end record %q", line)
			}
			cur.FindRC = rc
			cur.Ended = true
		default:
			return nil, fmt.Errorf("unexpected output %q (a file name with a newline, or a file that changed during the walk)", line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n := len(items); n > 0 && !items[n-1].Ended && items[n-1].Snap != "" {
		// The last walk ran in the script's place.
		items[n-1].FindRC, items[n-1].Ended, items[n-1].execEnded = exit, true, true
	}
	for i, it := range items {
		if !it.Ended {
			return nil, fmt.Errorf("output for instance %d is cut short", i)
		}
		if it.nreal != len(it.Files) {
			return nil, fmt.Errorf("%d real paths for %d files (the snapshot changed during the walk?); run again", it.nreal, len(it.Files))
		}
	}
	return items, nil
}

// parseStat reads "SIZE MTIME PATH", PATH relative to the snapshot
// folder snap (see resolveScript).
func parseStat(l, snap string) (rawFile, error) {
	sz, rest, ok1 := strings.Cut(l, " ")
	mt, p, ok2 := strings.Cut(rest, " ")
	p = inSnap(snap, p)
	size, err1 := strconv.ParseInt(sz, 10, 64)
	mtime, err2 := strconv.ParseInt(mt, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || !strings.HasPrefix(p, "/") {
		return rawFile{}, fmt.Errorf("unexpected stat output %q (the snapshot changed during the walk?)", l)
	}
	return rawFile{Path: p, Size: size, MTime: mtime}, nil
}

// inSnap turns a path of the walk ("./a/b", or "." for the snapshot
// folder itself) into the path in snap; anything else (an absolute link
// target, "-") is returned as it is.
func inSnap(snap, p string) string {
	switch {
	case p == ".":
		return snap
	case strings.HasPrefix(p, "./"):
		return snap + p[1:]
	}
	return p
}

// complaintInSnap puts the snapshot folder back into a complaint of find
// about a path of the walk: GNU quotes it, with ASCII or, in a UTF-8
// locale, typographic quotes ('./a', '.', ‘./a’, ‘.’); busybox does not,
// and starts with it ("find: ./a: Permission denied", "find: .: ...").
func complaintInSnap(snap, l string) string {
	if rest, ok := strings.CutPrefix(l, "find: ./"); ok {
		l = "find: " + snap + "/" + rest
	} else if rest, ok := strings.CutPrefix(l, "find: .:"); ok {
		l = "find: " + snap + ":" + rest
	}
	return strings.NewReplacer(
		"'./", "'"+snap+"/", "'.'", "'"+snap+"'",
		"‘./", "‘"+snap+"/", "‘.’", "‘"+snap+"’",
	).Replace(l)
}

// maxListed bounds how many refusals one error lists.
const maxListed = 10

// build applies every rule to a raw walk and returns the resolution, or
// an error listing each refused file (wrapping the sentinels).
func build(s *spec, r *rawItem) (*resolution, error) {
	res := &resolution{ManifestSHA: r.ManifestSHA, Commit: r.Commit}
	switch r.FatalCode {
	case "":
	case "nohub":
		return res, fmt.Errorf("%w: %s does not exist on the node (or cannot be entered); check hub_dir", ErrNoHub, r.FatalDetail)
	case "norepo":
		return res, fmt.Errorf("%w: %s does not exist; check repo_id and repo_type, or download %s into the hub first", ErrNoRepo, r.FatalDetail, s.RepoID)
	case "noref":
		return res, fmt.Errorf("%w: revision %q: %s does not exist; give an existing ref or a 40-hex commit", ErrNoRef, s.Revision, r.FatalDetail)
	case "badref":
		return res, fmt.Errorf("%w: %s does not hold a 40-hex commit", ErrBadRef, r.FatalDetail)
	case "nosnap":
		return res, fmt.Errorf("%w: commit %s has no snapshot: %s does not exist (download that revision first)", ErrNoSnapshot, r.Commit, r.FatalDetail)
	default:
		return res, fmt.Errorf("%w: %s %s", ErrWalk, r.FatalCode, r.FatalDetail)
	}
	snapPrefix := r.Snap + "/"
	hubPrefix := r.RealHub + "/"
	if r.RealHub == "/" {
		hubPrefix = "/"
	}
	rel := func(p string) string { return strings.TrimPrefix(p, snapPrefix) }
	var errs []error
	add := func(err error) { errs = append(errs, err) }

	for _, l := range r.FindErrs {
		l = strings.ReplaceAll(strings.ReplaceAll(l, snapPrefix, ""), r.Snap, "snapshots/"+r.Commit)
		if len(l) > 300 {
			l = strings.ToValidUTF8(l[:140]+" ... "+l[len(l)-140:], "?")
		}
		switch {
		case strings.Contains(l, "Too many levels of symbolic links"), strings.Contains(l, "loop"):
			add(fmt.Errorf("%w: %s", ErrLinkLoop, l))
		default:
			add(fmt.Errorf("%w: %s", ErrWalk, l))
		}
	}
	if r.FindRC != 0 && len(r.FindErrs) == 0 {
		add(fmt.Errorf("%w: find exited with status %d in %s", ErrWalk, r.FindRC, r.Snap))
	}
	for _, d := range r.Dirs {
		if depth(rel(d)) >= maxDepth {
			add(fmt.Errorf("%w: %s is %d folders deep: a folder symlink loops back on itself", ErrLinkLoop, rel(d), maxDepth))
			break
		}
	}
	for _, o := range r.Odd {
		if s.selected(rel(o)) {
			add(fmt.Errorf("%w: %s (shown with '?') holds a tab or newline; rename it or exclude it", ErrBadName, rel(o)))
		}
	}
	for _, b := range r.Bad {
		name := rel(b.Path)
		if !s.selected(name) {
			continue
		}
		final := path.Clean(b.Final)
		switch {
		case b.Incomplete != "-":
			add(fmt.Errorf("%w: %s points to %s, which is still being downloaded (%s exists); finish the download", ErrIncomplete, name, final, path.Base(b.Incomplete)))
		case b.Kind == "dangling":
			add(fmt.Errorf("%w: %s points to %s, which does not exist (an interrupted download?)", ErrDangling, name, final))
		case b.Kind == "loop":
			add(fmt.Errorf("%w: %s never resolves (it links back to itself)", ErrLinkLoop, name))
		case b.Final == "-":
			add(fmt.Errorf("%w: %s is a fifo, socket or device", ErrNotRegular, name))
		default:
			add(fmt.Errorf("%w: %s resolves to %s, which is a fifo, socket or device", ErrNotRegular, name, final))
		}
	}
	seen := make(map[string]string, len(r.Files))
	res.Entries = make([]Entry, 0, len(r.Files))
	for _, f := range r.Files {
		name := rel(f.Path)
		if !s.selected(name) {
			continue
		}
		if depth(name) >= maxDepth {
			add(fmt.Errorf("%w: %s is %d folders deep: a folder symlink loops back on itself", ErrLinkLoop, name, maxDepth))
			continue
		}
		switch {
		case !strings.HasPrefix(f.Real, hubPrefix):
			add(fmt.Errorf("%w: %s resolves to %s, outside %s", ErrEscapesHub, name, f.Real, r.RealHub))
			continue
		case strings.HasSuffix(f.Real, ".incomplete"):
			add(fmt.Errorf("%w: %s resolves to %s, a partial download; finish the download", ErrIncomplete, name, f.Real))
			continue
		case strings.ContainsAny(f.Real, "\t\n"):
			add(fmt.Errorf("%w: %s resolves to %q, which holds a tab or newline", ErrBadName, name, f.Real))
			continue
		case !stableString(name) || !stableString(f.Real):
			// Values travel as cty strings, which are NFC-normalised UTF-8:
			// any other bytes would name a different file.
			add(fmt.Errorf("%w: %q (real path %q) is not NFC-normalised UTF-8; rename it or exclude it", ErrBadName, name, f.Real))
			continue
		}
		t := path.Join(s.Target, name)
		if strings.HasPrefix(name, "/") || path.Clean(name) != name || strings.HasPrefix(name, "../") || name == ".." ||
			!strings.HasPrefix(t, s.Target+"/") || strings.Contains(t, ":") {
			add(fmt.Errorf("%w: %s would be bound at %q, which is not a clean path under %s", ErrBadTarget, name, t, s.Target))
			continue
		}
		if prev, dup := seen[t]; dup {
			add(fmt.Errorf("%w: %s and %s both map to %s", ErrBadTarget, prev, name, t))
			continue
		}
		seen[t] = name
		res.Entries = append(res.Entries, Entry{Source: f.Real, Target: t, Size: f.Size, MTime: f.MTime})
		res.TotalBytes += f.Size
	}
	if len(errs) == 0 && len(res.Entries) == 0 {
		add(fmt.Errorf("%w: snapshot %s has no files that pass include/exclude", ErrEmpty, r.Snap))
	}
	if len(errs) > 0 {
		return res, joinErrs(s, errs)
	}
	sort.Slice(res.Entries, func(i, j int) bool { return res.Entries[i].Target < res.Entries[j].Target })
	res.Digest = digest(res.Entries)
	return res, nil
}

// stableString reports whether s survives a trip through a cty string.
func stableString(s string) bool {
	return utf8.ValidString(s) && cty.StringVal(s).AsString() == s
}

func depth(rel string) int { return strings.Count(rel, "/") + 1 }

// joinErrs keeps the first maxListed refusals and says how many more.
func joinErrs(s *spec, errs []error) error {
	if len(errs) == 1 {
		return fmt.Errorf("%s: %w", s.RepoID, errs[0])
	}
	n := len(errs)
	if n > maxListed {
		errs = append(errs[:maxListed:maxListed], fmt.Errorf("... and %d more", n-maxListed))
	}
	return fmt.Errorf("%s: %d files refused:\n%w", s.RepoID, n, errors.Join(errs...))
}

// digest is the sha256 of the entries (source, target, size, mtime), in
// target order.
func digest(es []Entry) string {
	h := sha256.New()
	var b []byte
	for _, e := range es {
		b = b[:0]
		b = append(b, e.Source...)
		b = append(b, '\t')
		b = append(b, e.Target...)
		b = append(b, '\t')
		b = strconv.AppendInt(b, e.Size, 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, e.MTime, 10)
		b = append(b, '\n')
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// FormatManifest renders entries in the seed's manifest format: one
// "REAL<TAB>TARGET" line per file, in the given order.
func FormatManifest(es []Entry) []byte {
	n := 0
	for _, e := range es {
		n += len(e.Source) + len(e.Target) + 2
	}
	b := make([]byte, 0, n)
	for _, e := range es {
		b = append(b, e.Source...)
		b = append(b, '\t')
		b = append(b, e.Target...)
		b = append(b, '\n')
	}
	return b
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
