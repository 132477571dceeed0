package testbed

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sparkform/sparkform/providers/sdk"
)

// Paths of the real parts a bed uses.
const (
	SSHDPath       = "/usr/sbin/sshd"
	SFTPServerPath = "/usr/lib/openssh/sftp-server"
)

// ErrUnavailable means this machine cannot run a bed (no sshd, not root).
var ErrUnavailable = errors.New("testbed: real sshd test bed unavailable")

// readyTimeout bounds the wait for one sshd to accept a connection.
const readyTimeout = 15 * time.Second

// Node is one running sshd.
type Node struct {
	// Name is "node0", "node1", ...
	Name string
	Host string
	Port int
	// User has passwordless sudo; NoSudoUser logs in with the same key but
	// has no sudo rights; DockerUser has sudo and opens the Docker socket
	// without it (see the package doc).
	User       string
	NoSudoUser string
	DockerUser string
	// IdentityFile and KnownHosts are the bed's client key and known_hosts.
	IdentityFile string
	KnownHosts   string
	// Root is a fresh directory owned by User for this node's files: all
	// nodes share this machine's filesystem, so tests keep them apart here.
	Root string
	// HostKey is the node's public host key.
	HostKey ssh.PublicKey

	netns    string // the network namespace sshd runs in; "" for this one
	authKeys string
	dir      string
	log      string
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd has been waited for
	waitErr  error
}

// SDK returns the sdk.Node that reaches n as User over SSH.
func (n *Node) SDK() sdk.Node {
	return sdk.Node{
		Name:         n.Name,
		Transport:    "ssh",
		Host:         n.Host,
		Port:         n.Port,
		User:         n.User,
		IdentityFile: n.IdentityFile,
		KnownHosts:   n.KnownHosts,
		Timeout:      15 * time.Second,
	}
}

// Addr is "host:port".
func (n *Node) Addr() string { return net.JoinHostPort(n.Host, strconv.Itoa(n.Port)) }

// Log returns what sshd has written so far (it runs with -e).
func (n *Node) Log() string {
	b, _ := os.ReadFile(n.log)
	return string(b)
}

// Bed is a set of running sshd nodes sharing one client key and one
// known_hosts file.
type Bed struct {
	// Dir holds the configs, host keys, client key, known_hosts and logs.
	Dir   string
	Nodes []*Node
	// IdentityFile is the private client key; KnownHosts lists every node.
	IdentityFile string
	KnownHosts   string
	// User, NoSudoUser and DockerUser are the login users (see the
	// package doc).
	User       string
	NoSudoUser string
	DockerUser string
	// HelperDir is this bed's node helper folder (providers/node's
	// SPARKFORM_NODE_HELPER_DIR, in Env): the nodes share this machine's
	// filesystem, so a bed keeps the helper installs of its runs apart
	// from other beds' and from the machine's /var/lib/sparkform/bin.
	// It holds a folder per login user, owned by it; the install makes
	// root's (HelperDir/root).
	HelperDir string
	// Jumps are the jump hosts of a bed started by StartBehindJumps, the
	// one reachable from here first; Nodes are reachable only through all
	// of them, in order.
	Jumps []*Node

	netns []string // namespaces to delete on Stop

	public  string // world-readable dir: authorized_keys and node roots
	ownsDir bool
	stop    sync.Once
	stopErr error
}

// Start starts n sshd nodes with their files under dir (created if
// missing; a temporary directory when dir is ""). On error nothing is left
// running.
func Start(dir string, n int) (*Bed, error) {
	if n < 1 {
		return nil, fmt.Errorf("testbed: need at least one node, got %d", n)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	b := &Bed{User: User, NoSudoUser: NoSudoUser, DockerUser: DockerUser}
	if dir == "" {
		d, err := os.MkdirTemp("", "sparkform-testbed-")
		if err != nil {
			return nil, err
		}
		dir, b.ownsDir = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	b.Dir = dir
	specs := make([]nodeSpec, n)
	for i := range specs {
		specs[i] = nodeSpec{name: "node" + strconv.Itoa(i), host: "127.0.0." + strconv.Itoa(10+i%240)}
	}
	if err := b.start(specs); err != nil {
		b.Stop()
		return nil, err
	}
	return b, nil
}

// nodeSpec is one sshd to start: targets get a Root folder, jump hosts
// (jump) do not and go to Bed.Jumps.
type nodeSpec struct {
	name, host, netns string
	jump              bool
}

// Available reports why a bed cannot start here, or nil.
func Available() error {
	if _, err := os.Stat(SSHDPath); err != nil {
		return fmt.Errorf("%w: %s not found (apt-get install openssh-server)", ErrUnavailable, SSHDPath)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: must run as root to create the test users and start sshd", ErrUnavailable)
	}
	return nil
}

func (b *Bed) start(specs []nodeSpec) error {
	if err := ensureUsers(); err != nil {
		return err
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privsep dir
		return fmt.Errorf("testbed: %w", err)
	}
	pub, err := os.MkdirTemp("", "sparkform-bed-")
	if err != nil {
		return err
	}
	b.public = pub
	// sshd reads AuthorizedKeysFile as the logging-in user, so the path
	// must be traversable and readable by both users.
	if err := os.Chmod(pub, 0o755); err != nil {
		return err
	}

	b.HelperDir = filepath.Join(pub, "helper")
	if err := os.Mkdir(b.HelperDir, 0o755); err != nil {
		return err
	}
	for _, u := range []string{User, NoSudoUser, DockerUser} {
		uid, gid, err := lookupIDs(u)
		if err != nil {
			return err
		}
		d := filepath.Join(b.HelperDir, u)
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		if err := os.Chown(d, uid, gid); err != nil {
			return err
		}
	}

	clientPriv, clientPub, err := newKey("sparkform-testbed client")
	if err != nil {
		return err
	}
	b.IdentityFile = filepath.Join(b.Dir, "id_ed25519")
	if err := os.WriteFile(b.IdentityFile, clientPriv, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(b.IdentityFile+".pub", ssh.MarshalAuthorizedKey(clientPub), 0o644); err != nil {
		return err
	}
	authKeys := filepath.Join(pub, "authorized_keys")
	if err := os.WriteFile(authKeys, ssh.MarshalAuthorizedKey(clientPub), 0o644); err != nil {
		return err
	}
	b.KnownHosts = filepath.Join(b.Dir, "known_hosts")

	uid, gid, err := lookupIDs(User)
	if err != nil {
		return err
	}
	// Every node is set up in order (so Nodes and Jumps keep the specs'
	// order and Stop sees every node whatever fails), then their sshds
	// start startWidth at a time: 32 nodes one after another took ~32
	// handshake waits.
	nodes := make([]*Node, len(specs))
	for i, sp := range specs {
		node := &Node{
			Name:         sp.name,
			Host:         sp.host,
			User:         User,
			NoSudoUser:   NoSudoUser,
			DockerUser:   DockerUser,
			IdentityFile: b.IdentityFile,
			KnownHosts:   b.KnownHosts,
			netns:        sp.netns,
			dir:          filepath.Join(b.Dir, sp.name),
		}
		nodes[i] = node
		if sp.jump {
			b.Jumps = append(b.Jumps, node)
		} else {
			b.Nodes = append(b.Nodes, node)
		}
		if err := os.MkdirAll(node.dir, 0o700); err != nil {
			return err
		}
		if !sp.jump {
			node.Root = filepath.Join(pub, sp.name)
			if err := os.Mkdir(node.Root, 0o755); err != nil {
				return err
			}
			if err := os.Chown(node.Root, uid, gid); err != nil {
				return err
			}
		}
		hostPriv, hostPub, err := newKey("sparkform-testbed " + node.Name)
		if err != nil {
			return err
		}
		node.HostKey = hostPub
		if err := os.WriteFile(node.hostKeyFile(), hostPriv, 0o600); err != nil {
			return err
		}
	}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	slots := make(chan struct{}, startWidth)
	for i, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			errs[i] = node.startSSHD(node.hostKeyFile(), authKeys)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err // the caller's Stop stops those that started
	}
	var known strings.Builder
	for _, node := range nodes {
		known.WriteString(KnownHostsLine(node.Host, node.Port, node.HostKey))
	}
	return os.WriteFile(b.KnownHosts, []byte(known.String()), 0o644)
}

// startWidth is how many sshds a bed starts at once.
const startWidth = 16

// KnownHostsLine is the known_hosts line for key at host:port, newline
// included.
func KnownHostsLine(host string, port int, key ssh.PublicKey) string {
	h := host
	if port != 22 {
		h = "[" + host + "]:" + strconv.Itoa(port)
	}
	return h + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))) + "\n"
}

// startSSHD picks a free port and starts sshd on it, retrying when another
// process took the port in between.
func (n *Node) startSSHD(hostKey, authKeys string) error {
	n.authKeys = authKeys
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort(n.Host)
		if n.netns != "" {
			// A fresh namespace has nothing else listening; the test
			// process cannot bind its addresses to ask.
			port, err = 20000+int(randUint32()%40000), nil
		}
		if err != nil {
			return fmt.Errorf("testbed: %s: no free port on %s: %w", n.Name, n.Host, err)
		}
		n.Port = port
		if lastErr = n.tryStart(hostKey, authKeys); lastErr == nil {
			return nil
		}
		if !strings.Contains(n.Log(), "Address already in use") {
			return lastErr
		}
	}
	return lastErr
}

func (n *Node) tryStart(hostKey, authKeys string) error {
	config := filepath.Join(n.dir, "sshd_config")
	conf := strings.Join([]string{
		"Port " + strconv.Itoa(n.Port),
		"ListenAddress " + n.Host,
		"HostKey " + hostKey,
		"PidFile none",
		// The bed's key, then the user's own file (sshd's default), where
		// a provider installs a one-time key as it would on a real node.
		"AuthorizedKeysFile " + authKeys + " .ssh/authorized_keys",
		"PubkeyAuthentication yes",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"HostbasedAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"PermitRootLogin no",
		"AllowUsers " + User + " " + NoSudoUser + " " + DockerUser,
		"Subsystem sftp " + SFTPServerPath,
		"AllowTcpForwarding yes",
		"AllowStreamLocalForwarding yes",
		// Tests run commands in parallel over one connection.
		"MaxSessions 64",
		"MaxStartups 64:30:128",
		"LogLevel VERBOSE",
		"",
	}, "\n")
	if err := os.WriteFile(config, []byte(conf), 0o600); err != nil {
		return err
	}
	n.log = filepath.Join(n.dir, "sshd.log")
	logf, err := os.Create(n.log)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", config)
	if n.netns != "" {
		cmd = exec.Command("ip", "netns", "exec", n.netns, SSHDPath, "-D", "-e", "-f", config)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig: a test binary killed by its timeout takes its sshds along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testbed: %s: start sshd: %w", n.Name, err)
	}
	done := make(chan struct{})
	go func() { n.waitErr = cmd.Wait(); close(done) }()
	n.cmd, n.done = cmd, done

	deadline := time.Now().Add(readyTimeout)
	for {
		if n.netns != "" {
			// Not reachable from here (that is the point): sshd says
			// when it listens.
			if strings.Contains(n.Log(), "Server listening on") {
				return nil
			}
		} else if err := probe(n.Addr()); err == nil {
			return nil
		}
		select {
		case <-done:
			n.cmd = nil
			return fmt.Errorf("testbed: %s: sshd exited before accepting connections (%v); its log:\n%s", n.Name, n.waitErr, n.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			n.cmd = nil
			return fmt.Errorf("testbed: %s: sshd did not accept a connection on %s within %s; its log:\n%s", n.Name, n.Addr(), readyTimeout, n.Log())
		}
	}
}

// probe succeeds once something at addr speaks SSH.
func probe(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "SSH-") {
		return fmt.Errorf("not an SSH banner: %q", line)
	}
	return nil
}

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// newKey returns an ed25519 key as an OpenSSH private key file and its
// public key.
func newKey(comment string) ([]byte, ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	blk, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, nil, err
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(blk), sp, nil
}

// Stop stops every sshd (and the connections it forked) and waits for
// them. It is safe to call more than once.
func (b *Bed) Stop() error {
	b.stop.Do(func() {
		var errs []error
		for _, n := range append(append([]*Node{}, b.Nodes...), b.Jumps...) {
			if err := n.stopSSHD(); err != nil {
				errs = append(errs, err)
			}
		}
		for _, ns := range b.netns {
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("testbed: ip netns del %s: %v: %s", ns, err, out))
			}
		}
		if b.public != "" {
			if err := os.RemoveAll(b.public); err != nil {
				errs = append(errs, err)
			}
		}
		if b.ownsDir {
			if err := os.RemoveAll(b.Dir); err != nil {
				errs = append(errs, err)
			}
		}
		b.stopErr = errors.Join(errs...)
	})
	return b.stopErr
}

func (n *Node) stopSSHD() error {
	if n.cmd == nil || n.cmd.Process == nil {
		return nil
	}
	pid := n.cmd.Process.Pid
	// Connection children call setsid, so they are not in sshd's process
	// group: signal them by parent pid first, then the listener's group.
	for _, child := range ChildrenOf(pid) {
		_ = syscall.Kill(child, syscall.SIGTERM)
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-n.done
	}
	n.cmd = nil
	return nil
}

// DropConnections kills (SIGKILL) the sshd processes serving n's open
// connections, as a crashed sshd or a cut link would end them; the
// listener stays and takes new connections. It returns how many it killed.
//
// Every sshd process below the listener goes at once (the per-connection
// monitor and its unprivileged child that talks to the network): killing
// only the monitor leaves that child a moment in which the "dropped" link
// still answers. The commands they run are not killed: as after a real
// cut, they lose their session and see it go (hang-up, broken pipes).
func (n *Node) DropConnections() int {
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	kids := ChildrenOf(n.cmd.Process.Pid)
	var sshds []int
	for next := kids; len(next) > 0; {
		var below []int
		for _, pid := range next {
			if comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil && strings.TrimSpace(string(comm)) == "sshd" {
				sshds = append(sshds, pid)
				below = append(below, ChildrenOf(pid)...)
			}
		}
		next = below
	}
	// Stop them all first, so none reacts to another's death, then kill.
	for _, pid := range sshds {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	for _, pid := range sshds {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(kids)
}

// ChildrenOf lists the pids whose parent is pid (from /proc).
func ChildrenOf(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the ")" that ends the command name: state ppid ...
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// Env describes the bed as environment variables, for script tests and
// shell use:
//
//	SF_NODES=N  SF_NODE_USER  SF_NODE_NOSUDO_USER  SF_NODE_DOCKER_USER
//	SF_IDENTITY_FILE
//	SF_KNOWN_HOSTS  SF_BED_DIR  and per node i: SF_NODEi_NAME,
//	SF_NODEi_HOST, SF_NODEi_PORT, SF_NODEi_ROOT; behind jump hosts also
//	SF_JUMPS=K and per jump host i: SF_JUMPi_HOST, SF_JUMPi_PORT
func (b *Bed) Env() map[string]string {
	env := map[string]string{
		"SF_NODES":            strconv.Itoa(len(b.Nodes)),
		"SF_NODE_USER":        b.User,
		"SF_NODE_NOSUDO_USER": b.NoSudoUser,
		"SF_NODE_DOCKER_USER": b.DockerUser,
		"SF_IDENTITY_FILE":    b.IdentityFile,
		"SF_KNOWN_HOSTS":      b.KnownHosts,
		"SF_BED_DIR":          b.Dir,
		// providers/node.HelperDirEnv
		"SPARKFORM_NODE_HELPER_DIR": b.HelperDir,
	}
	for i, n := range b.Nodes {
		p := "SF_NODE" + strconv.Itoa(i) + "_"
		env[p+"NAME"] = n.Name
		env[p+"HOST"] = n.Host
		env[p+"PORT"] = strconv.Itoa(n.Port)
		env[p+"ROOT"] = n.Root
	}
	if len(b.Jumps) > 0 {
		env["SF_JUMPS"] = strconv.Itoa(len(b.Jumps))
	}
	for i, n := range b.Jumps {
		p := "SF_JUMP" + strconv.Itoa(i) + "_"
		env[p+"HOST"] = n.Host
		env[p+"PORT"] = strconv.Itoa(n.Port)
	}
	return env
}

func (n *Node) hostKeyFile() string { return filepath.Join(n.dir, "ssh_host_ed25519_key") }
