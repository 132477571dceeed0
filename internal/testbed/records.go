package testbed

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// RemoveStaleRestoreRecords removes the restore records (see
// providers/internal/restore) that tests on this machine left behind:
// those keyed by a path under the temp folder whose top folder there (a
// test's t.TempDir or bed root) is gone, so no running test owns it. Tests
// that apply without destroying call it from TestMain after m.Run, so the
// machine's /var/lib/sparkform and the test users' ~/.local/state do not
// fill up. It returns how many it removed.
func RemoveStaleRestoreRecords() int {
	tmp := filepath.Clean(os.TempDir()) + "/"
	roots := []string{"/var/lib/sparkform/restore"}
	homes, _ := filepath.Glob("/home/*/.local/state/sparkform/restore")
	roots = append(roots, homes...)
	roots = append(roots, "/root/.local/state/sparkform/restore")
	n := 0
	for _, root := range roots {
		kinds, _ := os.ReadDir(root)
		for _, kind := range kinds {
			dir := filepath.Join(root, kind.Name())
			recs, _ := os.ReadDir(dir)
			for _, r := range recs {
				p := filepath.Join(dir, r.Name())
				key := recordKey(p)
				if !strings.HasPrefix(key, tmp) {
					continue
				}
				top, _, _ := strings.Cut(strings.TrimPrefix(key, tmp), "/")
				if _, err := os.Lstat(tmp + top); os.IsNotExist(err) && os.Remove(p) == nil {
					n++
				}
			}
			os.Remove(dir) // only when empty
		}
		os.Remove(root)
		os.Remove(filepath.Dir(root))
	}
	return n
}

// recordKey is the "key" line of a record ("" when unreadable).
func recordKey(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, ok := strings.CutPrefix(sc.Text(), "key "); ok {
			return k
		}
	}
	return ""
}
