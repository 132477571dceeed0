package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// FormatVersion is the layout version this build writes. It reads
// every version up to it: a format-1 file (JSON records) is read as it
// is and converted to format 2 (compact records, see record.go) when a
// writer opens it. Format 3 records may carry the names of sensitive
// attributes (Resource.SensitiveAttrs); a format-2 file needs no
// conversion, only its version raised, so that an older sparkform says
// it cannot read it instead of calling such a record corrupt. Format 4
// seals every record with a checksum (seal.go); the first writer seals a
// file of an older format.
const FormatVersion = 4

// HistoryLimit is how many prior records are kept per address.
const HistoryLimit = 20

// Status of a stored instance.
type Status string

const (
	StatusReady   Status = "ready"
	StatusTainted Status = "tainted" // created but not known good: replaced on next apply
)

// Resource is one resource instance as stored. Node, Value, ValueType and
// Private are opaque to the store: the engine decides their encoding.
//
// Value comes in one of two forms. Without ValueType it is a JSON
// document (what format-1 records and pushed snapshots hold). With
// ValueType it is binary (the engine's: cty msgpack of a value of that
// cty type), and the store keeps ValueType, like Node, Type and Provider,
// once per distinct value rather than once per instance. Records read
// from a store share those bytes with each other: treat them as
// read-only.
type Resource struct {
	Address       string          `json:"address"` // e.g. gitkit_checkout.kit["a"]
	Type          string          `json:"type"`
	Provider      string          `json:"provider"`
	Node          json.RawMessage `json:"node,omitempty"`
	SchemaVersion int64           `json:"schema_version"`
	Value         json.RawMessage `json:"value,omitempty"`
	ValueType     json.RawMessage `json:"value_type,omitempty"`
	Private       []byte          `json:"private,omitempty"`
	Dependencies  []string        `json:"dependencies,omitempty"` // config-level addresses
	// SensitiveAttrs are the sensitive paths of Value that plans and
	// `state show` hide (sensitive by the schema or set from a sensitive
	// value), kept so that what reads the state alone hides them too. An
	// entry is a bare attribute name (the whole attribute, as every entry
	// before paths was) or a path into it: input.env["TOKEN"],
	// input.args[1] (config.SensitivePaths; docs/state.md).
	SensitiveAttrs []string  `json:"sensitive_attributes,omitempty"`
	Status         Status    `json:"status"`
	UpdatedAt      time.Time `json:"updated_at"` // set by the store on write
}

// resourceJSON is Resource without its JSON methods.
type resourceJSON Resource

// MarshalJSON writes a binary Value (one with ValueType) as a base64
// string, so a snapshot holding one is still valid JSON and reads back
// the same; a JSON Value is written as it is.
func (r Resource) MarshalJSON() ([]byte, error) {
	if r.ValueType == nil || len(r.Value) == 0 {
		return json.Marshal(resourceJSON(r))
	}
	v, err := json.Marshal([]byte(r.Value))
	if err != nil {
		return nil, err
	}
	r.Value = v
	return json.Marshal(resourceJSON(r))
}

// UnmarshalJSON reverses MarshalJSON.
func (r *Resource) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode((*resourceJSON)(r)); err != nil {
		return err
	}
	if r.ValueType != nil && len(r.Value) > 0 {
		var raw []byte
		if err := json.Unmarshal(r.Value, &raw); err != nil {
			return fmt.Errorf("resource %s: value_type is set, so value must be base64: %v", r.Address, err)
		}
		r.Value = raw
	}
	return nil
}

// Intent is a journal record: "about to run Action on Address".
type Intent struct {
	Address  string    `json:"address"`
	Action   string    `json:"action"`             // engine-defined: create, update, delete, replace...
	Resource *Resource `json:"resource,omitempty"` // the planned record, if any
	Started  time.Time `json:"started"`            // set by the store when zero
	PID      int       `json:"pid"`                // set by the store when zero
}

// HistoryEntry is the record an address had before one committed change.
type HistoryEntry struct {
	Address string    `json:"address"`
	Serial  uint64    `json:"serial"` // the serial of the change that replaced Prior
	Time    time.Time `json:"time"`
	Action  string    `json:"action"`          // HistoryCreate, HistoryUpdate, HistoryDelete, HistoryMoveIn, HistoryMoveOut
	Peer    string    `json:"peer,omitempty"`  // the other address of a move
	Prior   *Resource `json:"prior,omitempty"` // nil: the address did not exist before
}

// History actions: what the change at Serial did to the address.
const (
	HistoryCreate  = "create"   // Prior is nil
	HistoryUpdate  = "update"   // Prior is the replaced record
	HistoryDelete  = "delete"   // Prior is the deleted record
	HistoryMoveOut = "move-out" // moved to Peer; Prior is the record that left
	HistoryMoveIn  = "move-in"  // moved in from Peer; Prior is nil
)

// Meta describes the state file.
type Meta struct {
	Lineage string `json:"lineage"` // random id made at creation, never changes
	Serial  uint64 `json:"serial"`  // bumped on every committed resource change
	Version int    `json:"version"` // FormatVersion of the file
}

// Snapshot is one consistent read of the whole state (one read transaction).
type Snapshot struct {
	Meta      Meta
	Resources []*Resource // sorted by address
	Intents   []*Intent   // sorted by address
}

// Options for Open.
type Options struct {
	// LockTimeout is how long Open waits for the writer lock; 0 tries once.
	LockTimeout time.Duration
	// Command is recorded in the holder record, e.g. "sparkform apply".
	Command string
	// ResetState lets Open take an existing state file that is empty or
	// has no lineage as a new state (a new lineage). Without it Open
	// refuses such a file with ErrNoLineage.
	ResetState bool
	// ConvertValue, when set, turns a value in the JSON form (a Resource
	// without ValueType) into the engine's binary form. The store uses it
	// where it writes records it did not get from the engine: converting a
	// format-1 file, and Replace (state push, state migrate), so those
	// records read as fast as freshly written ones. A value it fails on
	// stays as it was.
	ConvertValue func(jsonValue json.RawMessage) (valueType, value []byte, err error)
}

// compactValue returns r with its value in the binary form when convert
// can make it; r itself is not modified.
func compactValue(r *Resource, convert func(json.RawMessage) ([]byte, []byte, error)) *Resource {
	if convert == nil || r == nil || r.ValueType != nil || len(r.Value) == 0 {
		return r
	}
	typ, val, err := convert(r.Value)
	if err != nil || typ == nil {
		return r
	}
	c := *r
	c.Value, c.ValueType = val, typ
	return &c
}

// CompactValue is compactValue for other backends.
func CompactValue(r *Resource, convert func(json.RawMessage) ([]byte, []byte, error)) *Resource {
	return compactValue(r, convert)
}

// Holder is the side record naming the writer-lock holder.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	User    string    `json:"user,omitempty"`
	Command string    `json:"command,omitempty"`
	Since   time.Time `json:"since"`
	// Stale is true when the holder was on this host and its process is gone
	// (computed when read, not stored).
	Stale bool `json:"-"`
}

// ID names this hold of the lock: printed with a locked error, and given
// back to force-unlock, which then clears only this hold (a later holder's
// lock is never broken by an old id). It is derived from host, pid and
// start time, so every backend computes the same id from its record.
func (h *Holder) ID() string {
	if h == nil {
		return ""
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", h.Host, h.PID, h.Since.UnixNano()))
	return hex.EncodeToString(sum[:6])
}

func (h *Holder) String() string {
	who := ""
	if h.User != "" {
		who = h.User + ", "
	}
	return fmt.Sprintf("%spid %d on %s (%q) since %s, lock id %s", who, h.PID, h.Host, h.Command, h.Since.Format(time.RFC3339), h.ID())
}

// UnlockOptions for ForceUnlock.
type UnlockOptions struct {
	// Force breaks the lock even when its holder is alive on this host.
	Force bool
	// ID, when set, is the lock id the user was shown (Holder.ID): the lock
	// is cleared only if it is still that hold (ErrLockIDMismatch if not).
	ID string
}

// CheckID returns ErrLockIDMismatch when opts names a lock id and h is
// not that hold. Backends call it before clearing anything.
func (opts UnlockOptions) CheckID(h *Holder) error {
	if opts.ID == "" || h.ID() == opts.ID {
		return nil
	}
	if h == nil {
		return fmt.Errorf("%w: lock id %s was given, but the holder left no record to compare it with", ErrLockIDMismatch, opts.ID)
	}
	return fmt.Errorf("%w: lock id %s was given, but the lock is now held as %s (pid %d on %s since %s)",
		ErrLockIDMismatch, opts.ID, h.ID(), h.PID, h.Host, h.Since.Format(time.RFC3339))
}

func checkAddress(addr string) error {
	switch {
	case addr == "":
		return fmt.Errorf("%w: empty resource address", ErrInvalid)
	case strings.IndexByte(addr, 0) >= 0 || !utf8.ValidString(addr):
		return fmt.Errorf("%w: resource address %q must be valid UTF-8 without NUL bytes", ErrInvalid, addr)
	}
	return nil
}

func checkResource(r *Resource) error {
	if r == nil {
		return fmt.Errorf("%w: nil resource", ErrInvalid)
	}
	if err := checkAddress(r.Address); err != nil {
		return err
	}
	if r.Type == "" {
		return fmt.Errorf("%w: resource %s has no type", ErrInvalid, r.Address)
	}
	if len(r.Node) > 0 && !json.Valid(r.Node) {
		return fmt.Errorf("%w: resource %s: node is not valid JSON", ErrInvalid, r.Address)
	}
	if r.ValueType == nil && len(r.Value) > 0 && !json.Valid(r.Value) {
		return fmt.Errorf("%w: resource %s: value is not valid JSON (and has no value type)", ErrInvalid, r.Address)
	}
	if len(r.ValueType) > 0 && !json.Valid(r.ValueType) {
		return fmt.Errorf("%w: resource %s: value type is not valid JSON", ErrInvalid, r.Address)
	}
	switch r.Status {
	case "", StatusReady, StatusTainted:
	default:
		return fmt.Errorf("%w: resource %s has status %q; want %q or %q", ErrInvalid, r.Address, r.Status, StatusReady, StatusTainted)
	}
	return nil
}
