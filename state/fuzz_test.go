package state

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzStateFile: any bytes as .sparkform/state.db give every reader a
// state or an error (ErrDamaged/ErrFormat for what is not a readable
// state), never a panic or a fault; records inside a valid file are
// decoded the same way. Corpus: testdata/fuzz/FuzzStateFile (a small real
// state with resources, an intent, history and outputs).
func FuzzStateFile(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "state.db")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		err := readAll(path)
		if err != nil && !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrFormat) &&
			!errors.Is(err, ErrNoState) && !errors.Is(err, ErrInvalid) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}

// FuzzRecord: any bytes as a stored record (resource, intent or history
// entry, either format) decode to a record or an ErrFormat error, never a
// panic; a record that decodes encodes back to one that decodes the same.
func FuzzRecord(f *testing.F) {
	r := fullRecord(`kmod_module.k["a"]`)
	rec, _ := EncodeResource(r, r.Address)
	in, _ := EncodeIntent(&Intent{Address: r.Address, Action: "update", Resource: r, PID: 7})
	f.Add(rec)
	f.Add(in)
	f.Add(EncodeHistory(r.UpdatedAt, HistoryMoveOut, "a.b", rec))
	f.Add([]byte(`{"address":"a.b","type":"a","value":{"v":1},"status":"ready"}`))
	f.Add([]byte{recordTag, 0, 0, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := decodeResource(data, "a.b", nil); err == nil {
			if r.Status != StatusReady && r.Status != StatusTainted {
				return // a format-1 record holds what JSON gave it
			}
			again, err := EncodeResource(r, "a.b")
			if err == nil {
				back, err := DecodeResource(again, "a.b")
				if err != nil || back.Address != r.Address || string(back.Value) != string(r.Value) {
					t.Fatalf("re-encoded record: %+v, %v (was %+v)", back, err, r)
				}
			}
		} else if !errors.Is(err, ErrFormat) {
			t.Fatalf("resource: %v", err)
		}
		if _, err := decodeIntent(data, "a.b", nil); err != nil && !errors.Is(err, ErrFormat) {
			t.Fatalf("intent: %v", err)
		}
		if _, err := decodeHistory(data, "a.b", 1, nil); err != nil && !errors.Is(err, ErrFormat) {
			t.Fatalf("history: %v", err)
		}
	})
}
