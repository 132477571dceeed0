package state

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"sort"
	"time"
)

// Store is one open state, whatever keeps it: the local bbolt file
// (*BoltStore, the default) or a shared backend (package state/etcdstore).
// Every implementation has the semantics this package's doc states: one
// record per instance, lineage and serial, journal intents, history, group
// commit, and a writer lock held from open to Close. A store opened
// read-only holds no lock and returns ErrReadOnly on writes.
//
// The conformance suite (package state/statetest) runs the same cases
// against every implementation.
type Store interface {
	// Meta returns lineage, serial and format version.
	Meta() (Meta, error)
	// Resources returns every stored instance, sorted by address.
	Resources() ([]*Resource, error)
	// Resource returns one instance or an error wrapping ErrResourceNotFound.
	Resource(addr string) (*Resource, error)
	// Intents returns the journal, sorted by address.
	Intents() ([]*Intent, error)
	// Snapshot reads meta, resources and intents as of one moment.
	Snapshot() (*Snapshot, error)
	// History returns addr's prior records, newest first.
	History(addr string) ([]*HistoryEntry, error)
	// Outputs returns every stored output.
	Outputs() (map[string]Output, error)

	// PutResource stores r, records its prior value and bumps the serial.
	PutResource(r *Resource) error
	// Complete stores an apply's result (nil: gone) and clears addr's intent
	// in one write. It need not wait for it: the write is durable once any
	// write made after it returns (the next PutIntent), or Flush or Close
	// does, and a crash before that leaves addr's intent in the journal. Its
	// error may come from the next PutIntent, Flush or Close instead.
	Complete(addr string, result *Resource) error
	// DeleteResource removes addr (ErrResourceNotFound when absent).
	DeleteResource(addr string) error
	// MoveResource renames an instance (ErrResourceExists when taken).
	MoveResource(from, to string) error
	// PutIntent journals in before a provider call.
	PutIntent(in *Intent) error
	// DeleteIntent clears addr's journal record.
	DeleteIntent(addr string) error
	// PutOutputs replaces every stored output.
	PutOutputs(outs map[string]Output) error
	// Replace makes the state exactly p (state push, state migrate): its
	// lineage, serial, resources and outputs; the journal and history are
	// cleared, since they describe another state's past.
	Replace(p *Portable) error

	// Flush returns once every write made before it is durable, with the
	// error of any Complete that could not be stored.
	Flush() error
	// Close waits for pending writes, then releases the writer lock.
	Close() error
}

// Backend is a place state lives: it opens stores there and breaks stale
// locks. The CLI chooses one from the root module's sparkform block.
type Backend interface {
	// Open opens the state for writing, taking the writer lock (waiting up
	// to opts.LockTimeout; a *LockedError names the holder).
	Open(opts Options) (Store, error)
	// OpenReadOnly opens it for reading without the lock; ErrNoState when
	// nothing was ever written there.
	OpenReadOnly() (Store, error)
	// ForceUnlock clears the writer lock (see the package ForceUnlock).
	ForceUnlock(opts UnlockOptions) (*Holder, error)
	// String says where the state is, for messages.
	String() string
}

// Local is the default backend: the bbolt file at Path.
type Local struct{ Path string }

var (
	_ Store   = (*BoltStore)(nil)
	_ Backend = Local{}
)

func (l Local) Open(opts Options) (Store, error) { return Open(l.Path, opts) }
func (l Local) OpenReadOnly() (Store, error)     { return OpenReadOnly(l.Path) }
func (l Local) ForceUnlock(opts UnlockOptions) (*Holder, error) {
	return ForceUnlock(l.Path, opts)
}
func (l Local) String() string { return "local state " + l.Path }

// PortableVersion is the version of the Portable snapshot format.
const PortableVersion = 1

// Portable is a whole state as one JSON document (`state pull`, `state
// push`, migration). Node details and provider-private bytes travel with
// it: treat a pulled file like the state itself (it is written 0600).
type Portable struct {
	Version   int               `json:"sparkform_state"` // PortableVersion
	Lineage   string            `json:"lineage"`
	Serial    uint64            `json:"serial"`
	Resources []*Resource       `json:"resources"`
	Outputs   map[string]Output `json:"outputs"`
}

// Export reads s into a Portable snapshot. A state with journal intents
// is refused: an interrupted run must be settled (plan) first, or its
// record of what was in flight would be lost.
func Export(s Store) (*Portable, error) {
	p, intents, err := ExportWithIntents(s)
	if err != nil {
		return nil, err
	}
	if len(intents) > 0 {
		return nil, fmt.Errorf("%w: the state has %d journal intent(s) from an interrupted run (first: %s); "+
			"run `sparkform plan` to settle them first", ErrInvalid, len(intents), intents[0].Address)
	}
	return p, nil
}

// ExportWithIntents is Export that also returns the journal instead of
// refusing it (state pull: a reader that never waits for a running apply
// reports its in-flight calls, which the snapshot does not carry).
func ExportWithIntents(s Store) (*Portable, []*Intent, error) {
	snap, err := s.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	outs, err := s.Outputs()
	if err != nil {
		return nil, nil, err
	}
	return &Portable{Version: PortableVersion, Lineage: snap.Meta.Lineage, Serial: snap.Meta.Serial,
		Resources: snap.Resources, Outputs: outs}, snap.Intents, nil
}

// ReadPortable decodes and checks a snapshot written by WritePortable.
func ReadPortable(r io.Reader) (*Portable, error) {
	var p Portable
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: not a sparkform state snapshot: %v", ErrFormat, err)
	}
	if p.Version != PortableVersion {
		return nil, fmt.Errorf("%w: snapshot format %d; this sparkform reads %d", ErrFormat, p.Version, PortableVersion)
	}
	if p.Lineage == "" {
		return nil, fmt.Errorf("%w: snapshot has no lineage", ErrFormat)
	}
	seen := map[string]bool{}
	for _, r := range p.Resources {
		if err := checkResource(r); err != nil {
			return nil, err
		}
		if seen[r.Address] {
			return nil, fmt.Errorf("%w: snapshot has %s twice", ErrInvalid, r.Address)
		}
		seen[r.Address] = true
	}
	sort.Slice(p.Resources, func(i, j int) bool { return p.Resources[i].Address < p.Resources[j].Address })
	if p.Outputs == nil {
		p.Outputs = map[string]Output{}
	}
	return &p, nil
}

// WritePortable writes p as indented JSON.
func WritePortable(w io.Writer, p *Portable) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// CheckTarget refuses to replace a state of another lineage with p unless
// force: two lineages are two different states, and pushing one over the
// other loses the target's. An empty target (serial 0, no resources) takes
// any lineage.
func CheckTarget(target Store, p *Portable, force bool) error {
	snap, err := target.Snapshot()
	if err != nil {
		return err
	}
	if len(snap.Intents) > 0 {
		return fmt.Errorf("%w: the target state has journal intents from an interrupted run; settle them with `sparkform plan` first", ErrInvalid)
	}
	empty := snap.Meta.Serial == 0 && len(snap.Resources) == 0
	if snap.Meta.Lineage == p.Lineage || empty || force {
		if snap.Meta.Lineage == p.Lineage && p.Serial < snap.Meta.Serial && !force {
			return fmt.Errorf("%w: the target is newer (serial %d) than the snapshot (serial %d) of the same lineage; "+
				"pass -force to go back to the older state", ErrInvalid, snap.Meta.Serial, p.Serial)
		}
		return nil
	}
	return fmt.Errorf("%w: the target holds another state (lineage %s, serial %d, %d instances), not lineage %s; "+
		"pass -force to replace it", ErrInvalid, snap.Meta.Lineage, snap.Meta.Serial, len(snap.Resources), p.Lineage)
}

// CurrentHolder is the holder record for this process.
func CurrentHolder(command string) Holder {
	host, _ := os.Hostname()
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return Holder{PID: os.Getpid(), Host: host, User: name, Command: command, Since: time.Now().UTC().Truncate(time.Second)}
}

// NewLineage makes a fresh lineage id (for backends creating a state).
func NewLineage() string { return newLineage() }

// CheckAddress and CheckResource apply the store's rules on addresses and
// records, for other backends.
func CheckAddress(addr string) error  { return checkAddress(addr) }
func CheckResource(r *Resource) error { return checkResource(r) }
