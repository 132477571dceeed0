package main

import (
	"errors"
	"fmt"

	"github.com/sparkform/sparkform/state"
)

// openStateUnlocked is -lock=false: the state is read without the writer
// lock, so a plan can look while an apply runs (it may see the apply half
// done). The store refuses writes; a warning says so.
func (m *meta) openStateUnlocked() (state.Store, error) {
	m.view.warn("-lock=false: the state is read without the lock. Another command may be changing it; this plan can be out of date the moment it is printed, and nothing is written to the state.")
	st, err := m.openStateReadOnly()
	if errors.Is(err, state.ErrNoState) {
		return emptyStore{}, nil
	}
	return st, err
}

// emptyStore is the state before the first apply, read-only.
type emptyStore struct{}

var _ state.Store = emptyStore{}

func (emptyStore) Meta() (state.Meta, error)                 { return state.Meta{Version: state.FormatVersion}, nil }
func (emptyStore) Resources() ([]*state.Resource, error)     { return nil, nil }
func (emptyStore) Intents() ([]*state.Intent, error)         { return nil, nil }
func (emptyStore) Outputs() (map[string]state.Output, error) { return map[string]state.Output{}, nil }
func (emptyStore) History(string) ([]*state.HistoryEntry, error) {
	return nil, nil
}
func (emptyStore) Resource(addr string) (*state.Resource, error) {
	return nil, fmt.Errorf("%w: %s", state.ErrResourceNotFound, addr)
}
func (e emptyStore) Snapshot() (*state.Snapshot, error) {
	m, _ := e.Meta()
	return &state.Snapshot{Meta: m}, nil
}
func (emptyStore) PutResource(*state.Resource) error        { return state.ErrReadOnly }
func (emptyStore) Complete(string, *state.Resource) error   { return state.ErrReadOnly }
func (emptyStore) DeleteResource(string) error              { return state.ErrReadOnly }
func (emptyStore) MoveResource(string, string) error        { return state.ErrReadOnly }
func (emptyStore) PutIntent(*state.Intent) error            { return state.ErrReadOnly }
func (emptyStore) DeleteIntent(string) error                { return state.ErrReadOnly }
func (emptyStore) PutOutputs(map[string]state.Output) error { return state.ErrReadOnly }
func (emptyStore) Replace(*state.Portable) error            { return state.ErrReadOnly }
func (emptyStore) Flush() error                             { return nil }
func (emptyStore) Close() error                             { return nil }
