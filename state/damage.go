package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrDamaged: the state file exists but cannot be read safely (truncated,
// a damaged page, an empty file). The error names the file, what is wrong
// and how to recover (the last-good copy, BackupPath).
var ErrDamaged = errors.New("state: state file is damaged")

// ErrNoLineage: a writer found an existing state file that is empty or has
// no lineage. Taking it as a new state would start a new lineage and record
// whatever the nodes hold now as the values to restore; Options.ResetState
// allows it.
var ErrNoLineage = errors.New("state: existing state file has no lineage")

// BackupPath is the last-good copy of the state file at path: written after
// every write session that committed changes, from a file that passed
// bbolt's consistency check.
func BackupPath(path string) string { return path + ".backup" }

// DamagedError says what is wrong with a state file and what to do.
type DamagedError struct {
	Path   string
	Reason string

	rollback bool // the file is behind its commit record
}

func (e *DamagedError) Error() string {
	msg := fmt.Sprintf("state file %s is damaged: %s.", e.Path, e.Reason)
	bak := BackupPath(e.Path)
	if fi, err := os.Stat(bak); err == nil {
		restore := fmt.Sprintf("mv %s %s.damaged && cp -p %s %s", e.Path, e.Path, bak, e.Path)
		note := ""
		// A copy older than the last commit (the writer after it did not
		// get to refresh it) is refused like the rollback it is, unless
		// the record goes with the restore.
		want, ok, _ := readCommitRecord(e.Path)
		if got, has := fileTxid(bak); ok && (!has || got < want) {
			restore += " && rm " + CommitRecordPath(e.Path)
			note = " The copy is older than the last commit: what was committed after it is lost, and the plan finds it on the nodes."
		}
		msg += fmt.Sprintf(" A last-good copy is %s (written %s): keep the damaged file aside and restore it with\n"+
			"    %s\nthen run `sparkform plan`, which refreshes every instance from its node.%s",
			bak, fi.ModTime().UTC().Format(time.RFC3339), restore, note)
		if e.rollback {
			msg += fmt.Sprintf(" If you put an older copy of the state here on purpose, remove %s instead.", CommitRecordPath(e.Path))
		}
	} else {
		msg += " There is no last-good copy (" + filepath.Base(bak) + ") next to it: restore the file from your own backup" +
			" (or a snapshot pushed with `sparkform state push`), or move it aside and `sparkform import` what the nodes hold."
	}
	return msg
}

// Is makes errors.Is(err, ErrDamaged) true, and ErrFormat too: a file
// this build cannot read as state is an unsupported state file.
func (e *DamagedError) Is(target error) bool { return target == ErrDamaged || target == ErrFormat }

func damaged(path, format string, args ...any) error {
	return &DamagedError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// bbolt's on-disk layout (go.etcd.io/bbolt/internal/common, v1.5): a 16-byte
// page header, then the meta fields. Checked here, before bbolt maps the
// file, because bbolt trusts them: a file shorter than its high-water mark
// makes bbolt read past the end of its mapping (SIGBUS/SIGSEGV, which no
// recover() catches).
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	pageHeaderSize  = 16
	metaChecksumOff = 56 // offset of the checksum inside the meta
	metaPageFlag    = 0x04
	pgidNoFreelist  = ^uint64(0)
)

type diskMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64
	txid     uint64
}

func parseMeta(page []byte) (diskMeta, string) {
	if len(page) < pageHeaderSize+metaChecksumOff+8 {
		return diskMeta{}, "too short for a meta page"
	}
	le := binary.LittleEndian
	if flags := le.Uint16(page[8:]); flags&metaPageFlag == 0 {
		return diskMeta{}, fmt.Sprintf("page header says type 0x%x, not a meta page", flags)
	}
	m := page[pageHeaderSize:]
	if le.Uint32(m[0:]) != boltMagic {
		return diskMeta{}, "no bbolt magic number"
	}
	if v := le.Uint32(m[4:]); v != boltVersion {
		return diskMeta{}, fmt.Sprintf("bbolt format version %d (want %d)", v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(m[:metaChecksumOff])
	if le.Uint64(m[metaChecksumOff:]) != h.Sum64() {
		return diskMeta{}, "checksum mismatch"
	}
	d := diskMeta{
		pageSize: le.Uint32(m[8:]),
		root:     le.Uint64(m[16:]),
		freelist: le.Uint64(m[32:]),
		pgid:     le.Uint64(m[40:]),
		txid:     le.Uint64(m[48:]),
	}
	switch {
	case d.pageSize < 512 || d.pageSize > 1<<16 || d.pageSize&(d.pageSize-1) != 0:
		return diskMeta{}, fmt.Sprintf("page size %d", d.pageSize)
	case d.pgid < 4:
		return diskMeta{}, fmt.Sprintf("high-water mark %d pages", d.pgid)
	case d.root < 2 || d.root >= d.pgid:
		return diskMeta{}, fmt.Sprintf("root page %d outside 2..%d", d.root, d.pgid-1)
	case d.freelist != pgidNoFreelist && (d.freelist < 2 || d.freelist >= d.pgid):
		return diskMeta{}, fmt.Sprintf("freelist page %d outside 2..%d", d.freelist, d.pgid-1)
	}
	return d, ""
}

// checkFile validates the open state file's size and meta pages before
// bbolt maps it (called with the file's flock held, so no commit runs), and
// that it is not behind its commit record (a rollback). It returns nil for
// an empty file (the callers decide what that means) and a *DamagedError
// for a file bbolt cannot read safely.
func checkFile(f *os.File, path string) error {
	m, err := readMetaPages(f, path)
	if err != nil || m.pageSize == 0 {
		return err
	}
	return checkRollback(path, m.txid)
}

// readMetaPages returns the meta page bbolt would use (zero for an empty
// file), after checking that the file is as long as it says.
func readMetaPages(f *os.File, path string) (diskMeta, error) {
	fi, err := f.Stat()
	if err != nil {
		return diskMeta{}, fmt.Errorf("state: %w", err)
	}
	size := fi.Size()
	if !fi.Mode().IsRegular() {
		return diskMeta{}, notRegular(path, fi)
	}
	if size == 0 {
		return diskMeta{}, nil
	}
	head := make([]byte, 4096)
	n, _ := f.ReadAt(head, 0)
	head = head[:n]
	m0, why0 := parseMeta(head)
	ps := int64(4096)
	if why0 == "" {
		ps = int64(m0.pageSize)
	}
	page1 := make([]byte, pageHeaderSize+metaChecksumOff+8)
	n, _ = f.ReadAt(page1, ps)
	m1, why1 := parseMeta(page1[:n])
	if why1 == "" && why0 == "" && m1.pageSize != m0.pageSize {
		why1 = fmt.Sprintf("page size %d differs from the first meta page's %d", m1.pageSize, m0.pageSize)
	}
	var m diskMeta
	switch {
	case why0 != "" && why1 != "":
		if size < 2*ps {
			return diskMeta{}, damaged(path, "it is only %d bytes, shorter than bbolt's two meta pages (%d bytes)", size, 2*ps)
		}
		return diskMeta{}, damaged(path, "both bbolt meta pages are unreadable (first: %s; second: %s)", why0, why1)
	case why0 != "":
		m = m1
	case why1 != "":
		m = m0
	case m1.txid > m0.txid:
		m = m1
	default:
		m = m0
	}
	if want := int64(m.pgid) * int64(m.pageSize); size < want {
		return diskMeta{}, damaged(path, "it is %d bytes long, but its header says %d pages of %d bytes (%d bytes): the file was truncated",
			size, m.pgid, m.pageSize, want)
	}
	return m, nil
}

// guard runs fn (a bbolt call) so that a damaged page becomes an error
// instead of a crash: bbolt panics on pages it cannot make sense of, and a
// pointer into the mapping that runs past the end of the file faults,
// which SetPanicOnFault turns into a recoverable panic for this goroutine.
func guard(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = damaged(path, "bbolt could not read it (%v)", r)
		}
	}()
	return fn()
}

// writeBackup copies db to BackupPath(path) when it passes bbolt's
// consistency check: through a temporary file, fsync'd and renamed, so the
// last-good copy is never half written. A failed check leaves the old copy.
func writeBackup(db *bolt.DB, path string) error {
	bak := BackupPath(path)
	tmp := bak + ".tmp"
	return guard(path, func() error {
		return db.View(func(tx *bolt.Tx) error {
			// Drain the whole channel: the check runs in its own goroutine
			// and must finish before this transaction ends.
			var bad error
			for err := range tx.Check() {
				if bad == nil {
					bad = damaged(path, "bbolt's consistency check failed (%v)", err)
				}
			}
			if bad != nil {
				return bad
			}
			// Every checksum and record too: a copy of a damaged record
			// would replace the last good one.
			if err := checkRecords(tx, path, true); err != nil {
				return err
			}
			f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			if _, err := tx.WriteTo(f); err != nil {
				f.Close()
				os.Remove(tmp)
				return err
			}
			if err := f.Sync(); err != nil {
				f.Close()
				os.Remove(tmp)
				return err
			}
			if err := f.Close(); err != nil {
				os.Remove(tmp)
				return err
			}
			return os.Rename(tmp, bak)
		})
	})
}

// writerActive reports whether a writer holds the lock of the state at
// path now (a writer creating the file holds it while the file is empty).
func writerActive(path string) bool {
	f, err := os.Open(lockPath(path))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

func noLineage(path, why string) error {
	return fmt.Errorf("%w: %s exists but %s. Taking it as a new state would start a new lineage and "+
		"record what the nodes hold now as the values destroy restores, so sparkform refuses. "+
		"If this file should hold your state, restore it (a last-good copy is kept as %s); "+
		"if you really mean to start over here, run the command again with -reset-state",
		ErrNoLineage, path, why, BackupPath(path))
}

// checkExisting decides, with the writer lock held, whether Open may give
// the file at path a new lineage: only when there is no file yet, or when
// opts.ResetState says so. It also tightens a .sparkform folder left
// readable by others (state holds node details and restore values).
func checkExisting(path string, opts Options) (bool, error) {
	if dir := filepath.Dir(path); filepath.Base(dir) == ".sparkform" {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(dir, 0o700); err != nil {
				return false, fmt.Errorf("state: restrict %s to 0700: %w", dir, err)
			}
		}
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := danglingLink(path); err != nil {
			return false, err
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("state: %w", err)
	case !fi.Mode().IsRegular():
		return false, notRegular(path, fi)
	case opts.ResetState:
		return true, nil
	case fi.Size() == 0:
		return false, noLineage(path, "is empty (0 bytes)")
	}
	return false, nil
}

// Page types in a bbolt page header's flags.
const (
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01 // leaf element flag: the value is a bucket
	elemSize         = 16   // branch and leaf page elements are 16 bytes
)

// checkTree walks every page the file's current meta reaches (the bucket
// trees, nested and inline buckets, the freelist) without trusting any
// of it: each page is inside the file and the high-water mark, of the
// type its parent expects, referenced once (a cycle sends bbolt's
// recursive search into a stack overflow, which no recover() catches),
// and every element lies inside its page. A freed page must not be
// reachable: a writer would reuse it over live data. It looks at every
// page in use, so it runs once per Store (the first open), not per
// transaction; it maps the file rather than reading it, so it costs the
// pages it looks at and no copy of the file.
func checkTree(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("state: map %s: %w", path, err)
	}
	defer syscall.Munmap(data)
	return checkPages(data, path)
}

func checkPages(data []byte, path string) error {
	var err error
	m0, why0 := parseMeta(data)
	ps := 4096
	if why0 == "" {
		ps = int(m0.pageSize)
	}
	var m1 diskMeta
	why1 := "too short"
	if len(data) > ps {
		m1, why1 = parseMeta(data[ps:])
	}
	m := m0
	if why0 != "" || (why1 == "" && m1.txid > m0.txid) {
		m = m1
	}
	ps = int(m.pageSize)
	if m.pageSize == 0 || m.pgid > uint64(len(data))/uint64(m.pageSize) {
		return damaged(path, "its header says %d pages of %d bytes, more than the file holds", m.pgid, m.pageSize)
	}
	le := binary.LittleEndian
	seen := make([]uint64, (m.pgid+63)/64)
	isSeen := func(i uint64) bool { return seen[i/64]&(1<<(i%64)) != 0 }
	// page returns the bytes of page id spanning its overflow pages.
	page := func(id uint64, want uint16) ([]byte, error) {
		if id < 2 || id >= m.pgid {
			return nil, fmt.Errorf("a reference to page %d, outside 2..%d", id, m.pgid-1)
		}
		off := id * uint64(ps)
		if off+pageHeaderSize > uint64(len(data)) {
			return nil, fmt.Errorf("page %d lies past the end of the file", id)
		}
		h := data[off:]
		if got := le.Uint64(h); got != id {
			return nil, fmt.Errorf("page %d's header says it is page %d", id, got)
		}
		if fl := le.Uint16(h[8:]); fl&want == 0 {
			return nil, fmt.Errorf("page %d has type 0x%x where a page of type 0x%x belongs", id, fl, want)
		}
		over := uint64(le.Uint32(h[12:]))
		end := off + (over+1)*uint64(ps)
		if id+over >= m.pgid || end > uint64(len(data)) {
			return nil, fmt.Errorf("page %d's %d overflow pages run past the end of the file", id, over)
		}
		for i := id; i <= id+over; i++ {
			if isSeen(i) {
				return nil, fmt.Errorf("page %d is referenced twice (a cycle or a shared page)", i)
			}
			seen[i/64] |= 1 << (i % 64)
		}
		return data[off:end], nil
	}
	// lo and hi bound the keys a page may hold (nil: none): a branch
	// element's key is the first key of its child, so the child's keys
	// are at least it and below the next element's. A flipped key in a
	// branch page misroutes lookups and inserts (a write would then add
	// a second record for an address); in a leaf it breaks the order
	// lookups rely on.
	type todo struct {
		id     uint64
		inline []byte // an inline bucket's page (id 0)
		lo, hi []byte
	}
	stack := []todo{{id: m.root}}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		p := t.inline
		if p == nil {
			if p, err = page(t.id, branchPageFlag|leafPageFlag); err != nil {
				return damaged(path, "%v", err)
			}
		} else if len(p) < pageHeaderSize || le.Uint16(p[8:])&leafPageFlag == 0 {
			return damaged(path, "an inline bucket under page %d is not a leaf page", t.id)
		}
		flags, count := le.Uint16(p[8:]), uint64(le.Uint16(p[10:]))
		if pageHeaderSize+count*elemSize > uint64(len(p)) {
			return damaged(path, "page %d declares %d elements, more than it holds", t.id, count)
		}
		var prev []byte
		inOrder := func(i uint64, key []byte) error {
			switch {
			case i > 0 && bytes.Compare(key, prev) <= 0:
				return damaged(path, "the keys of page %d are out of order (element %d)", t.id, i)
			case t.lo != nil && bytes.Compare(key, t.lo) < 0, t.hi != nil && bytes.Compare(key, t.hi) >= 0:
				return damaged(path, "element %d of page %d holds a key outside what its parent says the page holds", i, t.id)
			}
			prev = key
			return nil
		}
		var branch []todo
		for i := uint64(0); i < count; i++ {
			eo := pageHeaderSize + i*elemSize
			e := p[eo:]
			if flags&branchPageFlag != 0 {
				pos, ks := uint64(le.Uint32(e)), uint64(le.Uint32(e[4:]))
				if eo+pos+ks > uint64(len(p)) {
					return damaged(path, "element %d of page %d points past its page", i, t.id)
				}
				key := p[eo+pos : eo+pos+ks]
				if err := inOrder(i, key); err != nil {
					return err
				}
				if len(branch) > 0 {
					branch[len(branch)-1].hi = key
				}
				branch = append(branch, todo{id: le.Uint64(e[8:]), lo: key, hi: t.hi})
				continue
			}
			ef, pos, ks, vs := le.Uint32(e), uint64(le.Uint32(e[4:])), uint64(le.Uint32(e[8:])), uint64(le.Uint32(e[12:]))
			if eo+pos+ks+vs > uint64(len(p)) {
				return damaged(path, "element %d of page %d points past its page", i, t.id)
			}
			if err := inOrder(i, p[eo+pos:eo+pos+ks]); err != nil {
				return err
			}
			if ef&bucketLeafFlag == 0 {
				continue
			}
			v := p[eo+pos+ks : eo+pos+ks+vs]
			if len(v) < 16 {
				return damaged(path, "a bucket record on page %d is %d bytes", t.id, len(v))
			}
			if root := le.Uint64(v); root != 0 {
				stack = append(stack, todo{id: root})
			} else {
				stack = append(stack, todo{id: t.id, inline: v[16:]})
			}
		}
		stack = append(stack, branch...)
		if flags&branchPageFlag != 0 && count == 0 {
			return damaged(path, "branch page %d is empty", t.id)
		}
	}
	if m.freelist != pgidNoFreelist {
		p, err := page(m.freelist, freelistPageFlag)
		if err != nil {
			return damaged(path, "freelist: %v", err)
		}
		n, ids := uint64(le.Uint16(p[10:])), p[pageHeaderSize:]
		if n == 0xFFFF {
			if len(ids) < 8 {
				return damaged(path, "the freelist page is truncated")
			}
			n, ids = le.Uint64(ids), ids[8:]
		}
		if n > uint64(len(ids))/8 {
			return damaged(path, "the freelist declares %d pages, more than its page holds", n)
		}
		freed := make([]uint64, len(seen))
		for i := uint64(0); i < n; i++ {
			id := le.Uint64(ids[i*8:])
			if id < 2 || id >= m.pgid {
				return damaged(path, "the freelist names page %d, outside 2..%d", id, m.pgid-1)
			}
			if isSeen(id) {
				return damaged(path, "page %d is both in use and in the freelist", id)
			}
			freed[id/64] |= 1 << (id % 64)
		}
		// bbolt writes every page it freed, pending ones too, into the
		// freelist: a page neither reachable nor free is a part of the tree
		// that damage cut off (a lowered element count, a zeroed branch),
		// whose records would be missing without a word.
		for id := uint64(2); id < m.pgid; id++ {
			if !isSeen(id) && freed[id/64]&(1<<(id%64)) == 0 {
				return damaged(path, "page %d is neither reachable nor free: part of the data is cut off", id)
			}
		}
	}
	return nil
}

// danglingLink: a state path that is a symbolic link to nothing is not "no
// state yet": the state it pointed to is gone (a moved or unmounted disk),
// and taking it as new would start a new lineage over what the nodes hold.
func danglingLink(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		return damaged(path, "it is a symbolic link to %s, which does not exist", target)
	}
	return nil
}

func notRegular(path string, fi os.FileInfo) error {
	kind := "not a regular file"
	switch {
	case fi.IsDir():
		kind = "a directory"
	case fi.Mode()&os.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case fi.Mode()&os.ModeDevice != 0:
		kind = "a device"
	case fi.Mode()&os.ModeSocket != 0:
		kind = "a socket"
	}
	return damaged(path, "it is %s, not a regular file", kind)
}
