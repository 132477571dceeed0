package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Issue 31, section 2: damage that bbolt cannot see must not be read as
// state. These use only what every format has, so they fail on a build
// without the checks.

// committedTwice is goodState plus a second write session (one more
// instance), so the file's newest meta page holds a commit the older one
// lacks, and the last-good copy holds it too.
func committedTwice(t *testing.T) (string, []byte) {
	t.Helper()
	path, _ := goodState(t)
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.PutResource(testResource("sparkform_data.y", "last")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// newestMeta is the offset of the meta page with the higher txid.
func newestMeta(data []byte) int {
	ps := int(binary.LittleEndian.Uint32(data[16+8:]))
	tx0 := binary.LittleEndian.Uint64(data[16+48:])
	tx1 := binary.LittleEndian.Uint64(data[ps+16+48:])
	if tx1 > tx0 {
		return ps
	}
	return 0
}

// A zeroed or flipped newest meta page makes bbolt use the previous
// transaction: the last commit silently gone. It is damage, for readers
// and writers, and the printed restore brings the commit back.
func TestNewestMetaPageDamageIsRollback(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(data []byte, off int)
	}{
		{"zeroed", func(data []byte, off int) { clear(data[off : off+4096]) }},
		{"flipped txid", func(data []byte, off int) { data[off+16+48] ^= 0x01 }},
		{"flipped checksum", func(data []byte, off int) { data[off+16+56] ^= 0x80 }},
		{"flipped root", func(data []byte, off int) { data[off+16+16] ^= 0x01 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, good := committedTwice(t)
			data := bytes.Clone(good)
			tc.damage(data, newestMeta(data))
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			wantDamaged(t, readAll(path), path)
			if _, err := Open(path, Options{}); !errors.Is(err, ErrDamaged) {
				t.Fatalf("a writer opened the rolled-back file: %v", err)
			}
			// The restore the error prints.
			cmd := restoreCommand(t, readAll(path))
			if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v %s", cmd, err, out)
			}
			r, err := OpenReadOnly(path)
			if err != nil {
				t.Fatalf("after the printed restore: %v", err)
			}
			if _, err := r.Resource("sparkform_data.y"); err != nil {
				t.Errorf("the restored state lacks the last commit: %v", err)
			}
		})
	}
}

// restoreCommand is the shell line a damage error prints.
func restoreCommand(t *testing.T, err error) string {
	t.Helper()
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.HasPrefix(line, "    mv ") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatalf("no restore command in: %v", err)
	return ""
}

// An older copy of the file put in its place is a rollback too.
func TestOlderCopyIsRollback(t *testing.T) {
	path, old := goodState(t)
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.PutResource(testResource("sparkform_data.y", "last")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, old, 0o600)
	wantDamaged(t, readAll(path), path)
}

// flipAll flips one bit at every occurrence of pat (plus at) in data:
// older copies of a page may linger in free pages, and the live one is
// among them.
func flipAll(t *testing.T, data, pat []byte, at int) {
	t.Helper()
	n := 0
	for i := 0; ; {
		j := bytes.Index(data[i:], pat)
		if j < 0 {
			break
		}
		data[i+j+at] ^= 0x01
		i += j + len(pat)
		n++
	}
	if n == 0 {
		t.Fatalf("%q is not in the file", pat)
	}
}

// A flipped byte inside a record was shown as drift; the next writer then
// copied it into the last-good copy. Now it is damage, and no writer
// touches the file or the copy.
func TestFlippedRecordByteIsDamage(t *testing.T) {
	for _, tc := range []struct {
		name string
		pat  string
		at   int
	}{
		{"value", `"id":"sparkform_data.x[7]","input":"vvvv`, 36},
		{"private", "restore: nvidia_drm modeset=0", 3},
		{"key", "sparkform_data.x[42]", 16},
		{"interned node", `"host":"192.168.100.11"`, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, good := goodState(t)
			bak, err := os.ReadFile(BackupPath(path))
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Clone(good)
			flipAll(t, data, []byte(tc.pat), tc.at)
			os.WriteFile(path, data, 0o600)
			wantDamaged(t, readAll(path), path)
			if w, err := Open(path, Options{}); err == nil {
				w.PutResource(testResource("sparkform_data.z", "after"))
				w.Close()
				t.Error("a writer opened the damaged file")
			} else if !errors.Is(err, ErrDamaged) {
				t.Errorf("writer: %v, want ErrDamaged", err)
			}
			if after, _ := os.ReadFile(BackupPath(path)); !bytes.Equal(after, bak) {
				t.Error("the last-good copy was replaced after the damage")
			}
		})
	}
}

// rawPut writes a value straight into the file, as damage would.
func rawPut(t *testing.T, path string, bucket, key, value []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key, value) }); err != nil {
		t.Fatal(err)
	}
}

// Meta and records that decode badly: each is damage naming the file and
// the restore, for every read; `output` (Outputs) and plan (Snapshot)
// included.
func TestCorruptRecordsNameTheFile(t *testing.T) {
	for _, tc := range []struct {
		name              string
		bucket, key, vals []byte
	}{
		{"empty lineage", bucketMeta, keyLineage, []byte{}},
		{"garbage outputs", bucketMeta, []byte("outputs"), []byte(`{"a":`)},
		{"garbage resource", bucketResources, []byte("sparkform_data.x[3]"), []byte{0x02, 0xff}},
		{"garbage intent", bucketJournal, []byte("sparkform_data.x[3]"), []byte{0x02, 0x7f}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := goodState(t)
			rawPut(t, path, tc.bucket, tc.key, tc.vals)
			wantDamaged(t, readAll(path), path)
			r, err := OpenReadOnly(path)
			if err == nil {
				defer r.Close()
				_, err = r.Outputs()
			}
			wantDamaged(t, err, path)
			if err == nil {
				t.Error("output: no error")
			}
		})
	}
}

// A record whose value type nests past the bound (an 85 KB list of lists
// took 1.1 GB to decode in the engine) is damage, refused before anything
// decodes it; the last-good copy is not made from it.
func TestDeepValueTypeIsDamage(t *testing.T) {
	path := statePath(t)
	w := openStore(t, path)
	r := testResource("sparkform_data.deep", "x")
	r.Value, r.ValueType = []byte{0xc0}, []byte(strings.Repeat(`["list",`, 9000)+`"string"`+strings.Repeat(`]`, 9000))
	if err := w.PutResource(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, ErrDamaged) {
		t.Errorf("Close made a last-good copy of it: %v", err)
	}
	err := readAll(path)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "nests more than 64 levels") {
		t.Errorf("got %v, want damage naming the file and the bound", err)
	}
	if _, err := os.Stat(BackupPath(path)); err == nil {
		t.Error("a last-good copy was made of it")
	}
}

// A branch page whose element count went down cuts part of the tree off:
// its records were missing without a word (state list and plan went on
// with fewer instances). A page neither reachable nor free is damage.
func TestCutOffPagesAreDamage(t *testing.T) {
	path, good := goodState(t)
	ps := int(binary.LittleEndian.Uint32(good[16+8:]))
	// Every branch page, free ones too: the live one is among them.
	data := bytes.Clone(good)
	cut := 0
	for id := 2; (id+1)*ps <= len(good); id++ {
		off := id * ps
		if binary.LittleEndian.Uint16(good[off+8:]) == 0x01 && binary.LittleEndian.Uint16(good[off+10:]) > 2 {
			binary.LittleEndian.PutUint16(data[off+10:], binary.LittleEndian.Uint16(good[off+10:])-1)
			cut++
		}
	}
	if cut == 0 {
		t.Fatal("no branch page in the state")
	}
	os.WriteFile(path, data, 0o600)
	wantDamaged(t, readAll(path), path)
}

// A state path that is a dangling symbolic link, a directory or a FIFO is
// damage for readers and writers: a dangling link was taken as "no state
// yet", and a writer started a new lineage through it.
func TestStatePathNotAFile(t *testing.T) {
	for name, make := range map[string]func(string) error{
		"dangling symlink": func(p string) error { return os.Symlink("gone.db", p) },
		"directory":        func(p string) error { return os.Mkdir(p, 0o700) },
		"fifo":             func(p string) error { return syscall.Mkfifo(p, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			path := statePath(t)
			os.MkdirAll(filepath.Dir(path), 0o700)
			if err := make(path); err != nil {
				t.Fatal(err)
			}
			if _, err := OpenReadOnly(path); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) {
				t.Errorf("reader: %v", err)
			}
			if w, err := Open(path, Options{}); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) {
				if err == nil {
					w.Close()
				}
				t.Errorf("writer: %v", err)
			}
		})
	}
}

// A last-good copy older than the last commit (its writer was killed
// before it refreshed the copy) would be refused as a rollback once
// restored: the printed restore then removes the commit record too, and
// says what is lost.
func TestRestoreOfAnOlderCopy(t *testing.T) {
	path, _ := goodState(t)
	old, err := os.ReadFile(BackupPath(path))
	if err != nil {
		t.Fatal(err)
	}
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.PutResource(testResource("sparkform_data.y", "last")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	os.WriteFile(BackupPath(path), old, 0o600) // as if Close never refreshed it
	os.WriteFile(path, old[:8192], 0o600)      // and then the file was damaged
	err = readAll(path)
	wantDamaged(t, err, path)
	cmd := restoreCommand(t, err)
	if !strings.HasSuffix(cmd, "&& rm "+CommitRecordPath(path)) || !strings.Contains(err.Error(), "older than the last commit") {
		t.Fatalf("the restore of an older copy keeps the commit record: %v", err)
	}
	if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", cmd, err, out)
	}
	if err := readAll(path); err != nil {
		t.Fatalf("after the printed restore: %v", err)
	}
}

// A commit record that cannot be written does not turn committed writes
// into failed ones: Close reports it, and the state holds the writes.
func TestCommitRecordUnwritable(t *testing.T) {
	path, _ := goodState(t)
	if err := os.Mkdir(CommitRecordPath(path)+".tmp", 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.PutResource(testResource("sparkform_data.y", "last")); err != nil {
		t.Fatalf("the write failed with the record: %v", err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "would go unnoticed") {
		t.Errorf("Close: %v, want the record's error", err)
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resource("sparkform_data.y"); err != nil {
		t.Error(err)
	}
}
