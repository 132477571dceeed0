//go:build linux

package nodehelper

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"golang.org/x/sys/unix"
)

func init() { register("walk", walk) }

// walk PATH... is gitkit's scripts/walk.sh: one block per PATH, in order,
//
//	absent | other symlink | other file
//	walk, then the listing of the tree, then "#end STATUS"
//
// with no "#end" after the last PATH's walk (walk.sh execs that find: its
// status is the command's). The listing is the lines walk.sh's
// `find . ... -printf` and `sha256sum [--tag]` print, with paths as find
// prints them ("." and "./sub/name"):
//
//	d PATH                        a folder ("d ." is the tree itself)
//	l PATH -> TARGET              a symlink
//	o PATH                        anything else (fifo, socket, device)
//	HEX  PATH                     a regular file (sha256sum)
//	SHA256 (PATH) = HEX           one with the owner's exec bit (--tag)
//
// where a PATH holding a backslash or CR is escaped as GNU sha256sum
// (coreutils 9) escapes it, with a backslash before the line. The lines
// come in another order than find's (the provider sorts them). A name or
// symlink target holding a newline prints "#newline" and ends that tree's
// walk, as walk.sh's -quit does. A tree that cannot be read all through
// (a folder or file the user may not read) is reported on stderr and its
// status is 1, as find's and sha256sum's are; a tree that cannot be
// entered at all (cd fails) is "#end 1" whichever PATH it is, as in
// walk.sh. Paths are taken as the script's shell takes them: the first
// relative to the working folder, later ones relative to / (walk.sh's
// `cd /` after each walk).
func walk(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	out := bufio.NewWriterSize(stdout, 64<<10)
	w := &walker{out: out, stderr: stderr, h: sha256.New(), buf: make([]byte, 128<<10)}
	status := 0
	for i, p := range args {
		var st unix.Stat_t
		switch err := unix.Lstat(p, &st); {
		case err != nil:
			// [ ! -e ] is true for any failed stat (ENOENT, EACCES, ...).
			out.WriteString("absent\n")
			continue
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			out.WriteString("other symlink\n")
			continue
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			out.WriteString("other file\n")
			continue
		}
		out.WriteString("walk\n")
		if err := unix.Chdir(p); err != nil {
			fmt.Fprintf(stderr, "sparkform-node walk: can't cd to %s: %s\n", p, errText(err))
			out.WriteString("#end 1\n")
			continue
		}
		w.root, w.failed = p, false
		w.tree()
		code := 0
		if w.failed {
			code = 1
		}
		if i == len(args)-1 {
			status = code
			break
		}
		fmt.Fprintf(out, "#end %d\n", code)
		_ = unix.Chdir("/")
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(stderr, "sparkform-node walk: writing the listing: %v\n", err)
		return 1
	}
	return status
}

// walker walks one tree at a time, from the working folder (the tree).
type walker struct {
	out    *bufio.Writer
	stderr io.Writer
	root   string // the tree's PATH, for messages
	failed bool   // something could not be read: status 1
	h      hash.Hash
	buf    []byte   // file reads
	dents  []byte   // getdents
	sum    [32]byte // file hash
}

// errNewline ends a walk that met a newline in a name or symlink target.
var errNewline = errors.New("a newline in a name or symlink target")

// tree lists the working folder as walk.sh's find lists ".".
func (w *walker) tree() {
	w.out.WriteString("d .\n")
	fd, err := unix.Open(".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		w.fail(".", err)
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		w.fail(".", err)
		return
	}
	err = w.dir(fd, ".", []devIno{{st.Dev, st.Ino}})
	unix.Close(fd)
	if err == errNewline {
		w.out.WriteString("#newline\n")
	}
}

// devIno names a folder, to find a loop (a bind mount of an ancestor).
type devIno struct{ dev, ino uint64 }

// entry is one name in a folder and its type from getdents (DT_*).
type entry struct {
	name string
	typ  uint8
}

// dir lists the entries of the open folder fd, whose path is path, and
// the folders below it; up holds the folders from the tree down to it.
// It returns errNewline when it met a newline; other errors are reported
// and the walk goes on.
func (w *walker) dir(fd int, path string, up []devIno) error {
	ents, err := w.entries(fd)
	if err != nil {
		w.fail(path, err)
	}
	for _, e := range ents {
		p := path + "/" + e.name
		if strings.IndexByte(e.name, '\n') >= 0 {
			return errNewline
		}
		typ := e.typ
		if typ == unix.DT_UNKNOWN {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				w.fail(p, err)
				continue
			}
			typ = dtype(st.Mode)
		}
		if err := w.entry(fd, e.name, p, typ, up); err != nil {
			return err
		}
	}
	return nil
}

// entry lists one entry name (path p) of the folder fd, of type typ.
func (w *walker) entry(fd int, name, p string, typ uint8, up []devIno) error {
	switch typ {
	case unix.DT_DIR:
		w.out.WriteString("d " + p + "\n")
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			w.fail(p, err)
			return nil
		}
		defer unix.Close(sub)
		var st unix.Stat_t
		if err := unix.Fstat(sub, &st); err != nil {
			w.fail(p, err)
			return nil
		}
		id := devIno{st.Dev, st.Ino}
		for _, a := range up {
			if a == id {
				w.failf("%s: file system loop detected (a folder above it)", p)
				return nil
			}
		}
		return w.dir(sub, p, append(up, id))
	case unix.DT_LNK:
		target, err := w.readlink(fd, name)
		if err != nil {
			w.fail(p, err)
			return nil
		}
		if strings.IndexByte(target, '\n') >= 0 {
			return errNewline
		}
		w.out.WriteString("l " + p + " -> " + target + "\n")
	case unix.DT_REG:
		return w.file(fd, name, p, up)
	default:
		w.out.WriteString("o " + p + "\n")
	}
	return nil
}

// file hashes the regular file name (path p) in the folder fd.
func (w *walker) file(fd int, name, p string, up []devIno) error {
	// O_NONBLOCK: should it have become a fifo since getdents, opening it
	// does not wait for a writer (fstat then says what it is).
	f, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP { // now a symlink
			return w.entry(fd, name, p, unix.DT_LNK, up)
		}
		w.fail(p, err)
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		unix.Close(f)
		w.fail(p, err)
		return nil
	}
	if t := dtype(st.Mode); t != unix.DT_REG {
		unix.Close(f)
		return w.entry(fd, name, p, t, up)
	}
	err = w.hash(f)
	unix.Close(f)
	if err != nil {
		w.fail(p, err)
		return nil
	}
	sum := hex.EncodeToString(w.h.Sum(w.sum[:0]))
	esc, shown := sumName(p)
	if esc {
		w.out.WriteByte('\\')
	}
	if st.Mode&0o100 != 0 { // find -perm -100: sha256sum --tag
		w.out.WriteString("SHA256 (" + shown + ") = " + sum + "\n")
	} else {
		w.out.WriteString(sum + "  " + shown + "\n")
	}
	return nil
}

// hash reads the open file f to its end into w.sum.
func (w *walker) hash(f int) error {
	w.h.Reset()
	for {
		n, err := unix.Read(f, w.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		w.h.Write(w.buf[:n])
	}
}

// sumName is how GNU sha256sum writes name: a backslash, CR or newline
// escaped (and the line then starts with a backslash: esc).
func sumName(name string) (esc bool, shown string) {
	if !strings.ContainsAny(name, "\\\r\n") {
		return false, name
	}
	r := strings.NewReplacer(`\`, `\\`, "\r", `\r`, "\n", `\n`)
	return true, r.Replace(name)
}

// readlink is the target of the symlink name in the folder fd.
func (w *walker) readlink(fd int, name string) (string, error) {
	b := w.buf
	for {
		n, err := unix.Readlinkat(fd, name, b)
		if err != nil {
			return "", err
		}
		if n < len(b) {
			return string(b[:n]), nil
		}
		b = make([]byte, 2*len(b))
	}
}

// entries reads the names in the folder fd (without "." and "..").
func (w *walker) entries(fd int) ([]entry, error) {
	if w.dents == nil {
		w.dents = make([]byte, 32<<10)
	}
	var ents []entry
	for {
		n, err := unix.Getdents(fd, w.dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return ents, err
		}
		if n <= 0 {
			return ents, nil
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8,
		// name (NUL-terminated).
		for b := w.dents[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return ents, errors.New("malformed getdents record")
			}
			typ := b[18]
			name := b[19:reclen]
			if i := indexNUL(name); i >= 0 {
				name = name[:i]
			}
			if s := string(name); s != "." && s != ".." {
				ents = append(ents, entry{s, typ})
			}
			b = b[reclen:]
		}
	}
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// dtype is the DT_* type of a stat mode.
func dtype(mode uint32) uint8 {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFLNK:
		return unix.DT_LNK
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFIFO:
		return unix.DT_FIFO
	case unix.S_IFSOCK:
		return unix.DT_SOCK
	case unix.S_IFCHR:
		return unix.DT_CHR
	case unix.S_IFBLK:
		return unix.DT_BLK
	}
	return unix.DT_UNKNOWN
}

// fail reports what could not be read at p (a path in the tree): the tree's
// status becomes 1, as find's or sha256sum's would.
func (w *walker) fail(p string, err error) {
	w.failf("%s: %s", p, errText(err))
}

func (w *walker) failf(format string, args ...any) {
	w.failed = true
	fmt.Fprintf(w.stderr, "sparkform-node walk: %s: "+format+"\n", append([]any{w.root}, args...)...)
}

// errText is err as the tools say it ("Permission denied").
func errText(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		if s != "" {
			return strings.ToUpper(s[:1]) + s[1:]
		}
	}
	return err.Error()
}
