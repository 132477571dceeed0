package node

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/pkg/sftp"
)

// files returns the connection's sftp client, starting it on first use.
func (s *SSH) files(ctx context.Context) (*sftp.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sftp != nil {
		return s.sftp, nil
	}
	if !s.alive() {
		return nil, fmt.Errorf("node %s: %w", s.node.Name, ErrClosed)
	}
	c, err := sftp.NewClient(s.client)
	if err != nil {
		return nil, fmt.Errorf("node %s: start sftp (is the sshd `Subsystem sftp` configured?): %w", s.node.Name, err)
	}
	s.sftp = c
	// A dead sftp server is restarted on the next file operation.
	go func() {
		_ = c.Wait()
		s.mu.Lock()
		if s.sftp == c {
			s.sftp = nil
		}
		s.mu.Unlock()
	}()
	return c, nil
}

// fileErr wraps err as a *fs.PathError whose Err matches fs.ErrNotExist,
// fs.ErrPermission where the sftp status says so.
func (s *SSH) fileErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var se *sftp.StatusError
	if errors.As(err, &se) {
		switch se.FxCode() {
		case sftp.ErrSSHFxNoSuchFile:
			err = fs.ErrNotExist
		case sftp.ErrSSHFxPermissionDenied:
			err = fs.ErrPermission
		case sftp.ErrSSHFxOpUnsupported:
			err = errors.ErrUnsupported
		}
	}
	return fmt.Errorf("node %s: %w", s.node.Name, &fs.PathError{Op: op, Path: p, Err: err})
}

// ReadFile implements Conn.
func (s *SSH) ReadFile(ctx context.Context, p string) ([]byte, error) {
	c, err := s.files(ctx)
	if err != nil {
		return nil, err
	}
	s.trips.Add(1)
	f, err := c.Open(p)
	if err != nil {
		return nil, s.fileErr("open", p, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		return nil, s.fileErr("read", p, err)
	}
	return buf.Bytes(), nil
}

// WriteFile implements Conn: a temporary sibling is written, given mode,
// synced where the server supports it, then renamed over p (POSIX rename:
// atomic, replaces p). On failure the temporary file is removed.
func (s *SSH) WriteFile(ctx context.Context, p string, data []byte, mode fs.FileMode) (err error) {
	c, err := s.files(ctx)
	if err != nil {
		return err
	}
	s.trips.Add(1)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(p), "."+path.Base(p)+".tmp"+hex.EncodeToString(rnd[:]))
	f, err := c.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return s.fileErr("open", tmp, err)
	}
	defer func() {
		if err != nil {
			_ = c.Remove(tmp)
		}
	}()
	// The server creates the file with its default mode (0644 under the
	// usual umask): set the final mode before any data is in it, so a
	// 0600 file's content is never readable by others, even briefly.
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return s.fileErr("chmod", tmp, err)
	}
	if _, err := f.ReadFrom(bytes.NewReader(data)); err != nil {
		f.Close()
		return s.fileErr("write", tmp, err)
	}
	if err := f.Sync(); err != nil && !isUnsupported(err) {
		f.Close()
		return s.fileErr("sync", tmp, err)
	}
	if err := f.Close(); err != nil {
		return s.fileErr("close", tmp, err)
	}
	if err := c.PosixRename(tmp, p); err != nil {
		return s.fileErr("rename", p, err)
	}
	return nil
}

func isUnsupported(err error) bool {
	var se *sftp.StatusError
	return errors.As(err, &se) && se.FxCode() == sftp.ErrSSHFxOpUnsupported ||
		strings.Contains(err.Error(), "not supported")
}

// Rename implements Conn: a POSIX rename, replacing to if it exists.
func (s *SSH) Rename(ctx context.Context, from, to string) error {
	c, err := s.files(ctx)
	if err != nil {
		return err
	}
	s.trips.Add(1)
	if err := s.fileErr("rename", from, c.PosixRename(from, to)); err != nil {
		// An *os.LinkError naming both paths, as from os.Rename.
		var pe *fs.PathError
		errors.As(err, &pe)
		return fmt.Errorf("node %s: %w", s.node.Name, &os.LinkError{Op: "rename", Old: from, New: to, Err: pe.Err})
	}
	return nil
}

// Remove implements Conn: a file, link or empty directory.
func (s *SSH) Remove(ctx context.Context, p string) error {
	c, err := s.files(ctx)
	if err != nil {
		return err
	}
	s.trips.Add(1)
	return s.fileErr("remove", p, c.Remove(p))
}

// RemoveAll implements Conn. It is one `rm -rf` command, not a recursive
// walk of sftp requests; like os.RemoveAll a missing path is no error.
func (s *SSH) RemoveAll(ctx context.Context, p string) error {
	if p == "" || path.Clean(p) == "/" {
		return fmt.Errorf("node %s: %w", s.node.Name, &fs.PathError{Op: "removeall", Path: p, Err: fs.ErrInvalid})
	}
	_, err := s.Run(ctx, Cmd{Argv: []string{"rm", "-rf", "--", p}})
	var ee *ExitError
	if errors.As(err, &ee) {
		e := errors.New(strings.TrimSpace(ee.Stderr))
		if strings.Contains(ee.Stderr, "Permission denied") {
			e = fs.ErrPermission
		}
		return fmt.Errorf("node %s: %w", s.node.Name, &fs.PathError{Op: "removeall", Path: p, Err: e})
	}
	return err
}

// MkdirAll implements Conn. Directories it creates get exactly mode (no
// umask); existing ones are left as they are.
func (s *SSH) MkdirAll(ctx context.Context, p string, mode fs.FileMode) error {
	c, err := s.files(ctx)
	if err != nil {
		return err
	}
	s.trips.Add(1)
	return s.mkdirAll(c, p, mode)
}

func (s *SSH) mkdirAll(c *sftp.Client, p string, mode fs.FileMode) error {
	fi, err := c.Stat(p)
	if err == nil {
		if fi.IsDir() {
			return nil
		}
		return fmt.Errorf("node %s: %w", s.node.Name, &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR})
	}
	if !errors.Is(s.fileErr("stat", p, err), fs.ErrNotExist) {
		return s.fileErr("stat", p, err)
	}
	if parent := path.Dir(p); parent != p && parent != "." {
		if err := s.mkdirAll(c, parent, mode); err != nil {
			return err
		}
	}
	if err := c.Mkdir(p); err != nil {
		// Lost a race with another creator: fine if it is a directory now.
		if fi, serr := c.Stat(p); serr == nil && fi.IsDir() {
			return nil
		}
		return s.fileErr("mkdir", p, err)
	}
	return s.fileErr("chmod", p, c.Chmod(p, mode))
}

// Stat implements Conn.
func (s *SSH) Stat(ctx context.Context, p string) (fs.FileInfo, error) {
	c, err := s.files(ctx)
	if err != nil {
		return nil, err
	}
	s.trips.Add(1)
	fi, err := c.Stat(p)
	return fi, s.fileErr("stat", p, err)
}

// Lstat implements Conn.
func (s *SSH) Lstat(ctx context.Context, p string) (fs.FileInfo, error) {
	c, err := s.files(ctx)
	if err != nil {
		return nil, err
	}
	s.trips.Add(1)
	fi, err := c.Lstat(p)
	return fi, s.fileErr("lstat", p, err)
}

// ReadDir implements Conn; entries are sorted by name, like Local.
func (s *SSH) ReadDir(ctx context.Context, p string) ([]fs.FileInfo, error) {
	c, err := s.files(ctx)
	if err != nil {
		return nil, err
	}
	s.trips.Add(1)
	ents, err := c.ReadDirContext(ctx, p)
	if err != nil {
		return nil, s.fileErr("readdir", p, err)
	}
	out := ents[:0]
	for _, e := range ents {
		if e.Name() != "." && e.Name() != ".." {
			out = append(out, e)
		}
	}
	sortInfos(out)
	return out, nil
}

// Readlink implements Conn.
func (s *SSH) Readlink(ctx context.Context, p string) (string, error) {
	c, err := s.files(ctx)
	if err != nil {
		return "", err
	}
	s.trips.Add(1)
	t, err := c.ReadLink(p)
	return t, s.fileErr("readlink", p, err)
}
