package node

import (
	"errors"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrHostKeyUnknown: known_hosts has no key for the node.
	ErrHostKeyUnknown = errors.New("host key unknown")
	// ErrHostKeyChanged: known_hosts has a different key for the node.
	ErrHostKeyChanged = errors.New("host key changed")
	// ErrHostKeyRevoked: the node's key is marked @revoked in known_hosts.
	ErrHostKeyRevoked = errors.New("host key revoked")
	// ErrBecome: `sudo -n` refused (a password is needed, or no sudo rights).
	ErrBecome = errors.New("become refused")
	// ErrTransport: the node's transport is neither "ssh" nor "local".
	ErrTransport = errors.New("unsupported transport")
	// ErrNoAuth: there is no key to log in with.
	ErrNoAuth = errors.New("no SSH key available")
	// ErrClosed: the connection or pool is closed.
	ErrClosed = errors.New("connection closed")
	// ErrBadCmd: the command is malformed (empty argv, bad env name).
	ErrBadCmd = errors.New("bad command")
)

// HostKeyError is a refused host key. It matches ErrHostKeyUnknown,
// ErrHostKeyChanged or ErrHostKeyRevoked.
type HostKeyError struct {
	Node string
	Host string
	Port int
	// Key is what the node offered.
	Key ssh.PublicKey
	// KnownHosts is the file checked; Missing is true when it does not exist.
	KnownHosts string
	Missing    bool
	// Want are the known_hosts entries for the node that did not match
	// (empty when the host is unknown).
	Want    []knownhosts.KnownKey
	Revoked bool
}

func (e *HostKeyError) Unwrap() error {
	switch {
	case e.Revoked:
		return ErrHostKeyRevoked
	case len(e.Want) > 0:
		return ErrHostKeyChanged
	}
	return ErrHostKeyUnknown
}

func (e *HostKeyError) Error() string {
	hp := e.Host + ":" + strconv.Itoa(e.Port)
	if e.Port != 22 {
		hp = "[" + e.Host + "]:" + strconv.Itoa(e.Port)
	}
	offered := e.Key.Type() + " " + ssh.FingerprintSHA256(e.Key)
	var b strings.Builder
	b.WriteString("node " + e.Node + ": ")
	switch {
	case e.Revoked:
		b.WriteString("host key for " + hp + " (" + offered + ") is marked @revoked in " + e.KnownHosts + "; refusing to connect")
	case len(e.Want) > 0:
		b.WriteString("host key CHANGED for " + hp + ": the node offered " + offered + ", but ")
		for i, w := range e.Want {
			if i > 0 {
				b.WriteString(" and ")
			}
			b.WriteString(w.Filename + ":" + strconv.Itoa(w.Line) + " has " + w.Key.Type() + " " + ssh.FingerprintSHA256(w.Key))
		}
		b.WriteString(". Someone may be intercepting the connection, or the node was reinstalled; refusing to connect. " +
			"If the change is expected, remove the old entry (ssh-keygen -R '" + hp + "' -f " + e.KnownHosts +
			") and add the new key after checking its fingerprint with the node's administrator.")
	default:
		b.WriteString("host key for " + hp + " is not known (the node offered " + offered + ") and ")
		if e.Missing {
			b.WriteString("known_hosts file " + e.KnownHosts + " does not exist")
		} else {
			b.WriteString(e.KnownHosts + " has no entry for it")
		}
		b.WriteString("; refusing to connect. Check the fingerprint with the node's administrator " +
			"(ssh-keygen -lf /etc/ssh/ssh_host_" + keyFileType(e.Key.Type()) + "_key.pub on the node), then add it with: " +
			"ssh-keyscan -p " + strconv.Itoa(e.Port) + " " + e.Host + " >> " + e.KnownHosts)
	}
	return b.String()
}

func keyFileType(t string) string {
	switch {
	case strings.Contains(t, "ed25519"):
		return "ed25519"
	case strings.Contains(t, "ecdsa"):
		return "ecdsa"
	}
	return "rsa"
}

// BecomeError is a command run with Become that sudo refused to run.
// It matches ErrBecome and wraps the *ExitError.
type BecomeError struct {
	Node string
	User string
	Exit *ExitError
}

func (e *BecomeError) Error() string {
	return "node " + e.Node + ": become needs passwordless sudo for " + e.User + " (sudo -n refused): " +
		strings.TrimSpace(e.Exit.Stderr) + ". Allow it with a sudoers rule such as `" + e.User +
		" ALL=(ALL) NOPASSWD: ALL` in /etc/sudoers.d/, or set become = false."
}

func (e *BecomeError) Unwrap() []error { return []error{ErrBecome, e.Exit} }

// sudoRefusals are the messages of `sudo -n` when it will not run the
// command; sudo prefixes its own messages with "sudo: ".
var sudoRefusals = []string{
	"a password is required",
	"a terminal is required",
	"no tty present",
	"is not in the sudoers file",
	"is not allowed to run sudo",
	"may not run sudo",
}

// becomeError turns an ExitError of a Become command into a BecomeError
// when sudo itself refused.
func becomeError(node, user string, ee *ExitError) error {
	for _, line := range strings.Split(ee.Stderr, "\n") {
		if !strings.HasPrefix(line, "sudo: ") && !strings.Contains(line, " is not in the sudoers file") {
			continue
		}
		for _, r := range sudoRefusals {
			if strings.Contains(line, r) {
				return &BecomeError{Node: node, User: user, Exit: ee}
			}
		}
	}
	return ee
}
