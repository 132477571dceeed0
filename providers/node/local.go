package node

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sparkform/sparkform/internal/atomicfile"
)

// localKillGrace is how long a cancelled local command may take to clean up.
const localKillGrace = 10 * time.Second

// Local is the node sparkform runs on. Commands run directly (argv, no
// shell); Become prefixes `sudo -n` unless already root.
type Local struct {
	name  string
	trips atomic.Int64
	opts  Options // where its command lines go
}

var _ Conn = (*Local)(nil)

// NewLocal returns the local node, named name for messages.
func NewLocal(name string) *Local { return &Local{name: name} }

// Name implements Conn.
func (l *Local) Name() string { return l.name }

// Close implements Conn.
func (l *Local) Close() error { return nil }

// RoundTrips implements Conn: every operation counts one, as over SSH.
func (l *Local) RoundTrips() int64 { return l.trips.Load() }

// Run implements Conn.
func (l *Local) Run(ctx context.Context, c Cmd) (res Result, err error) {
	if err := checkCmd(l.name, c); err != nil {
		return Result{}, err
	}
	defer func(start time.Time) { l.opts.logCommand(l.name, c, start, err) }(time.Now())
	l.trips.Add(1)
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	argv := c.Argv
	sudo := c.Become && os.Geteuid() != 0
	if sudo {
		argv = append([]string{"sudo", "-n", "--"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.Dir
	// Cancellation is SIGTERM to the command's whole process group (as the
	// SSH transport does remotely), so scripts' cleanup traps run; SIGKILL
	// follows only if it has not exited after a grace period.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = localKillGrace
	// A clean environment, as sshd gives a session, never the CLI's own:
	// that holds SPARKFORM_ETCD_PASSWORD, SPARKFORM_VAR_* and whatever
	// else the user exported for sparkform, not for the node.
	env := sessionEnv(os.Environ())
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+c.Env[k])
	}
	cmd.Env = env
	cmd.Stdin = c.Stdin
	var stdout, stderr bytes.Buffer
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	} else {
		cmd.Stdout = &stdout
	}
	cmd.Stderr = &stderr
	err = cmd.Run()
	res = Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		xe := &ExitError{Argv: c.Argv, ExitCode: ee.ExitCode(), Stderr: stderr.String()}
		if sudo {
			return res, becomeError(l.name, currentUser(), xe)
		}
		return res, xe
	}
	if err != nil && ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, err
}

// ReadFile implements Conn.
func (l *Local) ReadFile(_ context.Context, path string) ([]byte, error) {
	l.trips.Add(1)
	return os.ReadFile(path)
}

// WriteFile implements Conn: a temp sibling, fsync, rename (atomicfile),
// with exactly mode whatever the umask, as over sftp.
func (l *Local) WriteFile(_ context.Context, path string, data []byte, mode fs.FileMode) error {
	l.trips.Add(1)
	return atomicfile.Write(path, data, mode)
}

// Rename implements Conn.
func (l *Local) Rename(_ context.Context, from, to string) error {
	l.trips.Add(1)
	return os.Rename(from, to)
}

// Remove implements Conn.
func (l *Local) Remove(_ context.Context, path string) error {
	l.trips.Add(1)
	return os.Remove(path)
}

// RemoveAll implements Conn.
func (l *Local) RemoveAll(_ context.Context, path string) error {
	l.trips.Add(1)
	if path == "" || filepath.Clean(path) == "/" {
		return &fs.PathError{Op: "removeall", Path: path, Err: fs.ErrInvalid}
	}
	return os.RemoveAll(path)
}

// MkdirAll implements Conn.
func (l *Local) MkdirAll(_ context.Context, path string, mode fs.FileMode) error {
	l.trips.Add(1)
	return os.MkdirAll(path, mode)
}

// Stat implements Conn.
func (l *Local) Stat(_ context.Context, path string) (fs.FileInfo, error) {
	l.trips.Add(1)
	return os.Stat(path)
}

// Lstat implements Conn.
func (l *Local) Lstat(_ context.Context, path string) (fs.FileInfo, error) {
	l.trips.Add(1)
	return os.Lstat(path)
}

// ReadDir implements Conn.
func (l *Local) ReadDir(_ context.Context, path string) ([]fs.FileInfo, error) {
	l.trips.Add(1)
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // removed while listing
		}
		out = append(out, fi)
	}
	return out, nil
}

// Readlink implements Conn.
func (l *Local) Readlink(_ context.Context, path string) (string, error) {
	l.trips.Add(1)
	return os.Readlink(path)
}

// Dial implements Conn.
func (l *Local) Dial(ctx context.Context, network, addr string) (io.ReadWriteCloser, error) {
	l.trips.Add(1)
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

// defaultPath is PATH for a local command when sparkform has none:
// OpenSSH's default for a session.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// sessionEnv is the environment of a command on the local node: what an
// SSH session on it would have (sshd sets PATH, HOME, USER, LOGNAME and
// SHELL, and passes LANG and LC_* by default), taken from environ, plus
// TZ and TMPDIR, which say how the machine is set up rather than carry
// anything of the user's. Nothing else of the CLI's environment reaches
// a command: the command sets what it needs with its env argument.
func sessionEnv(environ []string) []string {
	keep := map[string]bool{"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
		"LANG": true, "LANGUAGE": true, "TZ": true, "TMPDIR": true}
	var out []string
	have := map[string]bool{}
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !(keep[k] || strings.HasPrefix(k, "LC_")) || have[k] {
			continue
		}
		have[k] = true
		out = append(out, kv)
	}
	if !have["PATH"] {
		out = append(out, "PATH="+defaultPath)
	}
	if !have["HOME"] || !have["USER"] || !have["LOGNAME"] {
		if u, err := user.Current(); err == nil {
			for k, v := range map[string]string{"HOME": u.HomeDir, "USER": u.Username, "LOGNAME": u.Username} {
				if !have[k] && v != "" {
					out = append(out, k+"="+v)
				}
			}
		}
	}
	return out
}
