package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// The privileged shell held per connection.
//
// A node with become pays for sudo (a process that reads the sudoers
// policy, PAM, logs) on every privileged command. The node check of a
// plan (Pool.Check, Pool.Prewarm) therefore does not run `sudo -n true`
// and throw it away: it starts `sudo -n -- sh -c HELD` in a session of the
// connection and waits until that shell, now root, says it is ready. The
// shell is held, idle, reading its stdin, until the first command with
// Become on the connection takes it over: the command's line is framed
// into it (a count of lines, then the lines: the same quoted line
// CommandLine gives, without the sudo) and the shell evals it, so the
// command `exec`s in the shell's place with the session's stdin, stdout
// and stderr, and its exit status is the session's. A command that comes
// when the held shell is taken starts a new one the same way (one sudo, as
// before). So a plan's node check and the first privileged command, often
// the Docker API stream of `docker system dial-stdio`, share one sudo.
//
// Nothing stays on the node: the idle shell exits at the end of its stdin,
// which is when the connection closes (Close, a crash or kill -9 of
// sparkform: sshd ends the session when the connection goes).
//
// Plugins reach the core's held shell through the Relay: a Become command
// in a plugin opens a channel of type heldChannel carrying the line, and
// the relay runs it on the held shell of the node's one connection.

// heldScript is the privileged shell: it says it is root and ready, reads
// one framed command line and evals it (the line execs the command).
//
// Given the node helper's path ($1, the node check's), its ready line
// also says whether the helper is there, with builtins only: "READY +"
// when it is, "READY - ARCH" (uname -m, a process only then) when it is
// not, so the check learns what it needs to install without a command of
// its own.
var heldScript = `if [ -n "$1" ]; then
h=$1
` + HelperShell("h") + `if [ -n "$h" ]; then printf '%s +\n' ` + heldReady + `; else printf '%s - %s\n' ` + heldReady + ` "$(uname -m)"; fi
else printf '%s\n' ` + heldReady + `
fi
unset h
IFS= read -r n || exit 0
s=
while [ "$n" -gt 0 ]; do
	IFS= read -r l || exit 0
	s="$s$l
"
	n=$((n - 1))
done
unset n l
eval "$s"`

// heldReady is the line the held shell prints once sudo let it run.
const heldReady = "sparkform-held-ready"

// heldArgv is what the held shell's session runs (through CommandLine:
// `exec sudo -n -- sh -c HELD sh HELPER`); helper is the node helper's
// path to look for, or "".
func heldArgv(helper string) []string { return []string{"sh", "-c", heldScript, "sh", helper} }

// heldChannel is the channel type a plugin opens on the relay to run a
// Become command on the core's held shell; its extra data is the line.
const heldChannel = "held@sparkform"

// heldShell is one started privileged shell, idle until taken.
type heldShell struct {
	// helper is what its ready line said of the node helper: helperPresent,
	// or helperAbsent with the node's arch in arch; helperUnknown when it
	// was not asked.
	helper helperState
	arch   string
	sess   *ssh.Session
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *lockedBuffer
	sent   bool          // the command line went with the start
	errc   chan struct{} // closed when the stderr copy ended
	done   chan struct{} // closed when the session ended; err holds Wait's result
	err    error
}

// lockedBuffer is a bytes.Buffer written by one goroutine and read by
// another once the writer is done.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

// ended reports whether h's session is over.
func (h *heldShell) ended() bool {
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// startHeld starts a privileged shell on s and waits until it is ready.
// sudo refusing is a *BecomeError, as for any Become command. A line is
// sent at once, behind the start (no round trip waiting for the ready
// line first): the shell reads it once sudo let it run.
func (s *SSH) startHeld(ctx context.Context, line, helper string) (*heldShell, error) {
	s.trips.Add(1)
	sess, err := s.client.NewSession()
	if err != nil {
		return nil, s.connErr("start the privileged shell", err)
	}
	h := &heldShell{sess: sess, stderr: &lockedBuffer{}, errc: make(chan struct{}), done: make(chan struct{})}
	stdin, err1 := sess.StdinPipe()
	stdout, err2 := sess.StdoutPipe()
	stderr, err3 := sess.StderrPipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		sess.Close()
		return nil, s.connErr("start the privileged shell", err)
	}
	h.stdin, h.stdout = stdin, stdout
	if err := sess.Start(CommandLine(Cmd{Argv: heldArgv(helper)}, true)); err != nil {
		sess.Close()
		return nil, s.connErr("start the privileged shell", err)
	}
	if line != "" {
		if err := h.send(line); err != nil {
			sess.Close()
			return nil, s.connErr("start the privileged shell", err)
		}
		h.sent = true
	}
	go func() {
		_, _ = io.Copy(h.stderr, stderr)
		close(h.errc)
	}()
	go func() {
		h.err = sess.Wait()
		close(h.done)
	}()
	ready := make(chan error, 1)
	go func() {
		// Byte by byte: what follows is the command's, copied in bulk.
		line, err := readLine(h.stdout, len(heldReady)+80)
		if err == nil {
			h.helper, h.arch, err = parseReady(line)
		}
		ready <- err
	}()
	fail := func(err error) (*heldShell, error) {
		sess.Close()
		return nil, err
	}
	select {
	case err := <-ready:
		if err == nil {
			s.opts.debug("privileged shell ready", "node", s.node.Name)
			return h, nil
		}
		// sudo refused (or the session broke): its exit and message.
		select {
		case <-h.done:
		case <-time.After(5 * time.Second):
		}
		select {
		case <-h.errc:
		case <-time.After(time.Second):
		}
		argv := []string{"sudo", "-n", "--", "sh"}
		var ee *ssh.ExitError
		if errors.As(h.err, &ee) {
			return fail(becomeError(s.node.Name, s.node.User, &ExitError{Argv: argv, ExitCode: ee.ExitStatus(), Stderr: h.stderr.String()}))
		}
		if h.err != nil {
			return fail(s.connErr("start the privileged shell", h.err))
		}
		return fail(fmt.Errorf("node %s: the privileged shell (%s) did not start: %v: %s", s.node.Name, QuoteArgv(argv), err, h.stderr.String()))
	case <-ctx.Done():
		return fail(ctx.Err())
	case <-s.done:
		return fail(fmt.Errorf("node %s: start the privileged shell: connection lost", s.node.Name))
	}
}

// parseReady reads the held shell's ready line.
func parseReady(line string) (helperState, string, error) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), heldReady)
	if ok && strings.HasSuffix(line, "\n") {
		switch {
		case rest == "":
			return helperUnknown, "", nil
		case rest == " +":
			return helperPresent, "", nil
		case strings.HasPrefix(rest, " - "):
			return helperAbsent, rest[len(" - "):], nil
		}
	}
	return helperUnknown, "", fmt.Errorf("unexpected first line %q", line)
}

// readLine reads up to and including '\n', at most max bytes, one at a
// time (nothing after it is consumed).
func readLine(r io.Reader, max int) (string, error) {
	var b []byte
	var c [1]byte
	for len(b) < max {
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return string(b), err
		}
		b = append(b, c[0])
		if c[0] == '\n' {
			break
		}
	}
	return string(b), nil
}

// PrepareBecome makes sure s holds an idle privileged shell, starting one
// when it has none: the node check of a node with become (sudo -n must
// work), whose sudo the first Become command then uses.
func (s *SSH) PrepareBecome(ctx context.Context) error {
	if s.node.User == "root" {
		return nil
	}
	s.heldMu.Lock()
	if s.held != nil && !s.held.ended() {
		s.heldMu.Unlock()
		return nil
	}
	s.held = nil
	s.heldMu.Unlock()
	h, err := s.startHeld(ctx, "", HelperPath(s.node))
	if err != nil {
		return err
	}
	if h.helper != helperUnknown {
		s.setHelper(h.helper, h.arch)
	}
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if s.held != nil && !s.held.ended() {
		h.sess.Close() // another check won: one idle shell is enough
		return nil
	}
	s.held = h
	return nil
}

// takeHeld returns the idle privileged shell, or a new one with line
// already sent.
func (s *SSH) takeHeld(ctx context.Context, line string) (*heldShell, error) {
	s.heldMu.Lock()
	h := s.held
	s.held = nil
	s.heldMu.Unlock()
	if h != nil && !h.ended() {
		return h, nil
	}
	return s.startHeld(ctx, line, "")
}

// send frames line into h: its count of lines, then the lines.
func (h *heldShell) send(line string) error {
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	_, err := io.WriteString(h.stdin, fmt.Sprintf("%d\n%s", strings.Count(line, "\n"), line))
	return err
}

// execOn runs line on h with stdin, stdout and stderr, and returns how
// the session ended (sess.Wait's error). On ctx's end the command is sent
// SIGTERM and the session closed, as Run does.
func (h *heldShell) execOn(ctx context.Context, line string, stdin io.Reader, stdout, stderr io.Writer) error {
	defer h.sess.Close()
	if !h.sent {
		if err := h.send(line); err != nil {
			return err
		}
	}
	go func() {
		if stdin != nil {
			_, _ = io.Copy(h.stdin, stdin)
		}
		h.stdin.Close()
	}()
	outc := make(chan struct{})
	go func() {
		_, _ = io.Copy(stdout, h.stdout)
		close(outc)
	}()
	select {
	case <-h.done:
	case <-ctx.Done():
		_ = h.sess.Signal(ssh.SIGTERM)
		h.sess.Close()
		return ctx.Err()
	}
	<-outc
	<-h.errc
	_, _ = stderr.Write(h.stderr.Bytes())
	return h.err
}

// runBecome runs c (Become, as a non-root user) on the held shell: the
// core's own, or through the relay the core's.
func (s *SSH) runBecome(ctx context.Context, c Cmd, stdout, stderr io.Writer) error {
	line := CommandLine(c, false)
	if s.relayed {
		return s.runRelayedHeld(ctx, line, c.Stdin, stdout, stderr)
	}
	h, err := s.takeHeld(ctx, line)
	if err != nil {
		return err
	}
	return h.execOn(ctx, line, c.Stdin, stdout, stderr)
}

// runRelayedHeld is runBecome in a plugin: a heldChannel on the relay.
func (s *SSH) runRelayedHeld(ctx context.Context, line string, stdin io.Reader, stdout, stderr io.Writer) error {
	ch, reqs, err := s.client.OpenChannel(heldChannel, []byte(line))
	if err != nil {
		var oe *ssh.OpenChannelError
		if errors.As(err, &oe) {
			return fmt.Errorf("node %s: %s", s.node.Name, oe.Message)
		}
		return s.connErr("start command", err)
	}
	defer ch.Close()
	go func() {
		if stdin != nil {
			_, _ = io.Copy(ch, stdin)
		}
		_ = ch.CloseWrite()
	}()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(stdout, ch) }()
	go func() { defer wg.Done(); _, _ = io.Copy(stderr, ch.Stderr()) }()
	statusc := make(chan error, 1)
	go func() {
		var st error = &ssh.ExitMissingError{}
		for req := range reqs {
			switch req.Type {
			case "exit-status":
				var m struct{ Status uint32 }
				if ssh.Unmarshal(req.Payload, &m) == nil {
					st = exitErr(int(m.Status), "")
				}
			case "exit-signal":
				var m struct {
					Signal     string
					CoreDumped bool
					Error      string
					Lang       string
				}
				if ssh.Unmarshal(req.Payload, &m) == nil {
					st = exitErr(-1, m.Signal)
				}
			}
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
		statusc <- st
	}()
	select {
	case err = <-statusc:
	case <-ctx.Done():
		_, _ = ch.SendRequest("signal", false, ssh.Marshal(struct{ Signal string }{string(ssh.SIGTERM)}))
		ch.Close()
		return ctx.Err()
	}
	wg.Wait()
	return err
}

// heldExit is an exit status carried over the relay: the plugin's side of
// a held command turns it into the same errors as a session's.
type heldExit struct {
	code   int
	signal string
}

func (e *heldExit) Error() string {
	if e.signal != "" {
		return "killed by signal " + e.signal
	}
	return fmt.Sprintf("exit status %d", e.code)
}

func exitErr(code int, signal string) error {
	if code == 0 && signal == "" {
		return nil
	}
	return &heldExit{code: code, signal: signal}
}

// forwardHeld serves a plugin's heldChannel: the line runs on the held
// shell of up (the node's one connection), its output and exit status go
// back as a session's would.
func forwardHeld(ctx context.Context, up *SSH, nc ssh.NewChannel) {
	if !takeSlot(ctx, up, nc) {
		return
	}
	defer func() { <-up.slots }()
	line := string(nc.ExtraData())
	h, herr := up.takeHeld(ctx, line)
	var ee *ExitError
	if herr != nil && !errors.As(herr, &ee) {
		nc.Reject(ssh.ConnectionFailed, herr.Error())
		return
	}
	lch, lreqs, err := nc.Accept()
	if err != nil {
		if h != nil {
			h.sess.Close()
		}
		return
	}
	defer lch.Close()
	if herr != nil {
		// sudo refused: its message and status, for the plugin's
		// becomeError to recognise.
		_, _ = io.WriteString(lch.Stderr(), ee.Stderr)
		_, _ = lch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(ee.ExitCode)}))
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for req := range lreqs {
			if req.Type == "signal" {
				cancel()
			}
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
	}()
	werr := h.execOn(cctx, line, lch, lch, lch.Stderr())
	var se *ssh.ExitError
	switch {
	case werr == nil:
		_, _ = lch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
	case errors.As(werr, &se) && se.Signal() != "":
		_, _ = lch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{Signal: se.Signal()}))
	case errors.As(werr, &se):
		_, _ = lch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(se.ExitStatus())}))
	}
	_ = lch.CloseWrite()
}
