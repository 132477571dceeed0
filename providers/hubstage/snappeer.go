package hubstage

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// A snapshot from another node S (source_node).
//
// Direct (the default): the destination D pulls every blob from S's sshd
// itself, over the address given (source_address: the cluster link), so
// no byte passes through this process. Nobody sets up a key between the
// nodes: Open generates a one-time ed25519 key, puts its public half in
// the authorized_keys of S's login user as
//
//	restrict,command="/bin/sh '<state>/snapserve/<id>/serve'",expiry-time="<now+2h>",from="<D's address>" ssh-ed25519 ... sparkform-snapshot-<id>
//
// (restrict: no pty, forwarding or agent; the forced serve script only
// streams blobs of this repository's blobs folder; from= when D's route
// to S names its address), after a restore record on S that says what
// it adds; the private half goes to a fresh 0700 folder on D, on stdin,
// never in argv. Close removes both. A transfer killed before its Close
// is swept by the next Open of the same snapshot on the same destination
// (the record's owner), and any expired key by any Open on S. D checks
// S's host key: the keys ssh-keyscan on D gets from source_address are
// used only when they verify against the operator's known_hosts entry for
// S (the one sparkform itself checks when it logs in to S); D's ssh then
// runs with StrictHostKeyChecking=yes against exactly those keys.
//
// Relay (transfer = "relay"): each blob is read on S over sparkform's own
// connection and streamed to D through this process; every byte is
// counted (Relayed) and the plan says so.

// peerKeyTTL is how long a one-time key lets D log in to S, at least.
// The masters log in when the transfer opens (sshd checks expiry-time
// then), so it bounds the logins, and a blob's ssh that finds its master
// gone logs in on its own: keyTTL adds the time the listed bytes take at a
// slow 25 MB/s. A transfer that outlives its key fails such logins; the
// next apply resumes with a new key.
const peerKeyTTL = 2 * time.Hour

func keyTTL(l *snapListing) time.Duration {
	var total int64
	if l != nil {
		for _, f := range l.Files {
			total += f.Size
		}
	}
	return peerKeyTTL + time.Duration(total/(25<<20))*time.Second
}

// Every blob goes over one of a few master connections D opens to S
// when the transfer opens (ControlMaster; ControlPersist muxIdle seconds
// after their last use): a blob is one session on an open connection, not
// a handshake (on a busy 2-core bench the 40 handshakes of 40 big blobs
// cost D 2 s of CPU). There are min(parallel, maxMasters) of them, so that
// the decryption runs on that many cores; a blob picks one by its etag.
const (
	maxMasters = 4
	muxIdle    = 60
)

func mastersFor(parallel int) int { return max(1, min(parallel, maxMasters)) }

// hostAlias is the name D's ssh checks S's host key under: the known_hosts
// file written for one transfer holds only S's verified keys under it.
const hostAlias = "sparkform-source"

// peerSource is a snapshot source on another node.
type peerSource struct {
	env   *snapEnv
	src   sdk.Node
	repo  string // the repository folder on S
	addr  string // the address D dials for S's sshd
	port  int
	relay bool
	// authorizedKeys is the file on S the one-time key goes in; "" is the
	// login user's ~/.ssh/authorized_keys (what sshd reads by default).
	authorizedKeys string
	// records keeps the key records on S (tests set Dir).
	records restore.Store
	// knownHosts, when set, replaces the operator's known_hosts file for
	// S (tests).
	knownHosts string

	mu   sync.Mutex
	last *snapListing // what List found last (its sizes set the key's expiry)
	// What List's scan found (for the destination dstKey): Open uses it
	// rather than scanning again.
	scanned *peerScan
}

// peerScan is one scan's result: S's verified host keys as D sees them at
// source_address, and D's address toward S.
type peerScan struct {
	dstKey string
	keys   []ssh.PublicKey
	from   string
}

func (p *peerSource) listed() *snapListing {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func init() {
	newNodeSource = func(env *snapEnv, s *snapSpec) (snapSource, error) { return newPeerSource(env, s) }
}

// newPeerSource checks source_node, source_address and transfer.
func newPeerSource(env *snapEnv, s *snapSpec) (*peerSource, error) {
	src, err := sdk.NodeFromValue(s.SourceNode)
	if err != nil {
		return nil, fmt.Errorf("%w: source_node: %v; give a node, such as node.spark[\"spark-01\"]", ErrBadConfig, err)
	}
	hub := s.SourceHubDir
	if hub == "" {
		hub = s.HubDir
	}
	if err := checkNodePath("source_hub_dir", hub); err != nil {
		return nil, err
	}
	p := &peerSource{env: env, src: src, repo: strings.TrimRight(hub, "/") + "/" + s.repoDir(),
		relay: s.Transfer == "relay", records: restore.Store{Kind: peerKeyKind}}
	switch s.Transfer {
	case "", "direct", "relay":
	default:
		return nil, fmt.Errorf("%w: transfer %q: use \"direct\" (the destination pulls from the source node) or \"relay\" (through this machine)", ErrBadConfig, s.Transfer)
	}
	if src.Key() == env.dst.Key() && path0(hub) == path0(s.HubDir) {
		return nil, fmt.Errorf("%w: source_node %s is the destination node and source_hub_dir is hub_dir: there is nothing to copy", ErrBadConfig, src.Name)
	}
	if p.relay {
		return p, nil
	}
	if src.Transport == "local" {
		return nil, fmt.Errorf("%w: source_node %s is this machine (transport \"local\"), which the destination cannot log in to: use source_local_dir, or transfer = \"relay\"", ErrBadConfig, src.Name)
	}
	p.addr, p.port, err = splitSourceAddress(s.SourceAddress, src)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func path0(p string) string { return strings.TrimRight(p, "/") }

// splitSourceAddress reads source_address: "", "HOST", "HOST:PORT" or
// "[V6]:PORT"; the defaults are the source node's host and port.
func splitSourceAddress(a string, src sdk.Node) (string, int, error) {
	port := src.Port
	if port == 0 {
		port = 22
	}
	if a == "" {
		if src.Host == "" {
			return "", 0, fmt.Errorf("%w: source_node %s has no host: set source_address", ErrBadConfig, src.Name)
		}
		return src.Host, port, nil
	}
	host := a
	if strings.HasPrefix(a, "[") || strings.Count(a, ":") == 1 {
		h, ps, err := net.SplitHostPort(a)
		if err != nil {
			return "", 0, fmt.Errorf("%w: source_address %q: %v; give HOST or HOST:PORT", ErrBadConfig, a, err)
		}
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("%w: source_address %q: port %q is not 1-65535", ErrBadConfig, a, ps)
		}
		host, port = h, n
	}
	if host == "" || strings.HasPrefix(host, "-") || strings.ContainsAny(host, " \t\n\"'\\,@/") {
		return "", 0, fmt.Errorf("%w: source_address %q is not a host name or address", ErrBadConfig, a)
	}
	return host, port, nil
}

// Describe implements snapSource.
func (p *peerSource) Describe() string {
	if p.relay {
		return p.src.Name + " relayed through sparkform (every byte passes through this machine)"
	}
	return p.src.Name + " direct over " + net.JoinHostPort(p.addr, strconv.Itoa(p.port))
}

// List implements snapSource: one command on S; for a direct copy, one on
// D that proves D reaches S's sshd at source_address with the host key
// the operator's known_hosts has for S (nothing is changed on either).
func (p *peerSource) List(ctx context.Context, dst node.Conn, s *snapSpec) (*snapListing, error) {
	conn, err := p.env.conn(ctx, p.src)
	if err != nil {
		return nil, fmt.Errorf("reaching source_node %s: %w", p.src.Name, err)
	}
	// A direct copy reads as S's login user (the serve script does): list
	// as that user too, so a blob it cannot read shows at plan.
	l, err := listNodeHub(ctx, conn, p.relay && p.src.Become, p.repo, s.Revision, p.src.Name)
	if err != nil {
		return nil, err
	}
	var sc *peerScan
	if !p.relay {
		keys, from, err := p.scan(ctx, dst)
		if err != nil {
			return nil, err
		}
		sc = &peerScan{dstKey: p.env.dst.Key(), keys: keys, from: from}
	}
	p.mu.Lock()
	p.last, p.scanned = l, sc
	p.mu.Unlock()
	return l, nil
}

// knownHostsFile is the operator's known_hosts for S.
func (p *peerSource) knownHostsFile() string {
	f := p.knownHosts
	if f == "" {
		f = p.src.KnownHosts
	}
	if f == "" {
		f = "~/.ssh/known_hosts"
	}
	if f == "~" || strings.HasPrefix(f, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			f = filepath.Join(h, f[1:])
		}
	}
	return f
}

var routeSrc = regexp.MustCompile(`\bsrc ([0-9a-fA-F.:]+)`)

// scan runs ssh-keyscan on D against source_address and keeps the keys
// that verify against the operator's known_hosts entry for S. It returns
// the known_hosts lines for D (under hostAlias) and D's source address
// toward S ("" when unknown).
func (p *peerSource) scan(ctx context.Context, dst node.Conn) (hostKeys []ssh.PublicKey, from string, err error) {
	target := net.JoinHostPort(p.addr, strconv.Itoa(p.port))
	res, err := dst.Run(ctx, node.Cmd{Argv: []string{"sh", "-c", scanScript, "sh", p.addr, strconv.Itoa(p.port)}})
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s cannot scan the source's sshd at %s: %v", ErrSourceUnreachable, dst.Name(), target, err)
	}
	var scanned []ssh.PublicKey
	sc := bufio.NewScanner(strings.NewReader(string(res.Stdout)))
	for sc.Scan() {
		line := sc.Text()
		if r, ok := strings.CutPrefix(line, "route "); ok {
			if m := routeSrc.FindStringSubmatch(r); m != nil {
				from = m[1]
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || strings.HasPrefix(line, "#") {
			continue
		}
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(f[1] + " " + f[2]))
		if err == nil {
			scanned = append(scanned, k)
		}
	}
	if len(scanned) == 0 {
		return nil, "", fmt.Errorf("%w: %s cannot reach the sshd of source_node %s at %s: set source_address to the address of %s on a link %s reaches (the cluster link), or transfer = \"relay\" to stream the bytes through this machine",
			ErrSourceUnreachable, dst.Name(), p.src.Name, target, p.src.Name, dst.Name())
	}
	file := p.knownHostsFile()
	db, err := knownhosts.New(file)
	if err != nil {
		return nil, "", fmt.Errorf("%w: known_hosts %s of source_node %s: %v", node.ErrHostKeyUnknown, file, p.src.Name, err)
	}
	port := p.src.Port
	if port == 0 {
		port = 22
	}
	known := net.JoinHostPort(p.src.Host, strconv.Itoa(port))
	remote := &net.TCPAddr{IP: net.IPv4zero, Port: port}
	var changed, revoked bool
	for _, k := range scanned {
		err := db(known, remote, k)
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case err == nil:
			hostKeys = append(hostKeys, k)
		case errors.As(err, &re):
			revoked = true
		case errors.As(err, &ke):
			for _, w := range ke.Want {
				if w.Key.Type() == k.Type() {
					changed = true
				}
			}
		}
	}
	fps := make([]string, len(scanned))
	for i, k := range scanned {
		fps[i] = k.Type() + " " + ssh.FingerprintSHA256(k)
	}
	switch {
	case revoked:
		return nil, "", fmt.Errorf("%w: the sshd at %s (source_address of %s) presents a key that %s marks @revoked; refusing the direct copy",
			node.ErrHostKeyRevoked, target, p.src.Name, file)
	case len(hostKeys) == 0 && changed:
		return nil, "", fmt.Errorf("%w: the sshd at %s presents %s, which is not the host key %s has for source_node %s (%s): it is another machine, or %s changed its key; refusing the direct copy (check the address, or fix known_hosts if the key changed on purpose)",
			node.ErrHostKeyChanged, target, strings.Join(fps, ", "), file, p.src.Name, known, p.src.Name)
	case len(hostKeys) == 0:
		return nil, "", fmt.Errorf("%w: the sshd at %s presents %s, and %s has no key for source_node %s (%s) to check them against: connect to %s once (sparkform plan does) so its key is known, then plan again",
			node.ErrHostKeyUnknown, target, strings.Join(fps, ", "), file, p.src.Name, known, p.src.Name)
	}
	return hostKeys, from, nil
}

// owner names the destination's snapshot a key serves: the next Open of
// the same snapshot on the same destination sweeps what a killed one left.
func (p *peerSource) owner(s *snapSpec) string {
	sum := sha256.Sum256([]byte(p.env.dst.Key() + "\x00" + s.HubDir + "\x00" + s.repoDir()))
	return hex.EncodeToString(sum[:8])
}

// Open implements snapSource. When it fails after it began to install
// the key, it takes back what it installed before it returns the error.
func (p *peerSource) Open(ctx context.Context, dst node.Conn, s *snapSpec) (snapTransfer, error) {
	t, err := p.open(ctx, dst, s)
	if err != nil {
		if t != nil {
			if cerr := t.Close(ctx); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
		return nil, err
	}
	return t, nil
}

func (p *peerSource) open(ctx context.Context, dst node.Conn, s *snapSpec) (*peerTransfer, error) {
	conn, err := p.env.conn(ctx, p.src)
	if err != nil {
		return nil, fmt.Errorf("reaching source_node %s: %w", p.src.Name, err)
	}
	t := &peerTransfer{p: p, src: conn, dst: dst, owner: p.owner(s)}
	if p.relay {
		return t, nil
	}
	// The keys List just verified (same destination), else a scan now.
	p.mu.Lock()
	sc := p.scanned
	p.scanned = nil
	p.mu.Unlock()
	if sc == nil || sc.dstKey != p.env.dst.Key() {
		keys, from, err := p.scan(ctx, dst)
		if err != nil {
			return nil, err
		}
		sc = &peerScan{keys: keys, from: from}
	}
	keys, from := sc.keys, sc.from
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	blk, err := ssh.MarshalPrivateKey(priv, "sparkform one-time key")
	if err != nil {
		return nil, err
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	t.id = hex.EncodeToString(id[:])
	t.keyFP = ssh.FingerprintSHA256(sshPub)
	expires := time.Now().Add(keyTTL(p.listed())).Unix()
	head := fmt.Sprintf("key %s\nowner %s\nexpires %d\n", t.id, t.owner, expires)
	serve := strings.Replace(serveScript, "BLOBS", node.Quote(p.repo+"/blobs"), 1)
	var kh strings.Builder
	algos := map[string]bool{}
	var algoList []string
	for _, k := range keys {
		kh.WriteString(hostAlias + " " + string(ssh.MarshalAuthorizedKey(k)))
		for _, a := range hostKeyAlgos(k.Type()) {
			if !algos[a] {
				algos[a] = true
				algoList = append(algoList, a)
			}
		}
	}
	// From here on Close undoes whatever part ran. The key goes on S and
	// its private half on D at the same time (two round trips in one).
	t.installed = true
	var wg sync.WaitGroup
	var installErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, err := p.records.Run(ctx, conn, false, peerKeyFuncs+installKeyScript, p.records.Name(t.id), head,
			p.authorizedKeys, t.id, t.owner, strconv.FormatInt(expires, 10),
			strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))), from, serve)
		if err == nil && strings.TrimSpace(out) != "installed" {
			err = fmt.Errorf("unexpected output %q", out)
		}
		if err != nil {
			installErr = fmt.Errorf("installing the one-time key on source_node %s: %w", p.src.Name, err)
		}
	}()
	res, err := dst.Run(ctx, node.Cmd{Argv: []string{"sh", "-c", dstKeyScript, "sh", t.owner, kh.String()},
		Become: p.env.dst.Become, Stdin: strings.NewReader(string(pem.EncodeToMemory(blk)))})
	wg.Wait()
	if installErr != nil {
		return t, installErr
	}
	if err != nil {
		return t, fmt.Errorf("writing the one-time key on %s: %w", dst.Name(), err)
	}
	t.dir = strings.TrimSpace(string(res.Stdout))
	if !strings.HasPrefix(t.dir, "/") || strings.ContainsAny(t.dir, "\n") {
		return t, fmt.Errorf("writing the one-time key on %s: unexpected output %q", dst.Name(), res.Stdout)
	}
	user := p.src.User
	if user == "" {
		user = os.Getenv("USER")
	}
	base := []string{"ssh", "-F", "/dev/null", "-T", "-x", "-a",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "IdentityFile=" + t.dir + "/id",
		"-o", "UserKnownHostsFile=" + t.dir + "/known_hosts", "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "StrictHostKeyChecking=yes", "-o", "HostKeyAlias=" + hostAlias, "-o", "CheckHostIP=no",
		"-o", "UpdateHostKeys=no", "-o", "HostKeyAlgorithms=" + strings.Join(algoList, ","),
		"-o", "Ciphers=aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com",
		"-o", "ConnectTimeout=15", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4",
		"-o", "LogLevel=ERROR", "-p", strconv.Itoa(p.port), "-l", user}
	masters := mastersFor(s.Parallel)
	// ssh to S over master $k (a shell variable of the command: cm$k).
	// Without its master (gone, or never up) ssh connects on its own.
	over := func(opts ...string) string {
		return "cm=" + node.Quote(t.dir+"/cm") + "; exec " + node.QuoteArgv(append(append(append([]string{}, base...), opts...), "-o", "ControlMaster=no")) +
			` -o "ControlPath=$cm$k" -- ` + node.Quote(p.addr)
	}
	// The receiver appends "ETAG OFFSET PATH": only the first two reach S.
	// -n: stdin from /dev/null (the receiver's stdin is not S's business).
	// A blob's master: its etag's first byte modulo their number.
	t.argv = []string{"sh", "-c", `k=$((0x${1%"${1#??}"} % ` + strconv.Itoa(masters) + `)); ` + over("-n") + ` blob "$1" "$2"`, "sh"}
	// Without -n: the etags of a batch go to S on stdin.
	t.batch = []string{"sh", "-c", "k=0; " + over() + " tar", "sh"}
	// The masters, each up by its first login (which pings) before the
	// transfer starts: a key sshd refuses (a from= that NAT defeats, an
	// sshd that ignores ~/.ssh/authorized_keys) is one clear error here,
	// not one per blob.
	master := node.QuoteArgv(append(append([]string{}, base...), "-n", "-o", "ControlMaster=yes", "-o", "ControlPersist="+strconv.Itoa(muxIdle)))
	res, err = dst.Run(ctx, node.Cmd{Argv: []string{"sh", "-c", startMastersScript, "sh", strconv.Itoa(masters), t.dir + "/cm", master, p.addr},
		Become: p.env.dst.Become})
	if err == nil && strings.Count(string(res.Stdout), "sparkform-serve\n") != masters {
		err = fmt.Errorf("unexpected answer %q", res.Stdout)
	}
	if err != nil {
		msg := err.Error()
		var ee *node.ExitError
		if errors.As(err, &ee) && strings.TrimSpace(ee.Stderr) != "" {
			msg = strings.TrimSpace(ee.Stderr)
		}
		return t, fmt.Errorf("%w: %s could not log in to source_node %s at %s with the one-time key (%s); check that its sshd reads ~/.ssh/authorized_keys, or set transfer = \"relay\"",
			ErrSourceUnreachable, dst.Name(), p.src.Name, net.JoinHostPort(p.addr, strconv.Itoa(p.port)), msg)
	}
	return t, nil
}

func hostKeyAlgos(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
	}
	return []string{keyType}
}

// peerTransfer is one opened copy from S.
type peerTransfer struct {
	p     *peerSource
	src   node.Conn
	dst   node.Conn
	owner string

	// Direct only: the key's id on S, the key folder on D, the argv.
	id        string
	installed bool
	dir       string
	argv      []string
	batch     []string
	// keyFP is the one-time key's SHA256 fingerprint (tests count its
	// logins in S's sshd log).
	keyFP string

	relayed   atomic.Int64
	closeOnce sync.Once
	closeErr  error
}

// NodeFetch implements snapTransfer: D runs ssh to S's serve script.
func (t *peerTransfer) NodeFetch() ([]string, []byte, bool) {
	if t.p.relay || t.argv == nil {
		return nil, nil, false
	}
	return t.argv, nil, true
}

// NodeFetchBatch returns the argv the receiver may run ON the destination
// for many blobs at once: their etags on its stdin, one a line; its
// stdout is a tar (GNU format) of those blobs, each entry named by its
// etag, links followed. ok=false for a relay. It goes over the transfer's
// shared connection: one request for any number of small files.
func (t *peerTransfer) NodeFetchBatch() ([]string, bool) {
	if t.p.relay || t.batch == nil {
		return nil, false
	}
	return t.batch, true
}

// Stream implements snapTransfer: f's blob read on S over sparkform's
// connection (tail seeks to offset), every byte counted.
func (t *peerTransfer) Stream(ctx context.Context, f snapFile, offset int64) (io.ReadCloser, error) {
	if !etagRe.MatchString(f.Etag) || offset < 0 {
		return nil, fmt.Errorf("%w: blob %q offset %d", ErrBadConfig, f.Etag, offset)
	}
	argv := []string{"tail", "-c", "+" + strconv.FormatInt(offset+1, 10), t.p.repo + "/blobs/" + f.Etag}
	return streamRun(ctx, t.src, node.Cmd{Argv: argv, Become: t.p.src.Become}, &t.relayed), nil
}

// StreamMany implements snapStreamBatcher: one command on S for all of
// files (relayStreamScript), every byte counted.
func (t *peerTransfer) StreamMany(ctx context.Context, files []snapFile, offsets []int64) (io.ReadCloser, error) {
	var list strings.Builder
	for i, f := range files {
		if !etagRe.MatchString(f.Etag) || offsets[i] < 0 || offsets[i] > f.Size {
			return nil, fmt.Errorf("%w: blob %q offset %d", ErrBadConfig, f.Etag, offsets[i])
		}
		fmt.Fprintf(&list, "%s %d %d\n", f.Etag, offsets[i], f.Size-offsets[i])
	}
	cmd := node.Cmd{Argv: []string{"sh", "-c", relayStreamScript, "sh", t.p.repo + "/blobs"}, Become: t.p.src.Become,
		Stdin: strings.NewReader(list.String())}
	return streamRun(ctx, t.src, cmd, &t.relayed), nil
}

// Relayed implements snapTransfer.
func (t *peerTransfer) Relayed() int64 { return t.relayed.Load() }

// Close implements snapTransfer: the key line, serve script and record
// on S, the key folder on D. It runs even when ctx was cancelled (a
// cancelled apply still takes its key back).
func (t *peerTransfer) Close(ctx context.Context) error {
	t.closeOnce.Do(func() {
		if !t.installed {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		// D and S at the same time.
		var errs []error
		var dstErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := t.dst.Run(cctx, node.Cmd{Argv: []string{"sh", "-c", dstSweepScript, "sh", t.owner}, Become: t.p.env.dst.Become}); err != nil {
				dstErr = fmt.Errorf("removing the one-time key from %s: %w", t.dst.Name(), err)
			}
		}()
		out, err := t.p.records.Run(cctx, t.src, false, peerKeyFuncs+removeKeyScript, t.p.records.Name(t.id))
		if err == nil && strings.TrimSpace(out) != "removed" {
			err = fmt.Errorf("unexpected output %q", out)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing the one-time key from source_node %s (the next copy from it removes it; it expires anyway): %w", t.p.src.Name, err))
		}
		<-done
		if dstErr != nil {
			errs = append([]error{dstErr}, errs...)
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}

// streamRun runs cmd on conn with its stdout streamed to the returned
// reader (counted in n). Closing the reader stops the command.
func streamRun(ctx context.Context, conn node.Conn, cmd node.Cmd, n *atomic.Int64) io.ReadCloser {
	cctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	go func() {
		_, err := conn.Run(cctx, cmd)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	return &streamReader{countingReader: countingReader{r: pr, n: n}, pr: pr, cancel: cancel}
}

type streamReader struct {
	countingReader
	pr     *io.PipeReader
	cancel context.CancelFunc
}

func (s *streamReader) Close() error {
	s.cancel()
	return s.pr.Close()
}
