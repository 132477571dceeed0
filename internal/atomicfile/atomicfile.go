// Package atomicfile writes a file so that a reader (or a crash) sees the
// old content or the new, never part of either: a temp sibling, fsync,
// rename (github.com/google/renameio). The plan files and the local
// transport's WriteFile share it.
package atomicfile

import (
	"io/fs"

	"github.com/google/renameio/v2"
)

// Write replaces path with data, with exactly mode: not the umask's, not
// the replaced file's (renameio.WriteFile keeps the latter; a plan file
// must end up 0600 whatever was there).
func Write(path string, data []byte, mode fs.FileMode) error {
	t, err := renameio.NewPendingFile(path, renameio.WithStaticPermissions(mode))
	if err != nil {
		return err
	}
	defer t.Cleanup()
	if _, err := t.Write(data); err != nil {
		return err
	}
	return t.CloseAtomicallyReplace()
}
