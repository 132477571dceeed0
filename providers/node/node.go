package node

import (
	"context"
	"io"
	"io/fs"
	"sort"
	"strconv"
	"time"
)

// Conn is a connection to one node.
type Conn interface {
	// Run runs argv on the node and waits for it. stdin may be nil.
	// A non-zero exit is an *ExitError carrying the exit code and stderr.
	Run(ctx context.Context, cmd Cmd) (Result, error)

	// ReadFile, WriteFile (atomic: write a temp sibling, then rename),
	// Rename, Remove, RemoveAll, MkdirAll, Stat, Lstat, ReadDir and
	// Readlink act on the node's filesystem as the connecting user.
	// Privileged file work goes through Run with Become.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	Rename(ctx context.Context, from, to string) error
	Remove(ctx context.Context, path string) error
	RemoveAll(ctx context.Context, path string) error
	MkdirAll(ctx context.Context, path string, mode fs.FileMode) error
	Stat(ctx context.Context, path string) (fs.FileInfo, error)
	Lstat(ctx context.Context, path string) (fs.FileInfo, error)
	ReadDir(ctx context.Context, path string) ([]fs.FileInfo, error)
	Readlink(ctx context.Context, path string) (string, error)

	// Dial opens a stream to a unix socket or TCP address as seen from the
	// node ("unix", "/var/run/docker.sock"); used for the Docker API.
	Dial(ctx context.Context, network, addr string) (io.ReadWriteCloser, error)

	// RoundTrips counts the operations that waited on the node: each Run,
	// file operation and Dial is one. The engine uses it to show that
	// refresh costs O(nodes), not O(resources).
	RoundTrips() int64

	// Name is the node's name for messages.
	Name() string
	Close() error
}

// Cmd is one command to run on a node.
type Cmd struct {
	Argv []string
	// Become runs the command through `sudo -n` (when the node allows it).
	Become bool
	Stdin  io.Reader
	// Env is extra environment, passed as `env K=V ... argv` (quoted).
	Env map[string]string
	// Dir is the working directory (quoted `cd` before the command).
	Dir string
	// Stdout, when set, receives stdout as it streams instead of Result.
	Stdout io.Writer
	// Timeout bounds the command; zero means the context's deadline.
	Timeout time.Duration
}

// Result is what a finished command printed.
type Result struct {
	Stdout []byte
	Stderr []byte
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Argv     []string
	ExitCode int
	Stderr   string
}

func (e *ExitError) Error() string {
	msg := e.Stderr
	if len(msg) > 2000 {
		msg = msg[:2000] + "..."
	}
	return "command " + QuoteArgv(e.Argv) + " exited with status " + strconv.Itoa(e.ExitCode) + ": " + msg
}

func sortInfos(fis []fs.FileInfo) {
	sort.Slice(fis, func(i, j int) bool { return fis[i].Name() < fis[j].Name() })
}
