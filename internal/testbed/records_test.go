package testbed_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
)

// TestRemoveStaleRestoreRecords: a record keyed under a gone temp folder
// goes; one keyed under a live one stays.
func TestRemoveStaleRestoreRecords(t *testing.T) {
	if os.Geteuid() != 0 {
		realpart.Missing(t, "root, to write /var/lib/sparkform/restore")
	}
	dir := filepath.Join("/var/lib/sparkform/restore", "testbed-selftest")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	live := t.TempDir()
	gone, err := os.MkdirTemp("", "records-gone-")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(gone)
	write := func(name, key string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("key "+key+"\nmade "+filepath.Dir(key)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := write("stale", filepath.Join(gone, "a", "kit"))
	kept := write("kept", filepath.Join(live, "a", "kit"))
	other := write("other", "/srv/not-a-test/kit")
	if n := testbed.RemoveStaleRestoreRecords(); n < 1 {
		t.Errorf("removed %d records, want at least the stale one", n)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale record kept: %v", err)
	}
	for _, p := range []string{kept, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}
