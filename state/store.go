package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sparkform/sparkform/state/internal/groupcommit"
)

var (
	bucketMeta      = []byte("meta")
	bucketResources = []byte("resources")
	bucketJournal   = []byte("journal")
	bucketHistory   = []byte("history")

	keyLineage = []byte("lineage")
	keySerial  = []byte("serial")
	keyVersion = []byte("version")
	keyCreated = []byte("created")
)

// How long one bbolt open waits for the file's flock. Readers hold it for
// one read transaction, writers for one commit batch: milliseconds.
// allocSize is how far the file grows past its data at a time (bbolt's
// default is 16 MiB; each growth costs a truncate and an fsync).
const allocSize = 256 << 10

// fillPercent is how full a write fills a bucket's pages when it splits
// them. bbolt's default 0.5 leaves half of every split page empty; keys
// here are mostly appended or rewritten in place, so fuller pages cost
// little more splitting and make the file about a third smaller.
const fillPercent = 0.7

var (
	readerWait = 2 * time.Second
	writerWait = 30 * time.Second
)

// BoltStore is an open local state file (the default backend). One from
// Open holds the writer lock until Close; one from OpenReadOnly holds
// nothing between calls. Methods are safe for concurrent use.
type BoltStore struct {
	path     string
	readOnly bool
	lock     *writerLock // nil when read-only

	dbMu   sync.Mutex
	db     *bolt.DB // open only while dbRefs > 0
	dbRefs int

	// loop is the group commit (nil when read-only); the fields after it
	// belong to it (see holdMax).
	loop       *groupcommit.Loop[*op]
	held       bool      // the loop keeps the bbolt handle open
	yielding   bool      // let go after holdMax: wait readerGap to take it again
	busySince  time.Time // last taken after a let-go of readerGap or more
	releasedAt time.Time

	roClosed atomic.Bool // a read-only store was closed

	commits atomic.Uint64 // committed write transactions (group-commit evidence)

	errMu     sync.Mutex
	recordErr error // the first commit record that could not be written

	mayCreate bool                                          // Open may give the file a new lineage (see checkExisting)
	convert   func(json.RawMessage) ([]byte, []byte, error) // Options.ConvertValue
	treeOK    bool                                          // the whole page tree was checked (checkTree), under dbMu
}

// Open opens (creating if needed) the state at path for writing. It takes
// the writer lock, waiting up to opts.LockTimeout; on timeout the error is a
// *LockedError naming the holder.
func Open(path string, opts Options) (*BoltStore, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: empty state path", ErrInvalid)
	}
	opts.LockTimeout = max(opts.LockTimeout, 0)
	if dir := filepath.Dir(path); dir != "" {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			// 0700: state holds private data (restore info, node details).
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("state: create %s: %w", dir, err)
			}
		}
	}
	l, err := acquireLock(path, opts)
	if err != nil {
		return nil, err
	}
	mayCreate, err := checkExisting(path, opts)
	if err != nil {
		l.release()
		return nil, err
	}
	s := &BoltStore{path: path, lock: l, mayCreate: mayCreate, convert: opts.ConvertValue}
	if err := s.init(); err != nil {
		l.release()
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			l.release()
			return nil, fmt.Errorf("state: restrict %s to 0600: %w", path, err)
		}
	}
	s.startCommitLoop()
	return s, nil
}

// OpenReadOnly opens the state at path for reading without the writer lock.
// It returns ErrNoState when there is no state file yet. Each read waits at
// most a moment for an in-flight commit, never for a whole apply.
func OpenReadOnly(path string) (*BoltStore, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := danglingLink(path); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s does not exist (nothing has been applied here)", ErrNoState, path)
	} else if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi)
	} else if err == nil && fi.Size() == 0 && !writerActive(path) {
		// Not a state being created (its writer would hold the lock): a
		// file sparkform wrote is never empty.
		return nil, damaged(path, "it is empty (0 bytes), so it was truncated or replaced")
	}
	s := &BoltStore{path: path, readOnly: true}
	if _, err := s.Meta(); err != nil {
		return nil, err
	}
	return s, nil
}

// Path is the state file.
func (s *BoltStore) Path() string { return s.path }

// Close waits for pending writes (a deferred Complete's error is
// returned), then releases the writer lock.
func (s *BoltStore) Close() error {
	if s.loop == nil { // read-only: no lock, nothing queued
		s.roClosed.Store(true)
		return nil
	}
	if !s.loop.Close() {
		return nil // closed already
	}
	if s.lock != nil {
		// The last-good copy: refreshed after every session that changed
		// something, made once for a state that has none yet.
		var berr error
		if _, err := os.Stat(BackupPath(s.path)); (s.commits.Load() > 0 || err != nil) && s.lock.valid() {
			if db, err := s.acquireDB(); err == nil {
				berr = writeBackup(db, s.path)
				s.releaseDB()
			}
		}
		s.errMu.Lock()
		rerr := s.recordErr
		s.errMu.Unlock()
		return errors.Join(s.deferredError(), berr, rerr, s.lock.release())
	}
	return nil
}

var allBuckets = [][]byte{bucketMeta, bucketResources, bucketJournal, bucketHistory, bucketInterned}

// init makes a new state's buckets and meta data, or converts an older
// format. An existing state of this format needs neither: it is only
// read, so opening it for a command that writes nothing (a no-op plan)
// writes nothing either.
func (s *BoltStore) init() error {
	if !s.mayCreate {
		current := false
		err := s.view(func(tx *bolt.Tx) error {
			m, err := readMeta(tx, s.path)
			current = err == nil && m.Version == FormatVersion
			return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				if !slices.ContainsFunc(allBuckets, func(b []byte) bool { return bytes.Equal(b, name) }) {
					current = false
				}
				return nil
			})
		})
		if err != nil || current {
			return err
		}
	}
	return s.update(func(tx *bolt.Tx) error {
		all := allBuckets
		err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			for _, b := range all {
				if bytes.Equal(name, b) {
					return nil
				}
			}
			return fmt.Errorf("%w: %s has a bucket %q: it is not a sparkform state file", ErrFormat, s.path, name)
		})
		if err != nil {
			return err
		}
		if tx.Bucket(bucketMeta) != nil && tx.Bucket(bucketMeta).Get(keyLineage) != nil {
			m, err := readMeta(tx, s.path)
			if err != nil {
				return err
			}
			if m.Version == 1 {
				if err := migrate(tx, s.convert); err != nil {
					return err
				}
			}
			// Format 3 only adds to records what new writes carry; format
			// 4 seals every value.
			if m.Version < sealedVersion {
				return upgradeSeal(tx)
			}
		}
		for _, b := range all {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		m := tx.Bucket(bucketMeta)
		if m.Get(keyLineage) == nil {
			if !s.mayCreate {
				return noLineage(s.path, "has no lineage (no sparkform meta data)")
			}
			m.Put(keyLineage, []byte(newLineage()))
			m.Put(keySerial, u64(0))
			m.Put(keyVersion, u64(FormatVersion))
			m.Put(keyCreated, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
			return countAll(tx)
		}
		_, err = readMeta(tx, s.path)
		return err
	})
}

// Meta returns lineage, serial and format version.
func (s *BoltStore) Meta() (Meta, error) {
	var m Meta
	err := s.view(func(tx *bolt.Tx) (err error) {
		m, err = readMeta(tx, s.path)
		return err
	})
	return m, err
}

// Resources returns every stored instance, sorted by address.
func (s *BoltStore) Resources() ([]*Resource, error) {
	var out []*Resource
	err := s.view(func(tx *bolt.Tx) (err error) {
		out, err = readResources(tx)
		return err
	})
	return out, err
}

// Resource returns one instance, or an error wrapping ErrResourceNotFound.
func (s *BoltStore) Resource(addr string) (*Resource, error) {
	var r *Resource
	err := s.view(func(tx *bolt.Tx) (err error) {
		v := tx.Bucket(bucketResources).Get([]byte(addr))
		if v == nil {
			return fmt.Errorf("%w: %s", ErrResourceNotFound, addr)
		}
		if v, err = openValue(sealed(tx), []byte(addr), v); err != nil {
			return err
		}
		r, err = decodeResource(v, addr, newStrs(tx))
		return err
	})
	return r, err
}

// Intents returns the journal, sorted by address. A non-empty journal at
// the start of a run means a previous run stopped mid-call.
func (s *BoltStore) Intents() ([]*Intent, error) {
	var out []*Intent
	err := s.view(func(tx *bolt.Tx) (err error) {
		out, err = readIntents(tx)
		return err
	})
	return out, err
}

// Snapshot reads meta, resources and intents in one transaction, so the
// serial matches the resources (what a saved plan records).
func (s *BoltStore) Snapshot() (*Snapshot, error) {
	var snap Snapshot
	err := s.view(func(tx *bolt.Tx) (err error) {
		if snap.Meta, err = readMeta(tx, s.path); err != nil {
			return err
		}
		if snap.Resources, err = readResources(tx); err != nil {
			return err
		}
		snap.Intents, err = readIntents(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &snap, nil
}

// History returns the prior records of addr, newest first (at most
// HistoryLimit). Entries stay after the address is deleted or moved.
func (s *BoltStore) History(addr string) ([]*HistoryEntry, error) {
	if err := checkAddress(addr); err != nil {
		return nil, err
	}
	var out []*HistoryEntry
	err := s.view(func(tx *bolt.Tx) error {
		prefix := historyPrefix(addr)
		st := newStrs(tx)
		isSealed := sealed(tx)
		c := tx.Bucket(bucketHistory).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+8 {
				return corrupt(addr, fmt.Sprintf("history key %q", k))
			}
			v, err := openValue(isSealed, k, v)
			if err != nil {
				return err
			}
			e, err := decodeHistory(v, addr, binary.BigEndian.Uint64(k[len(prefix):]), st)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, err
}

func readMeta(tx *bolt.Tx, path string) (Meta, error) {
	b := tx.Bucket(bucketMeta)
	if b == nil {
		return Meta{}, fmt.Errorf("%w: %s has no sparkform meta data", ErrFormat, path)
	}
	if b.Get(keyLineage) == nil || len(b.Get(keySerial)) != 8 || len(b.Get(keyVersion)) != 8 {
		// A sparkform file (it has the bucket) with a key gone or cut.
		return Meta{}, damaged(path, "its meta data lacks a lineage, serial or format version, or one is cut short")
	}
	if err := checkMeta(tx, path); err != nil {
		return Meta{}, err
	}
	if len(b.Get(keyLineage)) == 0 {
		return Meta{}, damaged(path, "its lineage is empty (a state file always has one, made when it was created)")
	}
	m := Meta{
		Lineage: string(b.Get(keyLineage)),
		Serial:  binary.BigEndian.Uint64(b.Get(keySerial)),
		Version: int(binary.BigEndian.Uint64(b.Get(keyVersion))),
	}
	if m.Version < 1 || m.Version > FormatVersion {
		return m, fmt.Errorf("%w: %s has format version %d; this sparkform reads up to %d: upgrade sparkform",
			ErrFormat, path, m.Version, FormatVersion)
	}
	names := [][]byte{bucketResources, bucketJournal, bucketHistory}
	if m.Version >= 2 {
		names = append(names, bucketInterned)
	}
	for _, name := range names {
		if tx.Bucket(name) == nil {
			return m, fmt.Errorf("%w: %s lacks the %s bucket", ErrFormat, path, name)
		}
	}
	return m, nil
}

func readResources(tx *bolt.Tx) ([]*Resource, error) {
	return readResourcesWith(tx, newStrs(tx))
}

func readResourcesWith(tx *bolt.Tx, st *txStrs) ([]*Resource, error) {
	b := tx.Bucket(bucketResources)
	var out []*Resource // b.Stats().KeyN would walk every page first
	isSealed := sealed(tx)
	err := b.ForEach(func(k, v []byte) error {
		v, err := openValue(isSealed, k, v)
		if err != nil {
			return err
		}
		r, err := decodeResource(v, string(k), st)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

func readIntents(tx *bolt.Tx) ([]*Intent, error) {
	var out []*Intent
	st := newStrs(tx)
	isSealed := sealed(tx)
	err := tx.Bucket(bucketJournal).ForEach(func(k, v []byte) error {
		v, err := openValue(isSealed, k, v)
		if err != nil {
			return err
		}
		in, err := decodeIntent(v, string(k), st)
		if err != nil {
			return err
		}
		out = append(out, in)
		return nil
	})
	return out, err
}

// decode unmarshals a stored JSON record (the outputs). encoding/json
// copies what it keeps, so decoding straight from bbolt's mmap is safe
// after the transaction ends.
func decode(data []byte, v any, addr string) error {
	if err := json.Unmarshal(data, v); err != nil {
		return corrupt(addr, err.Error())
	}
	return nil
}

// view runs fn in a read transaction on a briefly opened database. A
// writer reads its own writes: deferred ones are committed first.
func (s *BoltStore) view(fn func(*bolt.Tx) error) error {
	if s.roClosed.Load() || (s.loop != nil && s.loop.Closed()) {
		return ErrClosed
	}
	if s.loop != nil && s.loop.Pending() {
		_ = s.Flush() // its error is the write's, reported by Flush and Close
	}
	db, err := s.acquireDB()
	if err != nil {
		return err
	}
	defer s.releaseDB()
	return inFile(s.path, guard(s.path, func() error { return db.View(fn) }))
}

// update runs fn in a write transaction outside the commit queue (init only).
func (s *BoltStore) update(fn func(*bolt.Tx) error) error {
	db, err := s.acquireDB()
	if err != nil {
		return err
	}
	defer s.releaseDB()
	var txid uint64
	var lineage string
	err = inFile(s.path, guard(s.path, func() error {
		return db.Update(func(tx *bolt.Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			txid, lineage = uint64(tx.ID()), string(tx.Bucket(bucketMeta).Get(keyLineage))
			return putMetaCheck(tx)
		})
	}))
	if err != nil {
		return err
	}
	s.recordCommit(lineage, txid)
	return nil
}

// recordCommit writes the commit record after a commit. Failing to is no
// reason to report the committed writes as failed (a record behind the
// file is allowed): Close returns it, saying what it costs.
func (s *BoltStore) recordCommit(lineage string, txid uint64) {
	if err := writeCommitRecord(s.path, lineage, txid); err != nil {
		s.errMu.Lock()
		if s.recordErr == nil {
			s.recordErr = fmt.Errorf("%w; the state file holds every change, but a later rollback of it (a damaged meta page) would go unnoticed until the record is written again", err)
		}
		s.errMu.Unlock()
	}
}

// acquireDB opens the bbolt file (or shares the handle already open in this
// process). The handle is closed again when the last user releases it, so
// the file's flock is held only while a transaction runs.
func (s *BoltStore) acquireDB() (*bolt.DB, error) {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	if s.db != nil {
		s.dbRefs++
		return s.db, nil
	}
	if s.lock != nil && !s.lock.valid() {
		return nil, fmt.Errorf("%w: %s", ErrLockLost, s.path)
	}
	wait := writerWait
	if s.readOnly {
		wait = readerWait
	}
	var db *bolt.DB
	err := guard(s.path, func() (err error) {
		db, err = bolt.Open(s.path, 0o600, &bolt.Options{
			ReadOnly:     s.readOnly,
			OpenFile:     lockedOpen(!s.readOnly, wait, !s.treeOK),
			FreelistType: bolt.FreelistMapType,
		})
		if err == nil && !s.readOnly {
			// Grow the file by at most allocSize past what it holds, not
			// to bbolt's next power of two (16 MiB for a 9 MiB state).
			db.AllocSize = allocSize
		}
		return err
	})
	if err != nil {
		if errors.Is(err, ErrDamaged) {
			return nil, err
		}
		if errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrVersionMismatch) || errors.Is(err, berrors.ErrChecksum) {
			return nil, damaged(s.path, "bbolt refuses it (%v)", err)
		}
		if errors.Is(err, ErrBusy) || errors.Is(err, ErrNoState) {
			return nil, err
		}
		return nil, fmt.Errorf("state: open %s: %w", s.path, err)
	}
	if !s.treeOK {
		// The full check, once per command: every checksum and record.
		err := guard(s.path, func() error {
			return db.View(func(tx *bolt.Tx) error {
				if m := tx.Bucket(bucketMeta); m == nil || m.Get(keyLineage) == nil {
					return nil // a new state, or one init refuses
				}
				return checkRecords(tx, s.path, false)
			})
		})
		if err != nil {
			db.Close()
			return nil, err
		}
	}
	s.db, s.dbRefs, s.treeOK = db, 1, true
	return db, nil
}

func (s *BoltStore) releaseDB() {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	s.dbRefs--
	if s.dbRefs == 0 {
		s.db.Close()
		s.db = nil
	}
}

// lockedOpen is bbolt's OpenFile hook. It takes the file's flock itself
// before bbolt's own attempt, which polls every 50 ms: a reader would miss
// the short gaps between a busy writer's commits. A reader waits in the
// kernel (flockWait), a writer polls (flockPoll). bbolt's flock on the
// same descriptor then succeeds at once.
func lockedOpen(exclusive bool, wait time.Duration, wholeTree bool) func(string, int, os.FileMode) (*os.File, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	return func(name string, flag int, mode os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, mode)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%w: %s does not exist", ErrNoState, name)
			}
			return nil, err
		}
		take := flockWait
		if exclusive {
			take = flockPoll
		}
		if err := take(f, how, wait); err != nil {
			if errors.Is(err, ErrBusy) {
				return nil, fmt.Errorf("%w: %s stayed locked for %s (a commit or a reader that hangs?); try again",
					ErrBusy, name, wait)
			}
			return nil, err
		}
		if err := checkFile(f, name); err != nil {
			f.Close()
			return nil, err
		}
		if wholeTree {
			if err := checkTree(f, name); err != nil {
				f.Close()
				return nil, err
			}
		}
		if !exclusive {
			// A writer creating the file holds it open before its flock:
			// an empty file is a state that does not exist yet.
			if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
				f.Close()
				return nil, fmt.Errorf("%w: %s is being created", ErrNoState, name)
			}
		}
		return f, nil
	}
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func newLineage() string {
	var b [16]byte
	if _, err := randRead(b[:]); err != nil {
		panic("state: no randomness for lineage: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40 // UUID v4 shape, for familiarity
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
