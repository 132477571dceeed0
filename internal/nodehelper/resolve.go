package nodehelper

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

func init() { register("resolve", resolve) }

// resolve replaces the GNU find path of hubstage's resolve script
// (providers/hubstage/resolve.go, resolveScript with its gnu argument
// set): arguments "MAXDEPTH GNU MARK" then groups of four "HUB REPO REV
// MANIFEST". Its stdout, the lines it writes to stderr between the
// marker lines and its exit status are those of the script run by the
// same user in the same folder:
//
//   - I, M, H, E, C, S and W records as the script's shell part prints
//     them (the same tests: stat, cd, the first line of a ref file);
//   - the walk as `find -L . -mindepth 1 -maxdepth MAXDEPTH` with the
//     script's expression: entries in readdir order (sorted by inode
//     where fts sorts: over 10,000 entries on a file system other than
//     tmpfs, NFS or CIFS), a folder before its contents; F lines
//     "F\tSIZE\tSEC.NSEC0\tPATH" (find's %T@: nine digits of nanoseconds
//     and a 0), D lines, and the -exec + batches (odd names: O lines;
//     files: their real paths; the rest: X lines) run when a batch
//     reaches find's argument limit (128 KiB, less the environment where
//     ARG_MAX is small) and at the end in the expression's order, so a
//     real path line comes after its F line and in F order, as the
//     parser needs;
//   - find's complaints (a folder it cannot read, an entry it cannot
//     stat, a link loop, a folder that loops back to an ancestor) with
//     GNU's wording and quoting: typographic quotes when LC_ALL, else
//     LC_CTYPE, else LANG names a UTF-8 codeset, ASCII quotes otherwise,
//     and gnulib's escapes for unprintable bytes; messages are the
//     English ones (a locale whose catalogs translate find's messages is
//     not reproduced);
//   - exit status: the last instance's walk status (0, or 1 after any
//     complaint), as when the script execs find for it; 0 when the last
//     instance did not reach its walk.
//
// What the script's shell writes to stderr outside the markers (a
// manifest_path it cannot read) is not reproduced. A walk holds one
// folder's names per open folder and the pending batch (at most the
// argument limit): its memory does not grow with the snapshot.
func resolve(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 3 {
		io.WriteString(stderr, "usage: sparkform-node resolve MAXDEPTH GNU MARK [HUB REPO REV MANIFEST]...\n")
		return ExitUsage
	}
	maxd, err := strconv.Atoi(args[0])
	if err != nil || maxd < 0 || args[1] == "" {
		// Only the GNU path is replaced: its caller runs the script's
		// busybox path itself.
		io.WriteString(stderr, "sparkform-node resolve: MAXDEPTH must be a number and GNU non-empty\n")
		return ExitUsage
	}
	out := bufio.NewWriterSize(stdout, 64<<10)
	r := &resolver{out: out, errw: stderr, maxd: maxd, mark: args[2], utf8: utf8Locale(), argMax: argMax()}
	rest := args[3:]
	status := 0
	for i := 0; len(rest) >= 4; i++ {
		last := len(rest) < 8
		r.printf("I\t", strconv.Itoa(i), "\n")
		walked, rc := r.one(i, rest[0], rest[1], rest[2], rest[3], last)
		status = 0
		if walked && last {
			status = rc
		}
		rest = rest[4:]
	}
	if err := out.Flush(); err != nil {
		return 1
	}
	return status
}

type resolver struct {
	out    *bufio.Writer
	errw   io.Writer
	maxd   int
	mark   string
	utf8   bool
	argMax int
}

func (r *resolver) printf(parts ...string) {
	for _, p := range parts {
		r.out.WriteString(p)
	}
}

// one is the script's one(): instance i. walked says the walk ran (its
// status rc).
func (r *resolver) one(i int, hub, repo, rev, mp string, last bool) (walked bool, rc int) {
	if mp != "" {
		if isReg(mp) {
			r.printf("M\t", fileSHA(mp), "\n")
		} else {
			r.printf("M\t-\n")
		}
	}
	if syscall.Chdir(hub) != nil {
		r.printf("E\tnohub\t", hub, "\n")
		return false, 0
	}
	rh, err := syscall.Getwd()
	if err != nil {
		rh = hub
	}
	r.printf("H\t", rh, "\n")
	rd := rh + "/" + repo
	if !isDir(rd) {
		r.printf("E\tnorepo\t", rd, "\n")
		return false, 0
	}
	c := rev
	if !isHex(rev) || len(rev) != 40 {
		c = ""
		rf := rd + "/refs/" + rev
		if !isReg(rf) {
			r.printf("E\tnoref\t", rf, "\n")
			return false, 0
		}
		c = firstLine(rf)
		if c == "" || !isHex(c) || len(c) != 40 {
			r.printf("E\tbadref\t", rf, "\n")
			return false, 0
		}
	}
	r.printf("C\t", c, "\n")
	sd := rd + "/snapshots/" + c
	if !isDir(sd) {
		r.printf("E\tnosnap\t", sd, "\n")
		return false, 0
	}
	r.printf("S\t", sd, "\n")
	if syscall.Chdir(sd) != nil {
		r.printf("W\t", sd, ": cannot enter the folder (permission denied?)\n", "Z\t1\n")
		return false, 0
	}
	io.WriteString(r.errw, r.mark+"\t"+strconv.Itoa(i)+"\n")
	rc = r.walk()
	if !last {
		io.WriteString(r.errw, r.mark+"\n")
		r.printf("Z\t", strconv.Itoa(rc), "\n")
	}
	return true, rc
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isReg and isDir are sh's [ -f ] and [ -d ]: stat, links followed.
func isReg(p string) bool {
	var st unix.Stat_t
	return unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}

func isDir(p string) bool {
	var st unix.Stat_t
	return unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// fileSHA is `s=$(sha256sum < F); ${s%% *}`: "" when F cannot be read.
func fileSHA(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// firstLine is `IFS= read -r c < F`: the bytes before the first newline,
// less NUL bytes (dash's read drops them); "" when F cannot be opened.
func firstLine(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := bufio.NewReader(f).ReadString('\n')
	return strings.ReplaceAll(strings.TrimSuffix(b, "\n"), "\x00", "")
}

// The texts of the script's odd and bad helpers: their length counts
// toward find's argument limit for those batches (the provider's test
// checks they match the script).
const (
	ResolveOddLen = 68
	ResolveBadLen = 474
)

// argMax is find's limit on one -exec + command line (buildcmd.c:
// bc_init_controlinfo with 2048 of headroom, then
// bc_use_sensible_arg_max): 128 KiB unless ARG_MAX less the environment
// is smaller.
func argMax() int {
	max := int64(131072) // glibc's sysconf(_SC_ARG_MAX): at least this,
	var rl unix.Rlimit   // or a quarter of the stack limit.
	if unix.Getrlimit(unix.RLIMIT_STACK, &rl) == nil && rl.Cur/4 > uint64(max) && rl.Cur/4 < 1<<62 {
		max = int64(rl.Cur / 4)
	}
	env := 0
	for _, e := range os.Environ() {
		env += len(e) + 1
	}
	lim := max - int64(env) - 2048
	switch {
	case lim < 4096:
		return 4096
	case lim < 128<<10:
		return int(lim)
	}
	return 128 << 10
}

// utf8Locale says whether find's quotes are typographic: the codeset of
// LC_ALL, else LC_CTYPE, else LANG is UTF-8.
func utf8Locale() bool {
	v := ""
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v = os.Getenv(k); v != "" {
			break
		}
	}
	_, cs, ok := strings.Cut(v, ".")
	if !ok {
		return false
	}
	cs, _, _ = strings.Cut(cs, "@")
	cs = strings.ToLower(strings.ReplaceAll(cs, "-", ""))
	return cs == "utf8"
}

// batch is one -exec ... {} + of the walk: find gathers arguments and
// runs the command when the next one would pass the limit, and at the
// end.
type batch struct {
	initial, chars, max int
	args                []batchArg
	run                 func([]batchArg)
}

// batchArg is one argument, with what the helper found for it when it
// met it (realpath's answer).
type batchArg struct {
	path, real string
	err        error
}

func (b *batch) push(a batchArg) {
	if b.chars+len(a.path)+1 > b.max && len(b.args) > 0 {
		b.flush()
	}
	b.args = append(b.args, a)
	b.chars += len(a.path) + 1
}

func (b *batch) flush() {
	if len(b.args) > 0 {
		b.run(b.args)
	}
	b.args, b.chars = b.args[:0], b.initial
}

// resolveWalker is one walk of a snapshot folder (the process's working
// folder).
type resolveWalker struct {
	*resolver
	rc             int
	odd, real, bad *batch
	active         map[resolveDevIno]string // the folders being walked: fts's cycle check
	rp             *realpather
}

type resolveDevIno struct{ dev, ino uint64 }

// Initial arguments of each -exec: "sh -c SCRIPT sh" and "realpath".
const shArgs = len("sh") + 1 + len("-c") + 1 + len("sh") + 1

func (r *resolver) walk() int {
	w := &resolveWalker{resolver: r, active: map[resolveDevIno]string{}}
	w.odd = &batch{initial: shArgs + ResolveOddLen + 1, max: r.argMax, run: w.runOdd}
	w.real = &batch{initial: len("realpath") + 1, max: r.argMax, run: w.runReal}
	w.bad = &batch{initial: shArgs + ResolveBadLen + 1, max: r.argMax, run: w.runBad}
	for _, b := range []*batch{w.odd, w.real, w.bad} {
		b.chars = b.initial
	}
	cwd, err := syscall.Getwd()
	if err != nil {
		cwd = "."
	}
	w.rp = newRealpather()
	defer w.rp.close()
	var st unix.Stat_t
	if err := unix.Stat(".", &st); err != nil {
		w.complain(".", err)
	} else if r.maxd > 0 {
		w.active[resolveDevIno{uint64(st.Dev), st.Ino}] = "."
		fd, err := unix.Open(".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			w.complain(".", err)
		} else {
			w.dir(fd, ".", cwd, 1)
			unix.Close(fd)
		}
	}
	w.odd.flush()
	w.real.flush()
	w.bad.flush()
	return w.rc
}

// dir visits the entries of the open folder fd (path p, real path
// phys), at depth d.
func (w *resolveWalker) dir(fd int, p, phys string, d int) {
	names, inos, err := readNames(fd)
	if err != nil {
		w.complain(p, err)
		return
	}
	if len(names) > 10000 && inodeSortUseful(fd) {
		idx := make([]int, len(names))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			switch {
			case inos[a] < inos[b]:
				return -1
			case inos[a] > inos[b]:
				return 1
			}
			return 0
		})
		sorted := make([]string, len(names))
		for i, j := range idx {
			sorted[i] = names[j]
		}
		names = sorted
	}
	inos = nil
	for _, name := range names {
		w.entry(fd, p+"/"+name, phys, name, d)
	}
}

// Kinds of entry, as the predicates see them.
const (
	kindOther = iota // unknown (no stat), link, fifo, socket, device
	kindFile
	kindDir
)

// entry is find's consider_visiting for one entry at depth d.
func (w *resolveWalker) entry(dirfd int, p, phys, name string, d int) {
	var st unix.Stat_t
	kind := kindOther
	err := unix.Fstatat(dirfd, name, &st, 0)
	switch {
	case err == nil:
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			kind = kindFile
		case unix.S_IFDIR:
			kind = kindDir
			if anc, loop := w.active[resolveDevIno{uint64(st.Dev), st.Ino}]; loop {
				w.rc = 1
				w.stderrLine("find: File system loop detected; " + w.quote(p) + " is part of the same file system loop as " + w.quote(anc) + ".")
				return
			}
		}
	case err == unix.ENOENT:
		var lst unix.Stat_t
		if unix.Fstatat(dirfd, name, &lst, unix.AT_SYMLINK_NOFOLLOW) != nil {
			w.complain(p, err)
		}
		// else a dangling link: the predicates see the link.
	case err == unix.ELOOP:
		w.complain(p, err)
		return
	default:
		// find says so and goes on with what it knows: the name.
		w.complain(p, err)
	}
	switch {
	case strings.ContainsAny(name, "\n\t"):
		w.odd.push(batchArg{path: p})
	case kind == kindFile:
		w.printf("F\t", strconv.FormatInt(st.Size, 10), "\t", findTime(st.Mtim), "\t", p, "\n")
		// The real path now, while the folder is open: one lookup per link
		// and no walk from / (realpath would run later on the path).
		rp, err := w.rp.resolveAt(dirfd, phys, name)
		w.real.push(batchArg{path: p, real: rp, err: err})
	case kind == kindDir:
		w.printf("D\t", p, "\n")
	default:
		w.bad.push(batchArg{path: p})
	}
	if kind != kindDir || d >= w.maxd {
		return
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		w.complain(p, err)
		return
	}
	defer unix.Close(fd)
	k := resolveDevIno{uint64(st.Dev), st.Ino}
	w.active[k] = p
	sub, err := w.rp.resolveAt(dirfd, phys, name)
	if err != nil {
		sub = phys + "/" + name // only real paths of its files use it; they fail alike
	}
	w.dir(fd, p, sub, d+1)
	delete(w.active, k)
}

// findTime is find's %T@: seconds, a dot, the nanoseconds in nine digits
// and a 0.
func findTime(t unix.Timespec) string {
	ns := strconv.FormatInt(t.Nsec, 10)
	return strconv.FormatInt(t.Sec, 10) + "." + strings.Repeat("0", 9-len(ns)) + ns + "0"
}

// readNames reads a folder's entries in readdir order with their inode
// numbers (fts sorts big folders by them).
func readNames(fd int) ([]string, []uint64, error) {
	var names []string
	var inos []uint64
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, nil, err
		}
		if n <= 0 {
			return names, inos, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				break
			}
			ino := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
				uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
			nm := b[19:reclen]
			if i := slices.Index(nm, 0); i >= 0 {
				nm = nm[:i]
			}
			if s := string(nm); s != "." && s != ".." {
				names = append(names, s)
				inos = append(inos, ino)
			}
			b = b[reclen:]
		}
	}
}

// inodeSortUseful is gnulib fts's dirent_inode_sort_may_be_useful.
func inodeSortUseful(fd int) bool {
	var sf unix.Statfs_t
	if unix.Fstatfs(fd, &sf) != nil {
		return true
	}
	switch uint32(sf.Type) {
	case 0xFF534D42, 0x6969, 0x01021994: // CIFS, NFS, tmpfs
		return false
	}
	return true
}

func (w *resolveWalker) complain(p string, err error) {
	w.rc = 1
	w.stderrLine("find: " + w.quote(p) + ": " + resolveErrText(err))
}

func (r *resolver) stderrLine(s string) { io.WriteString(r.errw, s+"\n") }

// runOdd is the script's odd helper: "O\t" and the name with tabs and
// newlines as '?'.
func (w *resolveWalker) runOdd(args []batchArg) {
	for _, a := range args {
		b := []byte(a.path) // tr works on bytes: names need not be UTF-8
		for i, c := range b {
			if c == '\t' || c == '\n' {
				b[i] = '?'
			}
		}
		w.printf("O\t", string(b), "\n")
	}
}

// runReal is realpath over a batch.
func (w *resolveWalker) runReal(args []batchArg) {
	for _, a := range args {
		if a.err != nil {
			w.rc = 1
			w.stderrLine("realpath: " + a.path + ": " + resolveErrText(a.err))
			continue
		}
		w.printf(a.real, "\n")
	}
}

// runBad is the script's bad helper: an X record per entry, following a
// link chain by hand (at most 40 links) to say where it ends.
func (w *resolveWalker) runBad(args []batchArg) {
	for _, a := range args {
		f := a.path
		if !isLink(f) {
			w.printf("X\tspecial\t", f, "\t-\t-\n")
			continue
		}
		cur := f
		for n := 0; isLink(cur) && n < 40; n++ {
			t, err := os.Readlink(cur)
			if err != nil {
				t = ""
			}
			t = strings.TrimRight(t, "\n")
			if strings.HasPrefix(t, "/") {
				cur = t
			} else {
				if i := strings.LastIndexByte(cur, '/'); i >= 0 {
					cur = cur[:i]
				}
				cur += "/" + t
			}
		}
		k := "dangling"
		var st unix.Stat_t
		if isLink(cur) {
			k = "loop"
		} else if unix.Stat(cur, &st) == nil {
			k = "special"
		}
		inc := "-"
		if unix.Stat(cur+".incomplete", &st) == nil {
			inc = cur + ".incomplete"
		}
		w.printf("X\t", k, "\t", f, "\t", cur, "\t", inc, "\n")
	}
}

func isLink(p string) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// realpather finds real paths as realpath(1) does, by readlinkat in
// folders it keeps open: a file of a snapshot costs one lookup per link
// of its chain (a snapshot link, a repo blob link, the blob) where
// realpath walks every component of every path from /.
type realpather struct {
	dirs map[string]int // real folder path -> an O_PATH descriptor
}

// maxDirFDs bounds the open folders; past it they are all closed.
const maxDirFDs = 512

func newRealpather() *realpather { return &realpather{dirs: map[string]int{}} }

func (r *realpather) close() {
	for _, fd := range r.dirs {
		unix.Close(fd)
	}
	clear(r.dirs)
}

// dirFD is a descriptor of the real folder p.
func (r *realpather) dirFD(p string) (int, error) {
	if fd, ok := r.dirs[p]; ok {
		return fd, nil
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	r.dirs[p] = fd
	return fd, nil
}

// resolveAt is the real path of name in the folder dirfd, whose real
// path is phys.
func (r *realpather) resolveAt(dirfd int, phys, name string) (string, error) {
	if len(r.dirs) > maxDirFDs {
		r.close()
	}
	dfd, dest, rest := dirfd, phys, name
	links := 0
	buf := make([]byte, 4096)
	for rest != "" {
		var comp string
		comp, rest, _ = strings.Cut(rest, "/")
		switch comp {
		case "", ".":
			continue
		case "..":
			if i := strings.LastIndexByte(dest, '/'); i > 0 {
				dest = dest[:i]
			} else {
				dest = "/"
			}
			fd, err := r.dirFD(dest)
			if err != nil {
				return "", err
			}
			dfd = fd
			continue
		}
		next := dest + "/" + comp
		if dest == "/" {
			next = "/" + comp
		}
		if fd, ok := r.dirs[next]; ok && rest != "" {
			dest, dfd = next, fd
			continue
		}
		n, err := unix.Readlinkat(dfd, comp, buf)
		switch {
		case err == unix.EINVAL: // not a link
			if rest == "" {
				return next, nil
			}
			fd, err := unix.Openat(dfd, comp, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return "", err
			}
			r.dirs[next] = fd
			dest, dfd = next, fd
		case err != nil:
			return "", err
		case n >= len(buf):
			return "", unix.ENAMETOOLONG
		default:
			if links++; links > 40 {
				return "", unix.ELOOP
			}
			t := string(buf[:n])
			if strings.HasPrefix(t, "/") {
				dest = "/"
				if dfd, err = r.dirFD("/"); err != nil {
					return "", err
				}
			}
			if rest != "" {
				t += "/" + rest
			}
			rest = t
		}
	}
	return dest, nil
}

// glibcErr holds strerror's text where Go's differs by more than the
// first letter.
var glibcErr = map[unix.Errno]string{
	unix.ESTALE: "Stale file handle",
}

// resolveErrText is glibc's strerror for err.
func resolveErrText(err error) string {
	var en unix.Errno
	if !errors.As(err, &en) {
		return err.Error()
	}
	if s, ok := glibcErr[en]; ok {
		return s
	}
	s := en.Error()
	if s == "" {
		return "Unknown error " + strconv.Itoa(int(en))
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// quote is gnulib's quotearg with locale_quoting_style, as find quotes
// file names in its complaints.
func (r *resolver) quote(s string) string {
	lq, rq := "'", "'"
	if r.utf8 {
		lq, rq = "\u2018", "\u2019"
	}
	var b strings.Builder
	b.WriteString(lq)
	octal := func(c byte) {
		b.WriteByte('\\')
		b.WriteByte('0' + c>>6)
		b.WriteByte('0' + c>>3&7)
		b.WriteByte('0' + c&7)
	}
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], rq) {
			b.WriteString("\\" + rq)
			i += len(rq)
			continue
		}
		c := s[i]
		if esc := strings.IndexByte("\a\b\f\n\r\t\v\\", c); esc >= 0 {
			b.WriteByte('\\')
			b.WriteByte("abfnrtv\\"[esc])
			i++
			continue
		}
		if c < utf8.RuneSelf {
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				octal(c)
			}
			i++
			continue
		}
		if !r.utf8 {
			octal(c)
			i++
			continue
		}
		ru, n := utf8.DecodeRuneInString(s[i:])
		if ru != utf8.RuneError && unicode.IsGraphic(ru) {
			b.WriteString(s[i : i+n])
		} else {
			for j := 0; j < n; j++ {
				octal(s[i+j])
			}
		}
		i += n
	}
	b.WriteString(rq)
	return b.String()
}
