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
