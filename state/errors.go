package state

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Every error the package returns either is one of these or
// wraps one, so callers branch with errors.Is.
var (
	// ErrNoState: OpenReadOnly found no state file (nothing applied yet).
	ErrNoState = errors.New("state: no state yet")
	// ErrResourceNotFound: the address is not in state.
	ErrResourceNotFound = errors.New("state: resource not in state")
	// ErrResourceExists: MoveResource's target address is already taken.
	ErrResourceExists = errors.New("state: resource already in state")
	// ErrInvalid: a record or address the store refuses (empty address, bad status...).
	ErrInvalid = errors.New("state: invalid record")
	// ErrReadOnly: a write on a store opened with OpenReadOnly.
	ErrReadOnly = errors.New("state: store is read-only")
	// ErrClosed: a call on a closed store.
	ErrClosed = errors.New("state: store is closed")
	// ErrLocked: another process holds the writer lock (see *LockedError).
	ErrLocked = errors.New("state: locked by another process")
	// ErrLockLost: this store's writer lock was broken by a forced unlock
	// or (etcd) its lease expired; nothing more is written through it.
	ErrLockLost = errors.New("state: writer lock was lost")
	// ErrHolderAlive: ForceUnlock refused because the holder is a live
	// process on this host.
	ErrHolderAlive = errors.New("state: lock holder is still running")
	// ErrNotLocked: ForceUnlock or ReadHolder found no holder record.
	ErrNotLocked = errors.New("state: not locked")
	// ErrLockIDMismatch: ForceUnlock was given a lock id that is not the
	// current hold's; nothing was cleared.
	ErrLockIDMismatch = errors.New("state: lock id does not match the current lock")
	// ErrBusy: the state file stayed locked by a commit longer than expected.
	ErrBusy = errors.New("state: state file busy")
	// ErrFormat: the file is not sparkform state, or was written by a newer
	// format version than this build understands.
	ErrFormat = errors.New("state: unsupported state file")
)

// LockedError is returned by Open when the writer lock stays held for the
// whole LockTimeout. errors.Is(err, ErrLocked) holds.
type LockedError struct {
	Path   string        // the state file
	Holder *Holder       // nil when the holder left no record (yet)
	Waited time.Duration // how long Open waited
	// Note, when set, replaces the advice on a dead holder (a backend
	// whose lock frees itself says so).
	Note string
}

func (e *LockedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "state %s is locked", e.Path)
	if h := e.Holder; h != nil {
		if h.User != "" {
			fmt.Fprintf(&b, " by user %s,", h.User)
		}
		fmt.Fprintf(&b, " by pid %d on host %s", h.PID, h.Host)
		if h.Command != "" {
			fmt.Fprintf(&b, " (command %q)", h.Command)
		}
		fmt.Fprintf(&b, " since %s (lock id %s)", h.Since.Format(time.RFC3339), h.ID())
	} else {
		b.WriteString(" by a process that left no holder record")
	}
	unlock := "sparkform force-unlock"
	if e.Holder != nil {
		unlock += " " + e.Holder.ID()
	}
	fmt.Fprintf(&b, "; waited %s. Wait for it to finish (or pass a longer -lock-timeout); ", e.Waited.Round(time.Millisecond))
	if e.Note != "" {
		fmt.Fprintf(&b, "%s; `%s` breaks it now", e.Note, unlock)
	} else {
		fmt.Fprintf(&b, "if that process is gone, run `%s`", unlock)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }
