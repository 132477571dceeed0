package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// goodState writes a state with enough instances to span many pages (the
// seed-shaped 200 sparkform_data and history), closes it and returns its
// path and bytes.
func goodState(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), ".sparkform", "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := s.PutResource(testResource(fmt.Sprintf("sparkform_data.x[%d]", i), strings.Repeat("v", 200))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 65536 {
		t.Fatalf("state is only %d bytes; the truncation cases need more", len(data))
	}
	return path, data
}

// readAll runs every read a command does; it must return an error, never
// crash the process (a SIGBUS here kills the test binary: a failure too).
func readAll(path string) error {
	s, err := OpenReadOnly(path)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Snapshot(); err != nil {
		return err
	}
	if _, err := s.History("sparkform_data.x[7]"); err != nil {
		return err
	}
	_, err = s.Outputs()
	return err
}

// The cases: truncated to 32768 and 16384 bytes (SIGBUS, assertion
// panics), and 0 bytes (taken as an empty state).
func TestDamagedFileIsADiagnostic(t *testing.T) {
	path, good := goodState(t)
	for _, size := range []int{32768, 16384, 8192, 4096, 100} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			if err := os.WriteFile(path, good[:size], 0o600); err != nil {
				t.Fatal(err)
			}
			err := readAll(path)
			wantDamaged(t, err, path)
			if _, err := Open(path, Options{}); !errors.Is(err, ErrDamaged) {
				t.Errorf("Open: %v, want ErrDamaged", err)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		os.WriteFile(path, nil, 0o600)
		err := readAll(path)
		wantDamaged(t, err, path)
		if !strings.Contains(err.Error(), "empty (0 bytes)") {
			t.Errorf("error does not say the file is empty: %v", err)
		}
	})
}

func wantDamaged(t *testing.T, err error, path string) {
	t.Helper()
	if !errors.Is(err, ErrDamaged) {
		t.Fatalf("got %v, want ErrDamaged", err)
	}
	msg := err.Error()
	for _, want := range []string{path, "damaged", BackupPath(path), "cp -p"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
}

// Every page header of the file damaged in turn (type flags, element count,
// overflow): each read is an error or a correct answer, never a crash; and
// a writer never commits on top of a damaged file.
func TestFlippedPageHeaders(t *testing.T) {
	path, good := goodState(t)
	// The page size goodState's bbolt chose (the OS page size), from the
	// meta page: every page header is damaged at its own offset.
	pageSize := int(binary.LittleEndian.Uint32(good[16+8:]))
	if pageSize < 1024 || len(good)%pageSize != 0 {
		t.Fatalf("meta page gives page size %d for a %d-byte file", pageSize, len(good))
	}
	mutations := []struct {
		name string
		off  int
		val  []byte
	}{
		{"flags", 8, []byte{0xff, 0xff}},
		{"count", 10, []byte{0xff, 0xff}},
		{"overflow", 12, []byte{0xff, 0xff, 0xff, 0x7f}},
		{"id", 0, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}},
	}
	crashes, errs := 0, 0
	for page := 0; page*pageSize < len(good); page++ {
		for _, m := range mutations {
			bad := append([]byte(nil), good...)
			copy(bad[page*pageSize+m.off:], m.val)
			if err := os.WriteFile(path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						crashes++
						t.Errorf("page %d %s: panic escaped: %v", page, m.name, r)
					}
				}()
				if err := readAll(path); err != nil {
					errs++
					if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrFormat) {
						t.Errorf("page %d %s: %v, want ErrDamaged", page, m.name, err)
					}
				}
			}()
		}
	}
	if errs == 0 {
		t.Fatal("no mutation was reported as damage: the test does not reach bbolt's pages")
	}
	t.Logf("%d mutated files, %d reported as damaged, %d crashes", len(good)/pageSize*len(mutations), errs, crashes)
}

// The last-good copy: written on Close after changes, restorable by the
// command the error prints, and never replaced by a damaged file.
func TestBackupIsLastGood(t *testing.T) {
	path, good := goodState(t)
	bak, err := os.ReadFile(BackupPath(path))
	if err != nil {
		t.Fatalf("no last-good copy after a write session: %v", err)
	}
	if fi, _ := os.Stat(BackupPath(path)); fi.Mode().Perm() != 0o600 {
		t.Errorf("backup mode %v, want 0600", fi.Mode().Perm())
	}
	os.WriteFile(path, good[:32768], 0o600)
	if err := readAll(path); !errors.Is(err, ErrDamaged) {
		t.Fatalf("truncated: %v", err)
	}
	os.WriteFile(path, bak, 0o600)
	s, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("restored copy: %v", err)
	}
	rs, err := s.Resources()
	if err != nil || len(rs) != 200 {
		t.Fatalf("restored copy holds %d resources (%v), want 200", len(rs), err)
	}

	// A session on a file that went bad keeps the old copy.
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.PutResource(testResource("sparkform_data.y", "new")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(BackupPath(path))
	if db, err := bolt.Open(BackupPath(path), 0o600, &bolt.Options{ReadOnly: true}); err != nil {
		t.Fatal(err)
	} else {
		db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(bucketResources).Get([]byte("sparkform_data.y")) == nil {
				t.Error("the copy was not refreshed after a session with changes")
			}
			return nil
		})
		db.Close()
	}
	if len(after) == 0 {
		t.Fatal("empty copy")
	}
}

// An existing empty or lineage-less file is refused by writers unless
// ResetState; a missing file is a new state as before.
func TestWriterRefusesFileWithoutLineage(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o600)
	_, err := Open(empty, Options{})
	if !errors.Is(err, ErrNoLineage) {
		t.Fatalf("Open(empty): %v, want ErrNoLineage", err)
	}
	for _, want := range []string{"empty (0 bytes)", "-reset-state", "new lineage"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if fi, _ := os.Stat(empty); fi.Size() != 0 {
		t.Error("the refused file was changed")
	}
	s, err := Open(empty, Options{ResetState: true})
	if err != nil {
		t.Fatalf("Open(empty, ResetState): %v", err)
	}
	if m, err := s.Meta(); err != nil || m.Lineage == "" {
		t.Errorf("reset state: %+v %v", m, err)
	}
	s.Close()

	bare := filepath.Join(dir, "bare.db")
	db, err := bolt.Open(bare, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucketMeta); return err })
	db.Close()
	if _, err := Open(bare, Options{}); !errors.Is(err, ErrNoLineage) || !strings.Contains(err.Error(), "has no lineage") {
		t.Fatalf("Open(lineage-less): %v, want ErrNoLineage", err)
	}
	if s, err := Open(bare, Options{ResetState: true}); err != nil {
		t.Fatalf("Open(lineage-less, ResetState): %v", err)
	} else {
		s.Close()
	}
}

func TestSparkformDirIsTightened(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".sparkform")
	os.Mkdir(dir, 0o755)
	os.Chmod(dir, 0o755)
	s, err := Open(filepath.Join(dir, "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf(".sparkform is %v, want 0700", fi.Mode().Perm())
	}
}

// Random byte damage anywhere in the file (a fixed seed, so a failure
// repeats): every read returns within a bound. bbolt follows page
// references without looking for cycles, so a damaged branch element
// could send it into an endless loop or a stack overflow; checkTree
// refuses such a file first.
func TestRandomDamageNeverHangs(t *testing.T) {
	path, good := goodState(t)
	r := rand.New(rand.NewSource(1))
	for i := range 300 {
		bad := append([]byte(nil), good...)
		for range 1 + r.Intn(8) {
			bad[r.Intn(len(bad))] = byte(r.Intn(256))
		}
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- readAll(path) }()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrFormat) {
				t.Fatalf("iteration %d: %v, want ErrDamaged", i, err)
			}
		case <-time.After(10 * time.Second):
			os.WriteFile(filepath.Join(os.TempDir(), "sparkform-hang.db"), bad, 0o600)
			t.Fatalf("iteration %d: the read did not return (file kept as %s)", i, filepath.Join(os.TempDir(), "sparkform-hang.db"))
		}
	}
}

// A branch element pointing back at its own page: a cycle. The page is
// the root of the resources bucket in the tree the current meta reaches
// (a stale branch page elsewhere in the file would prove nothing).
func TestPageCycleIsDamage(t *testing.T) {
	path, good := goodState(t)
	le := binary.LittleEndian
	m0, why0 := parseMeta(good)
	m1, why1 := parseMeta(good[4096:])
	if why0 != "" || why1 != "" {
		t.Fatalf("meta pages: %q %q", why0, why1)
	}
	m := m0
	if m1.txid > m0.txid {
		m = m1
	}
	ps := int(m.pageSize)
	rootPage := good[int(m.root)*ps:]
	if le.Uint16(rootPage[8:]) != leafPageFlag {
		t.Fatalf("the root bucket page %d is not a leaf", m.root)
	}
	var id uint64
	for i := range int(le.Uint16(rootPage[10:])) {
		e := rootPage[pageHeaderSize+i*elemSize:]
		pos, ks := int(le.Uint32(e[4:])), int(le.Uint32(e[8:]))
		k := e[pos : pos+ks]
		if string(k) == "resources" {
			id = le.Uint64(e[pos+ks:])
		}
	}
	if id == 0 {
		t.Fatal("no resources bucket with a page of its own")
	}
	if le.Uint16(good[int(id)*ps+8:]) != branchPageFlag {
		t.Fatalf("the resources bucket's root page %d is not a branch page", id)
	}
	bad := append([]byte(nil), good...)
	le.PutUint64(bad[int(id)*ps+pageHeaderSize+8:], id) // first element -> itself
	os.WriteFile(path, bad, 0o600)
	err := readAll(path)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "referenced twice") {
		t.Fatalf("cycle at branch page %d: %v", id, err)
	}
}

// The checks never refuse a sound file: a state that went through many
// puts, deletes, moves, intents and outputs (big values on overflow
// pages, history, a freelist with pending pages) opens after every
// session, for readers and writers.
func TestChecksAcceptBusyState(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".sparkform", "state.db")
	r := rand.New(rand.NewSource(2))
	for session := range 6 {
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("session %d: %v", session, err)
		}
		for i := range 300 {
			addr := fmt.Sprintf("sparkform_data.x[%d]", r.Intn(400))
			switch r.Intn(6) {
			case 0:
				s.DeleteResource(addr)
			case 1:
				s.MoveResource(addr, fmt.Sprintf("sparkform_data.y[%d]", i+session*1000))
			case 2:
				s.PutIntent(&Intent{Address: addr, Action: "update"})
			default:
				if err := s.PutResource(testResource(addr, strings.Repeat("v", r.Intn(20000)))); err != nil {
					t.Fatal(err)
				}
			}
		}
		s.PutOutputs(map[string]Output{"o": {Value: []byte(fmt.Sprintf(`"%d"`, session))}})
		if err := s.Close(); err != nil {
			t.Fatalf("session %d close: %v", session, err)
		}
		if err := readAll(path); err != nil {
			t.Fatalf("after session %d: %v", session, err)
		}
	}
}
