package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/sparkform/sparkform/providers/sdk"
)

// Check reaches n once, the way every provider will: the host key is
// verified, the login must succeed and, when n.Become, `sudo -n true` must
// run. A plan calls it for every node before it reads anything, so a node
// that cannot be reached fails the plan, not a later apply. The error says
// what to check (see Explain).
func Check(ctx context.Context, n sdk.Node) error {
	c, err := Open(ctx, n)
	if err != nil {
		return Explain(n, err)
	}
	defer c.Close()
	if n.Become {
		if _, err := c.Run(ctx, becomeCheck); err != nil {
			return Explain(n, err)
		}
	}
	return nil
}

// Check is the package-level Check on the pool's connection to n: the
// connection stays open for the rest of the run (a Relay serves it to the
// plugins), so a plan's node check is the only handshake with n. With
// n.Become it starts the privileged shell the connection holds for its
// next Become command (held.go) instead of a throw-away `sudo -n true`;
// after a Prewarm it takes the one the prewarm started. Then it installs
// the node helper when the node lacks this version (install.go), which
// never fails the check.
func (p *Pool) Check(ctx context.Context, n sdk.Node) error {
	c, err := p.Get(ctx, n)
	if err != nil {
		return Explain(n, err)
	}
	if n.Become {
		if err := p.checkBecome(ctx, n, c); err != nil {
			return Explain(n, err)
		}
	}
	ensureHelper(ctx, c, n)
	return nil
}

// checkBecome is Check's privileged part: the prewarm's result, else a
// held shell started now.
func (p *Pool) checkBecome(ctx context.Context, n sdk.Node, c Conn) error {
	if e := p.takeBecome(n, c); e != nil {
		select {
		case <-e.become:
			return e.becomeErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return prepareBecome(ctx, c)
}

// Explain adds to a connection error what to check: sshd and the port
// for a refused connection, the name for a DNS failure, the network for
// a timeout, the user and key for a refused login. Host key and sudo
// errors already say what to do and are returned as they are.
func Explain(n sdk.Node, err error) error {
	if err == nil {
		return nil
	}
	port := n.Port
	if port == 0 {
		port = 22
	}
	hp := where(n, net.JoinHostPort(n.Host, strconv.Itoa(port)))
	host := n.Host
	if n.HostAlias != "" {
		host = n.HostAlias + " (" + n.Host + ")"
	}
	var dns *net.DNSError
	var ne net.Error
	hint := ""
	switch {
	case errors.Is(err, ErrHostKeyUnknown), errors.Is(err, ErrHostKeyChanged), errors.Is(err, ErrHostKeyRevoked),
		errors.Is(err, ErrBecome), errors.Is(err, ErrTransport):
		return err
	case errors.Is(err, syscall.ECONNREFUSED):
		hint = fmt.Sprintf("connection refused: check that sshd is running on %s and listens on port %d (the node's port argument, or the Port ssh_config gives)", host, port)
	case errors.As(err, &dns):
		hint = fmt.Sprintf("the host name %q does not resolve: check the node's host argument (DNS, /etc/hosts)", n.Host)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		hint = fmt.Sprintf("no route to %s: check the address and that this machine is on the node's network", host)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		hint = fmt.Sprintf("no answer from %s in time: check that the node is up and reachable from here (network, firewall, VPN), or raise the node's timeout", hp)
	case errors.Is(err, ErrNoAuth), strings.Contains(err.Error(), "unable to authenticate"), strings.Contains(err.Error(), "refused every key"):
		hint = "the login was refused: check the node's user and identity_file (or the keys in the ssh-agent), and that the key is in the user's authorized_keys on the node"
	default:
		return err
	}
	return fmt.Errorf("%w; %s", err, hint)
}
