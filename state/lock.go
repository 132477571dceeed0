package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// lockPath is the side file holding the writer flock and the holder record.
// A separate file (not bbolt's own flock) lets readers open the database
// between commits while a writer holds the lock for a whole apply.
func lockPath(dbPath string) string { return dbPath + ".lock" }

// writerLock is a held writer lock.
type writerLock struct {
	path string
	f    *os.File
	ino  fileID
}

type fileID struct{ dev, ino uint64 }

func statID(fi os.FileInfo) fileID {
	st := fi.Sys().(*syscall.Stat_t)
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}
}

// acquireLock takes the writer lock, polling until timeout.
func acquireLock(dbPath string, opts Options) (*writerLock, error) {
	path := lockPath(dbPath)
	start := time.Now()
	delay := 5 * time.Millisecond
	for {
		l, err := tryLock(path)
		if err != nil {
			return nil, err
		}
		if l != nil {
			if err := l.writeHolder(opts.Command); err != nil {
				l.release()
				return nil, err
			}
			return l, nil
		}
		waited := time.Since(start)
		if waited >= opts.LockTimeout {
			return nil, &LockedError{Path: dbPath, Holder: readHolderRetry(path), Waited: waited}
		}
		time.Sleep(min(delay, opts.LockTimeout-waited))
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// tryLock returns (nil, nil) when another process holds the lock.
func tryLock(path string) (*writerLock, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("state: open lock file: %w", err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, nil
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("state: lock %s: %w", path, err)
		}
		// A forced unlock may have unlinked the file between our open and
		// flock: then we locked an orphan inode, so start over.
		fi, err1 := f.Stat()
		pi, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && statID(fi) == statID(pi) {
			// Like state.db, the lock file is 0600 even if it was made
			// wider by hand or by an older version.
			if fi.Mode().Perm()&0o077 != 0 {
				if err := f.Chmod(0o600); err != nil {
					f.Close()
					return nil, fmt.Errorf("state: restrict %s to 0600: %w", path, err)
				}
			}
			return &writerLock{path: path, f: f, ino: statID(fi)}, nil
		}
		f.Close()
		if err1 != nil {
			return nil, fmt.Errorf("state: lock %s: %w", path, err1)
		}
	}
}

func (l *writerLock) writeHolder(command string) error {
	h := CurrentHolder(command)
	data, _ := json.Marshal(h)
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("state: write lock holder: %w", err)
	}
	if _, err := l.f.WriteAt(append(data, '\n'), 0); err != nil {
		return fmt.Errorf("state: write lock holder: %w", err)
	}
	return nil
}

// valid reports whether the lock file at path is still ours (not broken by
// a forced unlock). One stat per commit batch.
func (l *writerLock) valid() bool {
	pi, err := os.Stat(l.path)
	return err == nil && statID(pi) == l.ino
}

// release clears the holder record (only if the file is still ours) and
// drops the flock.
func (l *writerLock) release() error {
	var err error
	if l.valid() {
		err = l.f.Truncate(0)
	}
	if e := l.f.Close(); err == nil { // closing drops the flock
		err = e
	}
	return err
}

// ReadHolder returns the holder record of the state at dbPath, or
// ErrNotLocked when there is none. A record left by a process that died is
// returned with Stale set (when it was on this host).
func ReadHolder(dbPath string) (*Holder, error) {
	f, err := os.Open(lockPath(dbPath))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no lock file for %s", ErrNotLocked, dbPath)
	}
	if err != nil {
		return nil, fmt.Errorf("state: read lock holder: %w", err)
	}
	defer f.Close()
	return readHolderFile(f, dbPath)
}

func readHolderFile(f *os.File, dbPath string) (*Holder, error) {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	if err != nil {
		return nil, fmt.Errorf("state: read lock holder: %w", err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: no holder recorded for %s", ErrNotLocked, dbPath)
	}
	var h Holder
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("state: lock holder record %s is unreadable (%v); `sparkform force-unlock` clears it", lockPath(dbPath), err)
	}
	host, _ := os.Hostname()
	h.Stale = h.Host == host && !processAlive(h.PID)
	return &h, nil
}

// readHolderRetry reads the record for a LockedError; a new holder may not
// have written it yet, so retry briefly.
func readHolderRetry(lockFile string) *Holder {
	dbPath := lockFile[:len(lockFile)-len(".lock")]
	for i := 0; i < 5; i++ {
		if h, err := ReadHolder(dbPath); err == nil {
			return h
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ForceUnlock clears the writer lock of the state at dbPath and returns the
// holder it cleared.
//
//   - Nobody holds the lock (the holder died; the kernel dropped its flock):
//     the stale record is cleared. ErrNotLocked when there is no record.
//   - A live process on this host holds it: refused with ErrHolderAlive
//     unless opts.Force.
//   - Otherwise (holder on another host, or forced) the lock file is removed,
//     so the next Open creates a fresh one; the old holder's next write fails
//     with ErrLockLost.
func ForceUnlock(dbPath string, opts UnlockOptions) (*Holder, error) {
	path := lockPath(dbPath)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no lock file for %s", ErrNotLocked, dbPath)
	}
	if err != nil {
		return nil, fmt.Errorf("state: force-unlock: %w", err)
	}
	defer f.Close()
	// The record is read after the flock attempt, so it names whoever holds
	// the lock now, not a stale holder that a new writer just replaced.
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	h, herr := readHolderFile(f, dbPath)
	if herr != nil && !errors.Is(herr, ErrNotLocked) {
		h = nil // unreadable record: treat as anonymous
	}
	if idErr := opts.CheckID(h); idErr != nil && (err == nil || errors.Is(err, syscall.EWOULDBLOCK)) {
		if err == nil {
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		return h, idErr
	}
	if err == nil {
		// Not held: whatever record is there is stale.
		defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		if terr := f.Truncate(0); terr != nil {
			return h, fmt.Errorf("state: force-unlock: %w", terr)
		}
		if h == nil {
			return nil, fmt.Errorf("%w: %s has no holder", ErrNotLocked, dbPath)
		}
		h.Stale = true
		return h, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return h, fmt.Errorf("state: force-unlock: %w", err)
	}
	host, _ := os.Hostname()
	if !opts.Force && h == nil {
		return nil, fmt.Errorf("%w: a process holds the lock on %s but left no holder record; "+
			"retry, or force the unlock if it is hung", ErrHolderAlive, dbPath)
	}
	if !opts.Force && h.Host == host && processAlive(h.PID) {
		return h, fmt.Errorf("%w: pid %d (%q) on this host holds the lock on %s since %s; "+
			"let it finish or stop it, or force the unlock if it is hung",
			ErrHolderAlive, h.PID, h.Command, dbPath, h.Since.Format(time.RFC3339))
	}
	if err := os.Remove(path); err != nil {
		return h, fmt.Errorf("state: force-unlock: %w", err)
	}
	return h, nil
}
