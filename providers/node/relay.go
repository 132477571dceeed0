package node

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sparkform/sparkform/providers/sdk"
)

// relaySSHConfig is the local connection's algorithms: curve25519 for the
// key exchange, not the ML-KEM hybrid that Go's client offers first. The
// hybrid guards a recorded connection against a future quantum computer;
// this one never leaves the machine (a unix socket between two of the
// user's processes), and its ML-KEM half cost ~0.4 ms per plugin and
// node on every run (BenchmarkRelayDial: 1.90 -> 1.50 ms a dial).
var relaySSHConfig = ssh.Config{KeyExchanges: []string{ssh.KeyExchangeCurve25519}}

// A Relay lets provider plugins share the core's SSH connections: one per
// node for the whole run, instead of one per plugin per node.
//
// The core (the sparkform process) holds a Pool and a Relay on it; every
// plugin it starts gets the relay's address in its environment (Env). In
// the plugin, Open (and so every Pool.Get) then does not dial the node:
// it connects to the relay's unix socket and speaks SSH to it, asks for
// the node (a "node@sparkform" request carrying the sdk.Node), and the
// relay answers from its Pool, dialling the node the first time (host
// keys, ProxyJump, backoff and Notify lines all happen in the core).
// From then on every channel the plugin opens on that local connection (a
// command's session, the sftp subsystem, a direct-tcpip or
// direct-streamlocal stream) is opened on the node's one real connection
// with the same type and data, and bytes, EOF, stderr and requests
// (exec, subsystem, signal, exit-status) are copied both ways. The
// plugin's SSH value is the same type as a direct one, so providers see
// no difference.
//
// When the node's connection breaks, the relay closes every local
// connection bound to it: the plugin sees the same "connection lost"
// errors as on a direct connection, and its Pool's next Get comes back
// here, where the core's Pool redials.
//
// The socket is 0600 in a fresh 0700 folder (prefix RelayDirPrefix),
// removed by Close (and by an orphaned plugin, see sdk.Serve). Only this
// process's children may use it: the kernel's peer credentials must show
// this uid and a process whose parent is this one, and the SSH login must
// present the run's random secret (RelayAuthEnv). The local connection's
// host key is a fresh ed25519 key, pinned by the client.
type Relay struct {
	pool   *Pool
	dir    string
	path   string
	ln     *net.UnixListener
	secret string
	signer ssh.Signer
	cfg    *ssh.ServerConfig

	mu     sync.Mutex
	conns  map[*ssh.ServerConn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// RelayDirPrefix names the folder of a relay's socket.
const RelayDirPrefix = "sparkform-relay-"

const (
	// relayRequest is the global request that binds a local connection
	// to one node; its payload is the sdk.Node as JSON.
	relayRequest = "node@sparkform"
	// maxSocketPath is the longest unix socket path the kernel takes.
	maxSocketPath = 107
)

// relayReply answers relayRequest: Error is empty on success; Kind names
// the sentinel the error matches (see relayKinds).
type relayReply struct {
	Error string `json:",omitempty"`
	Kind  string `json:",omitempty"`
}

var relayKinds = map[string]error{
	"hostkey-unknown": ErrHostKeyUnknown,
	"hostkey-changed": ErrHostKeyChanged,
	"hostkey-revoked": ErrHostKeyRevoked,
	"become":          ErrBecome,
	"transport":       ErrTransport,
	"noauth":          ErrNoAuth,
	"closed":          ErrClosed,
}

// NewRelay starts a relay serving pool's connections on a fresh socket.
func NewRelay(pool *Pool) (*Relay, error) {
	dir, err := relayDir()
	if err != nil {
		return nil, fmt.Errorf("node relay: %w", err)
	}
	r := &Relay{pool: pool, dir: dir, path: filepath.Join(dir, "s"), conns: map[*ssh.ServerConn]struct{}{}}
	fail := func(err error) (*Relay, error) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("node relay: %w", err)
	}
	var sec [32]byte
	if _, err := rand.Read(sec[:]); err != nil {
		return fail(err)
	}
	r.secret = hex.EncodeToString(sec[:])
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fail(err)
	}
	if r.signer, err = ssh.NewSignerFromKey(priv); err != nil {
		return fail(err)
	}
	r.cfg = &ssh.ServerConfig{
		Config: relaySSHConfig,
		PasswordCallback: func(_ ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
			if subtle.ConstantTimeCompare(pw, []byte(r.secret)) == 1 {
				return nil, nil
			}
			return nil, errors.New("wrong relay secret")
		},
	}
	r.cfg.AddHostKey(r.signer)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: r.path, Net: "unix"})
	if err != nil {
		return fail(err)
	}
	if err := os.Chmod(r.path, 0o600); err != nil {
		ln.Close()
		return fail(err)
	}
	r.ln = ln
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

// relayDir makes a 0700 folder for the socket: in TMPDIR, or /tmp when
// TMPDIR is too deep for a socket path.
func relayDir() (string, error) {
	for _, base := range []string{os.TempDir(), "/tmp"} {
		if len(base)+len("/"+RelayDirPrefix+"1234567-1234567890/s") > maxSocketPath {
			continue
		}
		// Named with this process's pid: the relay of a sparkform killed
		// before any plugin could remove it is swept by the next one.
		sdk.SweepStaleDirs(base, RelayDirPrefix)
		return os.MkdirTemp(base, fmt.Sprintf("%s%d-", RelayDirPrefix, os.Getpid())) // 0700
	}
	return "", errors.New("no temporary folder short enough for a unix socket path")
}

// Env is what a plugin process needs to use the relay: the socket
// (sdk.RelayEnv) and the secret and host key (RelayAuthEnv).
func (r *Relay) Env() []string {
	return []string{
		sdk.RelayEnv + "=" + r.path,
		RelayAuthEnv + "=" + r.secret + ":" + base64.StdEncoding.EncodeToString(r.signer.PublicKey().Marshal()),
	}
}

// RelayAuthEnv carries the relay's secret and host key to plugins.
const RelayAuthEnv = "SPARKFORM_NODE_RELAY_AUTH"

// Path is the relay's socket.
func (r *Relay) Path() string { return r.path }

// Close stops the relay: the socket and its folder go, and every local
// connection is closed (the Pool's connections are not: the Pool's owner
// closes them).
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	err := r.ln.Close()
	r.wg.Wait()
	os.RemoveAll(r.dir)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (r *Relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.AcceptUnix()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.handle(c)
		}()
	}
}

// handle serves one local connection: its first request names the node,
// then its channels are forwarded to that node's connection.
func (r *Relay) handle(c *net.UnixConn) {
	pid, err := peerAllowed(c)
	if err != nil {
		r.pool.opts.debug("node relay: refused a local connection", "error", err)
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	sc, chans, reqs, err := ssh.NewServerConn(c, r.cfg)
	if err != nil {
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		sc.Close()
		return
	}
	r.conns[sc] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.conns, sc)
		r.mu.Unlock()
		sc.Close()
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = sc.Wait(); cancel() }()

	bound := make(chan *SSH, 1) // the node's connection, once bound
	go func() {
		var up *SSH
		for req := range reqs {
			if req.Type != relayRequest || up != nil {
				req.Reply(req.Type == "keepalive@openssh.com", nil)
				continue
			}
			var n sdk.Node
			var rep relayReply
			if err := json.Unmarshal(req.Payload, &n); err != nil {
				rep.Error = "node relay: bad request: " + err.Error()
			} else if up, err = r.upstream(ctx, n); err != nil {
				rep.Error, rep.Kind = err.Error(), relayKind(err)
			} else {
				r.pool.opts.debug("node relay: a plugin uses the shared connection", "node", n.Name, "pid", pid)
			}
			if up != nil {
				bound <- up // before the reply: the plugin opens channels after it
			}
			b, _ := json.Marshal(rep)
			req.Reply(true, b)
			if up != nil {
				// A broken node connection ends its local ones: the
				// plugin's Pool comes back for a fresh one.
				go func() {
					select {
					case <-up.done:
						sc.Close()
					case <-ctx.Done():
					}
				}()
			}
		}
	}()

	var up *SSH
	var wg sync.WaitGroup
	defer wg.Wait()
	for nc := range chans {
		if up == nil {
			select {
			case up = <-bound:
			default:
			}
		}
		if up == nil {
			nc.Reject(ssh.Prohibited, "node relay: no node selected")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if nc.ChannelType() == heldChannel {
				forwardHeld(ctx, up, nc)
				return
			}
			forward(ctx, up, nc)
		}()
	}
}

// upstream is the Pool's connection to n (an SSH one: the relay serves
// only SSH nodes).
func (r *Relay) upstream(ctx context.Context, n sdk.Node) (*SSH, error) {
	if n.Transport != "" && n.Transport != "ssh" {
		return nil, fmt.Errorf("node %s: node relay: %w %q", n.Name, ErrTransport, n.Transport)
	}
	c, err := r.pool.Get(ctx, n)
	if err != nil {
		return nil, err
	}
	s, ok := c.(*SSH)
	if !ok {
		return nil, fmt.Errorf("node %s: node relay: %w: not an SSH connection", n.Name, ErrTransport)
	}
	return s, nil
}

func relayKind(err error) string {
	for k, s := range relayKinds {
		if errors.Is(err, s) {
			return k
		}
	}
	return ""
}

// forward opens nc's channel on the node's connection and copies between
// the two until both are done. Sessions (commands, sftp) take one of the
// connection's session slots while open, so all plugins together stay
// below sshd's MaxSessions.
func forward(ctx context.Context, up *SSH, nc ssh.NewChannel) {
	if nc.ChannelType() == "session" {
		if !takeSlot(ctx, up, nc) {
			return
		}
		defer func() { <-up.slots }()
	}
	uch, ureqs, err := up.client.OpenChannel(nc.ChannelType(), nc.ExtraData())
	if err != nil {
		var oe *ssh.OpenChannelError
		if errors.As(err, &oe) {
			nc.Reject(oe.Reason, oe.Message)
		} else {
			// Not a refusal by the node: its connection is gone (EOF) and
			// the relay has not seen it close yet. Say so, as a direct
			// connection's error would.
			nc.Reject(ssh.ConnectionFailed, "node "+up.node.Name+": connection lost: "+err.Error())
		}
		return
	}
	lch, lreqs, err := nc.Accept()
	if err != nil {
		uch.Close()
		return
	}
	// Plugin -> node: data, then EOF; requests until the plugin closes.
	go func() {
		_, _ = io.Copy(uch, lch)
		_ = uch.CloseWrite()
	}()
	// A request and its reply are forwarded under reqMu, and the node's
	// requests and the final close wait for it: the node may answer
	// "exec", run the command and close before the reply reaches the
	// plugin, which must get the reply first.
	var reqMu sync.Mutex
	go func() {
		for req := range lreqs {
			reqMu.Lock()
			ok, err := uch.SendRequest(req.Type, req.WantReply, req.Payload)
			if err != nil {
				reqMu.Unlock()
				// The node's connection is gone: the plugin sees its
				// channel end (EOF), as on a direct connection, not a
				// refused request.
				lch.Close()
				go ssh.DiscardRequests(lreqs)
				break
			}
			if req.WantReply {
				_ = req.Reply(ok, nil)
			}
			reqMu.Unlock()
		}
		uch.Close()
	}()
	// Node -> plugin: stdout and stderr to EOF, requests (exit-status)
	// until the node closes; only then EOF and close, so the plugin has
	// every byte and the exit status before its channel ends.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(lch, uch)
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(lch.Stderr(), uch.Stderr())
	}()
	for req := range ureqs {
		reqMu.Lock()
		ok, err := lch.SendRequest(req.Type, req.WantReply, req.Payload)
		reqMu.Unlock()
		if req.WantReply {
			_ = req.Reply(ok && err == nil, nil)
		}
	}
	wg.Wait()
	reqMu.Lock()
	_ = lch.CloseWrite()
	lch.Close()
	reqMu.Unlock()
}

// takeSlot holds one of up's session slots for nc (give it back with
// <-up.slots), or rejects nc when the connection or the relay ends first.
func takeSlot(ctx context.Context, up *SSH, nc ssh.NewChannel) bool {
	select {
	case up.slots <- struct{}{}:
		return true
	case <-up.done:
		nc.Reject(ssh.ConnectionFailed, "node "+up.node.Name+": connection lost")
	case <-ctx.Done():
		nc.Reject(ssh.ConnectionFailed, "node relay: closing")
	}
	return false
}

// relayAddr is a relay as a plugin finds it in its environment.
type relayAddr struct {
	path    string
	secret  string
	hostKey ssh.PublicKey
}

var (
	envRelayOnce sync.Once
	envRelay     *relayAddr
	envRelayErr  error
)

// relayFromEnv is the relay named by the environment (a plugin started
// by sparkform), or nil.
func relayFromEnv() (*relayAddr, error) {
	envRelayOnce.Do(func() {
		path := os.Getenv(sdk.RelayEnv)
		if path == "" {
			return
		}
		secret, key, ok := strings.Cut(os.Getenv(RelayAuthEnv), ":")
		b, err := base64.StdEncoding.DecodeString(key)
		if !ok || err != nil {
			envRelayErr = fmt.Errorf("node relay: %s is malformed", RelayAuthEnv)
			return
		}
		pk, err := ssh.ParsePublicKey(b)
		if err != nil {
			envRelayErr = fmt.Errorf("node relay: %s: %w", RelayAuthEnv, err)
			return
		}
		envRelay = &relayAddr{path: path, secret: secret, hostKey: pk}
	})
	return envRelay, envRelayErr
}

// Dial connects to n through the relay, in this process (the way a
// plugin does through Open): for tests and embedders.
func (r *Relay) Dial(ctx context.Context, n sdk.Node) (*SSH, error) {
	return dialRelay(ctx, &relayAddr{path: r.path, secret: r.secret, hostKey: r.signer.PublicKey()}, n, r.pool.opts)
}

// dialRelay is the plugin's side: a local SSH connection to the relay,
// bound to n.
func dialRelay(ctx context.Context, ra *relayAddr, n sdk.Node, o Options) (*SSH, error) {
	orig := n
	n, err := normalize(n, n.Name)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(orig)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", ra.path)
	if err != nil {
		return nil, fmt.Errorf("node %s: the sparkform process's connection relay is gone: %w", n.Name, err)
	}
	// The relay may dial the node (with retries) before it answers; the
	// caller's context bounds the wait.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	cfg := &ssh.ClientConfig{
		Config:          relaySSHConfig,
		User:            "sparkform",
		Auth:            []ssh.AuthMethod{ssh.Password(ra.secret)},
		HostKeyCallback: ssh.FixedHostKey(ra.hostKey),
	}
	cc, chans, reqs, err := ssh.NewClientConn(conn, "relay", cfg)
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, ctx.Err())
		}
		return nil, fmt.Errorf("node %s: connection relay: %w", n.Name, err)
	}
	client := ssh.NewClient(cc, chans, reqs)
	_, b, err := client.SendRequest(relayRequest, true, payload)
	if err != nil {
		client.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, ctx.Err())
		}
		return nil, fmt.Errorf("node %s: connection relay: %w", n.Name, err)
	}
	var rep relayReply
	if err := json.Unmarshal(b, &rep); err != nil {
		client.Close()
		return nil, fmt.Errorf("node %s: connection relay: bad reply: %w", n.Name, err)
	}
	if rep.Error != "" {
		client.Close()
		return nil, &relayError{msg: rep.Error, kind: relayKinds[rep.Kind]}
	}
	s := &SSH{
		node:    n,
		client:  client,
		slots:   make(chan struct{}, maxSessions),
		done:    make(chan struct{}),
		relayed: true,
		opts:    o,
	}
	go func() {
		_ = client.Wait()
		close(s.done)
	}()
	return s, nil
}

// relayError is a dial error the relay reported, matching the sentinel it
// matched in the core.
type relayError struct {
	msg  string
	kind error
}

func (e *relayError) Error() string { return e.msg }
func (e *relayError) Unwrap() error { return e.kind }
