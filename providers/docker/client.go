package docker

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// socketPath is where the Docker Engine listens on a node.
const socketPath = "/var/run/docker.sock"

// streamer is what this provider needs from a node transport when the
// Docker socket is only reachable through sudo: a command whose stdin and
// stdout are one bidirectional stream, alive until Close. The SSH Conn
// implements it with a session; Local is handled here.
type streamer interface {
	Stream(ctx context.Context, cmd node.Cmd) (io.ReadWriteCloser, error)
}

// dialStdioArgv speaks the Engine API over a command's stdin/stdout.
var dialStdioArgv = []string{"docker", "system", "dial-stdio"}

// dialScript is the Become command's script for the API stream: the node
// helper's `dial` of the socket ($2) when the helper is on the node ($1),
// one small process in place of the Docker CLI's start; else the CLI's
// dial-stdio, which opens the same socket (sudo resets DOCKER_HOST).
var dialScript = "h=$1\n" + node.HelperShell("h") + `[ -n "$h" ] && exec "$h" dial "unix://$2"
exec docker system dial-stdio`

// dialCmd is the Become command that carries the Engine API for n.
func dialCmd(n sdk.Node) node.Cmd {
	if h := node.HelperPath(n); h != "" {
		return node.Cmd{Argv: []string{"sh", "-c", dialScript, "sh", h, socketPath}, Become: true}
	}
	return node.Cmd{Argv: dialStdioArgv, Become: true}
}

// clients keeps one API client per node (by sdk.Node.Key) for the life of
// the provider process.
type clients struct {
	pool *node.Pool
	mu   sync.Mutex
	m    map[string]*dockerClient
}

func newClients(pool *node.Pool) *clients { return &clients{pool: pool, m: map[string]*dockerClient{}} }

// dockerClient is the Engine API on one node plus the node connection it
// travels on (used for wait probes and the cgroup script).
type dockerClient struct {
	api  *client.Client
	node sdk.Node
	pool *node.Pool
	// via is "socket" or "dial-stdio", for messages.
	via string
}

// readParallel is how many API calls one Read makes at a time. Over
// dial-stdio every concurrent call is one more connection, and so one
// more `sudo -n docker system dial-stdio` on the node (sudo's PAM session
// and the docker CLI's start-up, tens of milliseconds of the node's CPU
// each): a Read's inspects go one after another on the one kept-alive
// stream, a round trip each, instead.
func (d *dockerClient) readParallel() int {
	if d.via == "dial-stdio" {
		return 1
	}
	return readParallel
}

// conn returns the node connection (the pool redials if it was lost).
func (d *dockerClient) conn(ctx context.Context) (node.Conn, error) { return d.pool.Get(ctx, d.node) }

// get returns the client for n, choosing the way in on first use: the
// socket when the user can open it; else, with become, dial-stdio.
func (cs *clients) get(ctx context.Context, n sdk.Node) (*dockerClient, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if d, ok := cs.m[n.Key()]; ok {
		return d, nil
	}
	conn, err := cs.pool.Get(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	via := "socket"
	if c, err := conn.Dial(ctx, "unix", socketPath); err == nil {
		c.Close()
	} else if n.Become {
		via = "dial-stdio"
	} else {
		// Checked here because the API client would turn this into
		// "is the docker daemon running?".
		return nil, fmt.Errorf("node %s: cannot open %s as %q: %w; add the user to the docker group, or set become = true "+
			"(sparkform then runs `sudo -n docker system dial-stdio`)", n.Name, socketPath, n.User, err)
	}
	d := &dockerClient{node: n, pool: cs.pool, via: via}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		conn, err := cs.pool.Get(ctx, n)
		if err != nil {
			return nil, err
		}
		if via == "dial-stdio" {
			return asNetConn(dialStdio(conn, dialCmd(n))), nil
		}
		rwc, err := conn.Dial(ctx, "unix", socketPath)
		if err != nil {
			return nil, fmt.Errorf("node %s: open %s: %w", n.Name, socketPath, err)
		}
		return asNetConn(rwc), nil
	}
	// Few idle connections: over dial-stdio each one is a live command
	// (an SSH session) on the node.
	hc := &http.Client{CheckRedirect: client.CheckRedirect, Transport: &http.Transport{
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
	}}
	api, err := client.New(client.WithHTTPClient(hc), client.WithHost("unix://"+socketPath), client.WithDialContext(dial), client.WithScheme("http"))
	if err != nil {
		return nil, fmt.Errorf("node %s: docker client: %w", n.Name, err)
	}
	d.api = api
	cs.m[n.Key()] = d
	return d, nil
}

// close releases every client and node connection.
func (cs *clients) close() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for k, d := range cs.m {
		d.api.Close()
		delete(cs.m, k)
	}
	cs.pool.Close()
}

// dialStdio starts cmd (dialCmd: the helper's dial, else `sudo -n docker
// system dial-stdio`) on the node and returns its stdin/stdout as one
// stream. The stream lives until Close, not
// until the dialling request's context ends (http.Transport reuses
// connections), so it is started without that ctx. A transport with Stream
// is used as is; otherwise Run, whose Stdin and Stdout stream, carries it
// from a goroutine, and Close cancels it.
func dialStdio(conn node.Conn, cmd node.Cmd) io.ReadWriteCloser {
	if s, ok := conn.(streamer); ok {
		if rwc, err := s.Stream(context.Background(), cmd); err == nil {
			return rwc
		}
	}
	via := node.QuoteArgv(dialStdioArgv)
	if len(cmd.Argv) > 0 && cmd.Argv[0] == "sh" {
		via = "the node helper's dial, else " + via
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	cmd.Stdin, cmd.Stdout = inR, outW
	go func() {
		_, err := conn.Run(ctx, cmd)
		if err == nil || ctx.Err() != nil {
			err = io.EOF
		} else {
			err = fmt.Errorf("the Docker API stream (sudo -n: %s): %w", via, err)
		}
		outW.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	return &runStream{in: inW, out: outR, cancel: cancel}
}

// runStream is a command's stdin (Write) and stdout (Read).
type runStream struct {
	in     *io.PipeWriter
	out    *io.PipeReader
	cancel context.CancelFunc
}

func (r *runStream) Read(b []byte) (int, error)  { return r.out.Read(b) }
func (r *runStream) Write(b []byte) (int, error) { return r.in.Write(b) }
func (r *runStream) Close() error {
	r.in.Close()
	r.cancel()
	r.out.Close()
	return nil
}

// asNetConn adapts a stream to net.Conn for http.Transport. Deadlines are
// not supported by plain streams; the request context bounds each call.
func asNetConn(rwc io.ReadWriteCloser) net.Conn {
	if c, ok := rwc.(net.Conn); ok {
		return c
	}
	return streamConn{rwc}
}

type streamConn struct{ io.ReadWriteCloser }

type streamAddr struct{}

func (streamAddr) Network() string { return "stream" }
func (streamAddr) String() string  { return "docker" }

func (streamConn) LocalAddr() net.Addr              { return streamAddr{} }
func (streamConn) RemoteAddr() net.Addr             { return streamAddr{} }
func (streamConn) SetDeadline(time.Time) error      { return nil }
func (streamConn) SetReadDeadline(time.Time) error  { return nil }
func (streamConn) SetWriteDeadline(time.Time) error { return nil }

var _ net.Conn = streamConn{}

// isNotFound reports whether err is the engine's "no such object".
func isNotFound(err error) bool { return err != nil && cerrdefs.IsNotFound(err) }

// isNotRunning is the Engine's answer to a signal for a container that has
// already exited (409 Conflict).
func isNotRunning(err error) bool {
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "is not running")
}
