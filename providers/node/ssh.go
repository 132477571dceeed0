package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/user"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sparkform/sparkform/internal/sshconfig"
	"github.com/sparkform/sparkform/providers/sdk"
)

const (
	// DefaultTimeout bounds connecting when Node.Timeout is zero.
	DefaultTimeout = 15 * time.Second
	// keepaliveInterval is how often an idle connection is probed.
	keepaliveInterval = 15 * time.Second
	// maxSessions caps concurrent Runs on one connection: OpenSSH allows
	// 10 sessions per connection by default and sftp holds one.
	maxSessions = 8
)

// SSH is a connection to one node over SSH. Commands run one session
// each; file operations share one sftp client started on first use.
type SSH struct {
	node   sdk.Node
	client *ssh.Client
	jumps  []*ssh.Client // the ProxyJump hops' connections, first hop first
	trips  atomic.Int64
	slots  chan struct{}
	done   chan struct{} // closed when the connection is gone

	mu   sync.Mutex
	sftp *sftp.Client

	opts Options // where its command lines go
	// relayed: a plugin's connection through the core's Relay, whose
	// Become commands run on the core's held shell.
	relayed bool
	heldMu  sync.Mutex
	held    *heldShell // the idle privileged shell (held.go), or nil
	// helper and helperArch: what the node check learnt of the node
	// helper (install.go).
	helper     helperState
	helperArch string
}

var _ Conn = (*SSH)(nil)

// RetryWindow is how long DialSSH keeps retrying a transient failure for a
// node whose connect timeout is timeout: two timeouts, from 5s to 30s
// (an sshd restart takes a second or two; a node that stays down should
// fail the plan soon).
func RetryWindow(timeout time.Duration) time.Duration {
	return min(max(2*timeout, 5*time.Second), 30*time.Second)
}

// DialSSH connects to n, through n.ProxyJump's hops when there are any
// (each hop's connection carried inside the previous one, as ssh -J
// does). Every host key, hops' included, is checked against known_hosts
// (n.KnownHosts, default ~/.ssh/known_hosts); login uses n.IdentityFile,
// else n.IdentityFiles plus (unless IdentitiesOnly) the ssh-agent's keys,
// else the agent and ~/.ssh/id_ed25519, ~/.ssh/id_rsa.
//
// A transient failure (refused or reset while sshd restarts, a timeout,
// a jump host that cannot reach the node yet) is retried with exponential
// backoff for RetryWindow(n.Timeout), with a Notify line for each retry.
// A refused host key or login is not retried.
func DialSSH(ctx context.Context, n sdk.Node) (*SSH, error) {
	return DialSSHWith(ctx, n, Options{})
}

// DialSSHWith is DialSSH with o's notices and debug log (for the dial and
// every command on the connection).
func DialSSHWith(ctx context.Context, n sdk.Node, o Options) (*SSH, error) {
	n, err := normalize(n, n.Name)
	if err != nil {
		return nil, err
	}
	hops := make([]sdk.Node, len(n.ProxyJump))
	for i, j := range n.ProxyJump {
		if j.KnownHosts == "" {
			j.KnownHosts = n.KnownHosts
		}
		if j.Timeout <= 0 {
			j.Timeout = n.Timeout
		}
		name := fmt.Sprintf("%s (jump host %d of %d)", n.Name, i+1, len(n.ProxyJump))
		if hops[i], err = normalize(j, name); err != nil {
			return nil, err
		}
	}

	window := RetryWindow(n.Timeout)
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 250 * time.Millisecond
	b.MaxInterval = 5 * time.Second
	start := time.Now()
	tries := 0
	s, err := backoff.Retry(ctx, func() (*SSH, error) {
		tries++
		s, err := dialChain(ctx, n, hops)
		if err != nil && !Transient(err) {
			return nil, backoff.Permanent(err)
		}
		return s, err
	}, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(window), backoff.WithNotify(func(err error, next time.Duration) {
		o.notify(fmt.Sprintf("%s; retrying in %s (attempt %d; sparkform gives up %s after the first)", err, next.Round(10*time.Millisecond), tries+1, window))
	}))
	if err != nil {
		if tries > 1 {
			return nil, fmt.Errorf("%w (gave up after %d attempts in %s)", err, tries, time.Since(start).Round(100*time.Millisecond))
		}
		return nil, err
	}
	s.opts = o
	o.debug("ssh handshake", "node", n.Name, "addr", net.JoinHostPort(n.Host, strconv.Itoa(n.Port)), "jumps", len(hops), "attempts", tries, "took", time.Since(start).Round(time.Millisecond).String())
	return s, nil
}

// normalize checks n's address and fills in the defaults.
func normalize(n sdk.Node, name string) (sdk.Node, error) {
	n.Name = name
	if n.Host == "" {
		return n, fmt.Errorf("node %s: host is empty: set host, or transport = \"local\" for this machine", n.Name)
	}
	if n.Port == 0 {
		n.Port = 22
	}
	if n.Port < 0 || n.Port > 65535 {
		return n, fmt.Errorf("node %s: port %d is out of range 1-65535", n.Name, n.Port)
	}
	if n.User == "" {
		u, err := user.Current()
		if err != nil {
			return n, fmt.Errorf("node %s: user is empty and the current user is unknown (%v): set user", n.Name, err)
		}
		n.User = u.Username
	}
	if n.Timeout <= 0 {
		n.Timeout = DefaultTimeout
	}
	return n, nil
}

// dialChain makes one attempt: TCP to the first hop (or the node), then
// an SSH handshake with each hop in turn, the next one's stream opened by
// the previous hop's sshd (direct-tcpip).
func dialChain(ctx context.Context, n sdk.Node, hops []sdk.Node) (*SSH, error) {
	all := append(append([]sdk.Node{}, hops...), n)
	var clients []*ssh.Client
	closeAll := func() {
		for i := len(clients) - 1; i >= 0; i-- {
			clients[i].Close()
		}
	}
	for i, h := range all {
		addr := net.JoinHostPort(h.Host, strconv.Itoa(h.Port))
		dctx, cancel := context.WithTimeout(ctx, h.Timeout)
		var conn net.Conn
		var err error
		if i == 0 {
			d := net.Dialer{KeepAlive: 30 * time.Second}
			conn, err = d.DialContext(dctx, "tcp", addr)
			if err != nil {
				err = fmt.Errorf("node %s: connect to %s: %w", h.Name, where(h, addr), err)
			} else {
				conn = quickACK(conn)
			}
		} else {
			conn, err = clients[i-1].DialContext(dctx, "tcp", addr)
			if err != nil {
				prev := where(all[i-1], net.JoinHostPort(all[i-1].Host, strconv.Itoa(all[i-1].Port)))
				err = fmt.Errorf("node %s: jump host %s could not connect to %s: %w", n.Name, prev, where(h, addr), err)
			}
		}
		if err != nil {
			cancel()
			closeAll()
			return nil, err
		}
		c, err := handshake(ctx, dctx, h, conn, addr)
		cancel()
		if err != nil {
			closeAll()
			return nil, err
		}
		clients = append(clients, c)
	}
	s := &SSH{
		node:   n,
		client: clients[len(clients)-1],
		jumps:  clients[:len(clients)-1],
		slots:  make(chan struct{}, maxSessions),
		done:   make(chan struct{}),
	}
	go func() {
		_ = s.client.Wait()
		for i := len(s.jumps) - 1; i >= 0; i-- {
			s.jumps[i].Close()
		}
		close(s.done)
	}()
	go s.keepalive()
	return s, nil
}

// handshake runs the SSH handshake for h over conn, bounded by dctx (the
// attempt's timeout) and ctx; conn is closed on failure.
func handshake(ctx, dctx context.Context, h sdk.Node, conn net.Conn, addr string) (*ssh.Client, error) {
	at := where(h, addr) // for messages; addr is what known_hosts knows
	hostKey, algos, err := hostKeyPolicy(h, addr)
	if err != nil {
		conn.Close()
		return nil, err
	}
	auth, cleanup, err := authMethods(h)
	if err != nil {
		conn.Close()
		return nil, err
	}
	defer cleanup()
	cfg := &ssh.ClientConfig{
		User:              h.User,
		Auth:              auth,
		HostKeyCallback:   hostKey,
		HostKeyAlgorithms: algos,
		Timeout:           h.Timeout,
	}
	// A hop's stream has no deadlines; closing it ends a stuck handshake.
	_ = conn.SetDeadline(time.Now().Add(h.Timeout))
	stop := context.AfterFunc(dctx, func() {
		_ = conn.SetDeadline(time.Unix(1, 0))
		conn.Close()
	})
	cc, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if !stop() && err == nil {
		cc.Close()
		err = dctx.Err()
	}
	if err != nil {
		conn.Close()
		var hk *HostKeyError
		if errors.As(err, &hk) {
			return nil, hk
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("node %s: ssh %s@%s: the node refused every key offered (%s): %w", h.Name, h.User, at, authDesc(h), err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("node %s: ssh %s: %w", h.Name, at, ctx.Err())
		}
		if dctx.Err() != nil {
			return nil, fmt.Errorf("node %s: ssh %s: timeout: no SSH answer within %s: %w", h.Name, at, h.Timeout, dctx.Err())
		}
		return nil, fmt.Errorf("node %s: ssh %s: %w", h.Name, at, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(cc, chans, reqs), nil
}

// Transient reports whether a dial error may go away by itself: a refused
// or reset connection (sshd restarting), a timeout, an unreachable
// network, or a jump host that could not reach the next hop. A refused
// host key or login, a bad address and a cancelled context are not.
func Transient(err error) bool {
	var hk *HostKeyError
	switch {
	case errors.As(err, &hk), errors.Is(err, ErrNoAuth), errors.Is(err, context.Canceled),
		strings.Contains(err.Error(), "unable to authenticate"):
		return false
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ETIMEDOUT),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oc *ssh.OpenChannelError
	if errors.As(err, &oc) && oc.Reason == ssh.ConnectionFailed {
		return true
	}
	// x/crypto/ssh flattens some handshake errors to text.
	msg := err.Error()
	return strings.HasSuffix(msg, ": EOF") || strings.Contains(msg, "connection reset by peer")
}

// keepalive probes the server; a probe unanswered within the node's
// timeout closes the connection, so the Pool redials on the next Get.
func (s *SSH) keepalive() {
	t := time.NewTicker(keepaliveInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		errc := make(chan error, 1)
		go func() {
			_, _, err := s.client.SendRequest("keepalive@openssh.com", true, nil)
			errc <- err
		}()
		select {
		case err := <-errc:
			if err != nil {
				s.client.Close()
				return
			}
		case <-time.After(s.node.Timeout):
			s.client.Close()
			return
		case <-s.done:
			return
		}
	}
}

// knownHostsFile is n.KnownHosts or ~/.ssh/known_hosts.
func knownHostsFile(n sdk.Node) string {
	if n.KnownHosts != "" {
		return sshconfig.ExpandHome(n.KnownHosts)
	}
	return sshconfig.ExpandHome("~/.ssh/known_hosts")
}

// hostKeyPolicy returns the known_hosts check for n and the host key
// algorithms to ask for: only those of keys known_hosts has for addr, so
// a server that also has another key type is not mistaken for a changed
// key.
func hostKeyPolicy(n sdk.Node, addr string) (ssh.HostKeyCallback, []string, error) {
	file := knownHostsFile(n)
	var db ssh.HostKeyCallback
	missing := false
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		missing = true
	} else {
		var err error
		if db, err = knownhosts.New(file); err != nil {
			return nil, nil, fmt.Errorf("node %s: known_hosts %s: %w", n.Name, file, err)
		}
	}
	var algos []string
	if db != nil {
		var ke *knownhosts.KeyError
		probe := &net.TCPAddr{IP: net.IPv4zero, Port: n.Port}
		if err := db(addr, probe, probeKey); errors.As(err, &ke) {
			seen := map[string]bool{}
			for _, w := range ke.Want {
				for _, a := range algorithmsFor(w.Key.Type()) {
					if !seen[a] {
						seen[a] = true
						algos = append(algos, a)
					}
				}
			}
		}
	}
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		hkErr := &HostKeyError{Node: n.Name, Host: n.Host, Port: n.Port, Key: key, KnownHosts: file, Missing: missing}
		if db == nil {
			return hkErr
		}
		err := db(hostname, remote, key)
		if err == nil {
			return nil
		}
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case errors.As(err, &ke):
			hkErr.Want = ke.Want
			return hkErr
		case errors.As(err, &re):
			hkErr.Revoked = true
			return hkErr
		}
		return err
	}
	return cb, algos, nil
}

// probeKey is a key no host has; checking it lists the known keys.
var probeKey = func() ssh.PublicKey {
	k, err := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	if err != nil {
		panic(err)
	}
	return k
}()

func algorithmsFor(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// authDesc says which keys were offered, for messages.
func authDesc(n sdk.Node) string {
	if n.IdentityFile != "" {
		return "identity_file " + sshconfig.ExpandHome(n.IdentityFile)
	}
	var parts []string
	if len(n.IdentityFiles) > 0 {
		parts = append(parts, "ssh_config IdentityFile "+strings.Join(n.IdentityFiles, ", "))
	}
	if os.Getenv("SSH_AUTH_SOCK") != "" && !n.IdentitiesOnly {
		parts = append(parts, "ssh-agent keys")
	}
	if len(n.IdentityFiles) == 0 {
		parts = append(parts, "~/.ssh/id_ed25519", "~/.ssh/id_rsa")
	}
	return strings.Join(parts, ", ")
}

// authMethods builds the public-key auth for n. cleanup closes the agent
// connection once the handshake is over.
func authMethods(n sdk.Node) ([]ssh.AuthMethod, func(), error) {
	noop := func() {}
	var agentSigners []ssh.Signer
	cleanup := noop
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		if c, err := net.Dial("unix", sock); err == nil {
			if ss, err := agent.NewClient(c).Signers(); err == nil {
				agentSigners = ss
			}
			cleanup = func() { c.Close() }
		}
	}
	fail := func(err error) ([]ssh.AuthMethod, func(), error) {
		cleanup()
		return nil, noop, err
	}
	if n.IdentityFile != "" {
		file := sshconfig.ExpandHome(n.IdentityFile)
		signer, err := loadKey(file, agentSigners)
		var pm *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &pm):
			return fail(fmt.Errorf("node %s: identity_file %s is protected by a passphrase: add it to ssh-agent (ssh-add %s) and run with SSH_AUTH_SOCK set", n.Name, file, file))
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission):
			return fail(fmt.Errorf("node %s: identity_file: %w", n.Name, err))
		case err != nil:
			return fail(fmt.Errorf("node %s: identity_file %s is not a private key: %w", n.Name, file, err))
		}
		return []ssh.AuthMethod{ssh.PublicKeys(signer)}, cleanup, nil
	}
	var signers []ssh.Signer
	files := n.IdentityFiles
	if len(files) == 0 {
		files = []string{"~/.ssh/id_ed25519", "~/.ssh/id_rsa"}
	}
	// As OpenSSH: the identity files first (missing or locked ones
	// skipped), then, unless IdentitiesOnly, every agent key.
	for _, f := range files {
		if s, err := loadKey(sshconfig.ExpandHome(f), agentSigners); err == nil {
			signers = append(signers, s)
		}
	}
	if !n.IdentitiesOnly {
		signers = append(signers, agentSigners...)
	}
	if len(signers) == 0 {
		return fail(fmt.Errorf("node %s: %w (tried %s): set identity_file, load a key into ssh-agent (SSH_AUTH_SOCK), or create ~/.ssh/id_ed25519", n.Name, ErrNoAuth, authDesc(n)))
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, cleanup, nil
}

// loadKey reads a private key; an encrypted one is usable through the
// agent signer holding it.
func loadKey(file string, agentSigners []ssh.Signer) (ssh.Signer, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(pem)
	var pm *ssh.PassphraseMissingError
	if errors.As(err, &pm) {
		for _, s := range agentSigners {
			if pm.PublicKey != nil && bytes.Equal(s.PublicKey().Marshal(), pm.PublicKey.Marshal()) {
				return s, nil
			}
		}
	}
	return signer, err
}

// Name implements Conn.
func (s *SSH) Name() string { return s.node.Name }

// RoundTrips implements Conn.
func (s *SSH) RoundTrips() int64 { return s.trips.Load() }

// Close implements Conn.
func (s *SSH) Close() error {
	s.mu.Lock()
	if s.sftp != nil {
		s.sftp.Close()
		s.sftp = nil
	}
	s.mu.Unlock()
	err := s.client.Close()
	for i := len(s.jumps) - 1; i >= 0; i-- {
		s.jumps[i].Close()
	}
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// alive reports whether the connection is still up.
func (s *SSH) alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkCmd rejects commands that cannot be run as given.
func checkCmd(node string, c Cmd) error {
	if len(c.Argv) == 0 {
		return fmt.Errorf("node %s: %w: empty argv", node, ErrBadCmd)
	}
	for k := range c.Env {
		if !envName.MatchString(k) {
			return fmt.Errorf("node %s: %w: environment name %q is not valid: use letters, digits and _, not starting with a digit", node, ErrBadCmd, k)
		}
	}
	if len(c.Env) > 0 && strings.Contains(c.Argv[0], "=") {
		return fmt.Errorf("node %s: %w: program name %q contains '=', which env would take as a variable", node, ErrBadCmd, c.Argv[0])
	}
	// exec (dash has no `exec --`), env and sudo would read a leading '-'
	// as their own option.
	if strings.HasPrefix(c.Argv[0], "-") {
		return fmt.Errorf("node %s: %w: program name %q starts with '-', which the remote shell's exec would take as an option: give a path such as ./%s", node, ErrBadCmd, c.Argv[0], c.Argv[0])
	}
	// A NUL cannot be passed in an argument: exec cuts the word there.
	for i, a := range c.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("node %s: %w: argument %d (%q) contains a NUL byte, which no command can receive", node, ErrBadCmd, i, a)
		}
	}
	for k, v := range c.Env {
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("node %s: %w: environment value of %s contains a NUL byte", node, ErrBadCmd, k)
		}
	}
	if strings.IndexByte(c.Dir, 0) >= 0 {
		return fmt.Errorf("node %s: %w: directory %q contains a NUL byte", node, ErrBadCmd, c.Dir)
	}
	return nil
}

// CommandLine is the remote shell line for c; every word in it is Quote'd:
//
//	cd -- DIR && exec [sudo -n --] [env K=V ...] ARGV...
//
// env comes after sudo because sudo resets the environment; `cd --` so a
// DIR of "-" or "-x" is a folder, not OLDPWD or an option.
func CommandLine(c Cmd, sudo bool) string {
	var b strings.Builder
	if c.Dir != "" {
		b.WriteString("cd -- " + Quote(c.Dir) + " && ")
	}
	b.WriteString("exec ")
	if sudo {
		b.WriteString("sudo -n -- ")
	}
	if len(c.Env) > 0 {
		keys := make([]string, 0, len(c.Env))
		for k := range c.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("env ")
		for _, k := range keys {
			b.WriteString(Quote(k+"="+c.Env[k]) + " ")
		}
	}
	b.WriteString(QuoteArgv(c.Argv))
	return b.String()
}

// Run implements Conn: one session per command.
func (s *SSH) Run(ctx context.Context, c Cmd) (res Result, err error) {
	if err := checkCmd(s.node.Name, c); err != nil {
		return Result{}, err
	}
	defer func(start time.Time) { s.opts.logCommand(s.node.Name, c, start, err) }(time.Now())
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	defer func() { <-s.slots }()

	if c.Become && s.node.User != "root" {
		// Through the held privileged shell (held.go): its sudo may
		// have run already, for the node check.
		s.trips.Add(1)
		var stdout, stderr bytes.Buffer
		out := io.Writer(&stdout)
		if c.Stdout != nil {
			out = c.Stdout
		}
		err := s.runBecome(ctx, c, out, &stderr)
		var be *BecomeError
		if errors.As(err, &be) || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return Result{}, err
		}
		return s.finish(c, Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, err)
	}
	s.trips.Add(1)
	sess, err := s.client.NewSession()
	if err != nil {
		return Result{}, s.connErr("start command", err)
	}
	defer sess.Close()
	var stdout, stderr bytes.Buffer
	if c.Stdout != nil {
		sess.Stdout = c.Stdout
	} else {
		sess.Stdout = &stdout
	}
	sess.Stderr = &stderr
	sess.Stdin = c.Stdin
	if err := sess.Start(CommandLine(c, false)); err != nil {
		return Result{}, s.connErr("start command", err)
	}
	waitc := make(chan error, 1)
	go func() { waitc <- sess.Wait() }()
	select {
	case err = <-waitc:
	case <-ctx.Done():
		// Signal the command (exec'd by the shell, so it gets it
		// directly), then drop the session; do not wait on a Stdin
		// reader that may never return. The output buffers may still be
		// written to, so none is returned.
		_ = sess.Signal(ssh.SIGTERM)
		sess.Close()
		return Result{}, ctx.Err()
	}
	return s.finish(c, Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, err)
}

// finish turns how c's session ended into Run's result: an *ExitError
// (a *BecomeError when sudo refused) for a non-zero exit.
func (s *SSH) finish(c Cmd, res Result, err error) (Result, error) {
	var ee *ssh.ExitError
	var he *heldExit
	var em *ssh.ExitMissingError
	code, signal := 0, ""
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &ee):
		code, signal = ee.ExitStatus(), ee.Signal()
	case errors.As(err, &he):
		code, signal = he.code, he.signal
	case errors.As(err, &em):
		return res, fmt.Errorf("node %s: %s: the command ended without an exit status (connection lost?): %s", s.node.Name, QuoteArgv(c.Argv), res.Stderr)
	default:
		return res, s.connErr(QuoteArgv(c.Argv), err)
	}
	msg := string(res.Stderr)
	if signal != "" {
		msg += "(killed by signal " + signal + ")"
	}
	xe := &ExitError{Argv: c.Argv, ExitCode: code, Stderr: msg}
	if c.Become {
		return res, becomeError(s.node.Name, s.node.User, xe)
	}
	return res, xe
}

func (s *SSH) connErr(what string, err error) error {
	if errors.Is(err, io.EOF) {
		// The connection is going: x/crypto/ssh says EOF before Wait
		// returns. Give it a moment so the error can say so.
		select {
		case <-s.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !s.alive() {
		return fmt.Errorf("node %s: %s: connection lost: %w", s.node.Name, what, err)
	}
	return fmt.Errorf("node %s: %s: %w", s.node.Name, what, err)
}

// Dial implements Conn: the stream is opened by the node's sshd
// (direct-tcpip or direct-streamlocal for "unix").
func (s *SSH) Dial(ctx context.Context, network, addr string) (io.ReadWriteCloser, error) {
	s.trips.Add(1)
	c, err := s.client.DialContext(ctx, network, addr)
	if err != nil {
		return nil, s.connErr("dial "+network+" "+addr, err)
	}
	return c, nil
}

// where names the address addr of h for messages: with the ssh_config
// alias the configuration wrote, "spark-01 (127.0.0.1:2412)", so the user
// finds the node they named; else addr alone.
func where(h sdk.Node, addr string) string {
	if h.HostAlias == "" {
		return addr
	}
	return h.HostAlias + " (" + addr + ")"
}
