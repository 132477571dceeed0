package node_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
)

func names(fis []fs.FileInfo) string {
	var n []string
	for _, fi := range fis {
		n = append(n, fi.Name())
	}
	return strings.Join(n, ",")
}

func TestFileOps(t *testing.T) {
	for _, tr := range transports(t) {
		c, d := tr.conn, tr.dir
		p := func(s string) string { return filepath.Join(d, s) }
		t.Run(tr.name, func(t *testing.T) {
			ctx := ctxT(t)
			data := []byte("hello\x00world\n")
			if err := c.WriteFile(ctx, p("f"), data, 0o640); err != nil {
				t.Fatal(err)
			}
			if got, err := c.ReadFile(ctx, p("f")); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("ReadFile = %q, %v", got, err)
			}
			fi, err := c.Stat(ctx, p("f"))
			if err != nil || fi.Mode().Perm() != 0o640 || fi.Size() != int64(len(data)) || fi.IsDir() || fi.Name() != "f" {
				t.Fatalf("Stat = %v %v, %v", fi.Mode(), fi.Size(), err)
			}
			// Overwrite replaces content and mode, and leaves no temp file.
			if err := c.WriteFile(ctx, p("f"), []byte("2"), 0o600); err != nil {
				t.Fatal(err)
			}
			if got, _ := c.ReadFile(ctx, p("f")); string(got) != "2" {
				t.Fatalf("after overwrite: %q", got)
			}
			if fi, _ := c.Stat(ctx, p("f")); fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode after overwrite %v", fi.Mode())
			}
			if ents, err := c.ReadDir(ctx, d); err != nil || names(ents) != "f" {
				t.Fatalf("ReadDir = %s, %v (temp files left?)", names(ents), err)
			}

			if err := c.MkdirAll(ctx, p("a/b/c"), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := c.MkdirAll(ctx, p("a/b/c"), 0o750); err != nil {
				t.Fatalf("MkdirAll of an existing dir: %v", err)
			}
			if fi, err := c.Stat(ctx, p("a/b")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
				t.Fatalf("Stat a/b = %v, %v", fi, err)
			}
			if err := c.MkdirAll(ctx, p("f/x"), 0o755); err == nil {
				t.Fatal("MkdirAll under a file succeeded")
			}

			if err := c.Rename(ctx, p("f"), p("a/g")); err != nil {
				t.Fatal(err)
			}
			if err := c.WriteFile(ctx, p("h"), []byte("h"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := c.Rename(ctx, p("h"), p("a/g")); err != nil {
				t.Fatalf("Rename over an existing file: %v", err)
			}
			if got, _ := c.ReadFile(ctx, p("a/g")); string(got) != "h" {
				t.Fatalf("after rename over: %q", got)
			}
			if ents, err := c.ReadDir(ctx, p("a")); err != nil || names(ents) != "b,g" {
				t.Fatalf("ReadDir a = %s, %v", names(ents), err)
			}

			// Links: made by a command, read by the file API.
			if _, err := c.Run(ctx, node.Cmd{Argv: []string{"ln", "-s", "b/c", p("a/link")}}); err != nil {
				t.Fatal(err)
			}
			if target, err := c.Readlink(ctx, p("a/link")); err != nil || target != "b/c" {
				t.Fatalf("Readlink = %q, %v", target, err)
			}
			if fi, err := c.Lstat(ctx, p("a/link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Fatalf("Lstat = %v, %v", fi, err)
			}
			if fi, err := c.Stat(ctx, p("a/link")); err != nil || !fi.IsDir() {
				t.Fatalf("Stat through link = %v, %v", fi, err)
			}

			if err := c.Remove(ctx, p("a/link")); err != nil {
				t.Fatal(err)
			}
			if err := c.Remove(ctx, p("a/b/c")); err != nil {
				t.Fatalf("Remove empty dir: %v", err)
			}
			if err := c.Remove(ctx, p("a")); err == nil {
				t.Fatal("Remove of a non-empty dir succeeded")
			}
			if err := c.RemoveAll(ctx, p("a")); err != nil {
				t.Fatal(err)
			}
			if err := c.RemoveAll(ctx, p("a")); err != nil {
				t.Fatalf("RemoveAll of a missing path: %v", err)
			}
			for _, bad := range []string{"", "/", "//"} {
				if err := c.RemoveAll(ctx, bad); !errors.Is(err, fs.ErrInvalid) {
					t.Fatalf("RemoveAll(%q) = %v, want refusal", bad, err)
				}
			}
			if ents, err := c.ReadDir(ctx, d); err != nil || len(ents) != 0 {
				t.Fatalf("dir not empty at the end: %s, %v", names(ents), err)
			}
		})
		t.Run(tr.name+"/not exist", func(t *testing.T) {
			ctx := ctxT(t)
			m := p("missing")
			checks := map[string]error{
				"ReadFile":  func() error { _, err := c.ReadFile(ctx, m); return err }(),
				"WriteFile": c.WriteFile(ctx, p("missing/f"), nil, 0o644),
				"Rename":    c.Rename(ctx, m, p("x")),
				"Remove":    c.Remove(ctx, m),
				"Stat":      func() error { _, err := c.Stat(ctx, m); return err }(),
				"Lstat":     func() error { _, err := c.Lstat(ctx, m); return err }(),
				"ReadDir":   func() error { _, err := c.ReadDir(ctx, m); return err }(),
				"Readlink":  func() error { _, err := c.Readlink(ctx, m); return err }(),
			}
			for op, err := range checks {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: want fs.ErrNotExist, got %v", op, err)
				}
				var pe *fs.PathError
				var le *os.LinkError
				if !errors.As(err, &pe) && !(errors.As(err, &le) && le.Old == m) || pe != nil && !strings.HasPrefix(pe.Path, d) {
					t.Errorf("%s: want a *fs.PathError naming the path, got %#v", op, err)
				}
			}
		})
	}
}

func TestPermissionMapping(t *testing.T) {
	c := dial(t, 0) // the ssh user cannot read root's files
	if _, err := c.ReadFile(ctxT(t), "/etc/shadow"); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("want fs.ErrPermission, got %v", err)
	}
	if err := c.WriteFile(ctxT(t), "/etc/sparkform-nope", nil, 0o644); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("want fs.ErrPermission, got %v", err)
	}
}

// A reader racing WriteFile sees the old or the new content, never a mix
// or a truncated file.
func TestWriteFileAtomic(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			ctx := ctxT(t)
			f := filepath.Join(tr.dir, "atomic")
			a, b := bytes.Repeat([]byte("a"), 200_000), bytes.Repeat([]byte("b"), 200_000)
			if err := tr.conn.WriteFile(ctx, f, a, 0o644); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 15; i++ {
					v := a
					if i%2 == 0 {
						v = b
					}
					if err := tr.conn.WriteFile(ctx, f, v, 0o644); err != nil {
						t.Error(err)
					}
				}
				close(stop)
			}()
			reads := 0
			for done := false; !done; reads++ {
				select {
				case <-stop:
					done = true
				default:
				}
				got, err := tr.conn.ReadFile(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
					t.Fatalf("read %d: torn content: %d bytes", reads, len(got))
				}
			}
			wg.Wait()
		})
	}
}
