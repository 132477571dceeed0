package node

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
// A Become read (no stdin, output collected) does not take the shell: it
// runs as a frame (heldScript, runFrame) and the shell stays held for
// the next, so a plan's privileged reads and its first stream share the
// check's sudo.
//
// Nothing stays on the node: the idle shell exits at the end of its stdin,
// which is when the connection closes (Close, a crash or kill -9 of
// sparkform: sshd ends the session when the connection goes).
//
// Plugins reach the core's held shell through the Relay: a Become command
// in a plugin opens a channel of type heldChannel carrying the line, and
// the relay runs it on the held shell of the node's one connection.

// heldScript is the privileged shell: it says it is root and ready, then
// reads framed command lines. A frame "COUNT" then COUNT lines is the
// last: the shell evals it and the line execs the command in its place
// (stdin, stdout and stderr are the session's). A frame "r TOKEN COUNT"
// then COUNT lines runs the line as a child with stdin from /dev/null
// and, once it has exited, writes "TOKEN STATUS" on stdout and "TOKEN"
// on stderr, then reads the next frame: the same sudo serves any number
// of such commands (runFrame). TOKEN is random per frame, so no output
// can forge the boundary. A signal for the session (a cancelled command)
// takes the child down with the shell.
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
while :; do
	IFS= read -r n || exit 0
	t=
	case $n in "r "*) t=${n#r }; n=${t#* }; t=${t%% *} ;; esac
	s=
	while [ "$n" -gt 0 ]; do
		IFS= read -r l || exit 0
		s="$s$l
"
		n=$((n - 1))
	done
	unset n l
	if [ -z "$t" ]; then eval "$s"; exit; fi
	( eval "$s" ) </dev/null &
	p=$!
	trap 'kill -TERM "$p" 2>/dev/null; exit 143' TERM
	trap 'kill -TERM "$p" 2>/dev/null; exit 129' HUP
	wait "$p"
	r=$?
	trap - TERM HUP
	printf '%s %s\n' "$t" "$r"
	printf '%s\n' "$t" >&2
done`

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
	stdout *bufio.Reader // after the ready line: frames' output, then the last command's
	stderr *lockedBuffer
	// runMu is held while a frame runs on the shell, and for good by the
	// command that takes it (execOn); dead: a frame failed or was
	// cancelled, the shell is going.
	runMu sync.Mutex
	dead  atomic.Bool
	sent  bool          // the command line went with the start
	errc  chan struct{} // closed when the stderr copy ended
	done  chan struct{} // closed when the session ended; err holds Wait's result
	err   error
}

// lockedBuffer is a bytes.Buffer written by one goroutine and read by
// another; cutThrough waits for a line in it.
type lockedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on each write
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.buf.Write(p)
}

// cutThrough waits until the buffer holds line, then removes it and
// what precedes it, returning what preceded it; false when done closes
// first.
func (b *lockedBuffer) cutThrough(line []byte, done <-chan struct{}) ([]byte, bool) {
	for {
		b.mu.Lock()
		if i := bytes.Index(b.buf.Bytes(), line); i >= 0 {
			before := append([]byte(nil), b.buf.Bytes()[:i]...)
			b.buf.Next(i + len(line))
			b.mu.Unlock()
			return before, true
		}
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-done:
			return nil, false
		}
	}
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
	if h.dead.Load() {
		return true
	}
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
	h.stdin, h.stdout = stdin, bufio.NewReaderSize(stdout, 32<<10)
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
// time (nothing after it is consumed; r buffers for the frames after).
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

// takeHeld returns the idle privileged shell, for good, or a new one with
// line already sent. A frame running on the idle one (a short read, as a
// rule: runOnHeld) is waited for up to heldTakeWait, a sudo's time; a
// longer one leaves it be and a new sudo starts.
func (s *SSH) takeHeld(ctx context.Context, line string) (*heldShell, error) {
	s.heldMu.Lock()
	h := s.held
	s.heldMu.Unlock()
	if h != nil && !h.ended() && lockWithin(ctx, &h.runMu, heldTakeWait) {
		s.heldMu.Lock()
		if s.held == h && !h.ended() {
			s.held = nil
			s.heldMu.Unlock()
			return h, nil // runMu stays locked: the shell is this command's
		}
		s.heldMu.Unlock()
		h.runMu.Unlock()
	}
	return s.startHeld(ctx, line, "")
}

// heldTakeWait is how long a command that takes the held shell waits for
// a frame running on it (about what a new sudo costs a busy node).
const heldTakeWait = 150 * time.Millisecond

// lockWithin locks mu if it can within d.
func lockWithin(ctx context.Context, mu *sync.Mutex, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if mu.TryLock() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// runOnHeld runs line as a frame on the held shell (the idle one, or a
// new one it then leaves held), so that the shell stays for the next
// Become command: for commands with no stdin that collect their output
// (reads). ok is false when the held shell is busy with another frame:
// the caller runs the command as before, on a new sudo.
func (s *SSH) runOnHeld(ctx context.Context, line string, stdout, stderr io.Writer) (err error, ok bool) {
	h, err := s.frameShell(ctx)
	if err != nil {
		return err, true
	}
	if h == nil {
		return nil, false
	}
	return s.runFrameOn(ctx, h, line, stdout, stderr), true
}

// frameShell returns the held shell locked for a frame (runMu), starting
// one when there is none; nil when it is busy.
func (s *SSH) frameShell(ctx context.Context) (*heldShell, error) {
	s.heldMu.Lock()
	h := s.held
	s.heldMu.Unlock()
	if h == nil || h.ended() {
		nh, err := s.startHeld(ctx, "", "")
		if err != nil {
			return nil, err
		}
		s.heldMu.Lock()
		if s.held == nil || s.held.ended() {
			s.held = nh
		}
		h = s.held
		s.heldMu.Unlock()
		if h != nh {
			nh.sess.Close() // another command's shell won: one is enough
		}
	}
	if !h.runMu.TryLock() {
		return nil, nil
	}
	s.heldMu.Lock()
	idle := s.held == h && !h.ended()
	s.heldMu.Unlock()
	if !idle {
		h.runMu.Unlock()
		return nil, nil
	}
	return h, nil
}

// runFrameOn runs line as a frame on h (locked by frameShell) and
// unlocks it; a frame that did not end with its boundary (cancelled, the
// session broken) drops the shell.
func (s *SSH) runFrameOn(ctx context.Context, h *heldShell, line string, stdout, stderr io.Writer) error {
	defer h.runMu.Unlock()
	err := h.runFrame(ctx, line, stdout, stderr)
	var he *heldExit
	if err == nil || errors.As(err, &he) {
		return err
	}
	h.dead.Store(true)
	h.sess.Close()
	s.heldMu.Lock()
	if s.held == h {
		s.held = nil
	}
	s.heldMu.Unlock()
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return err
	}
	return s.connErr("run on the privileged shell", err)
}

// runFrame runs line on h as a frame (heldScript): its output up to the
// boundary to stdout and stderr, its exit status as a *heldExit. h.runMu
// is held. On ctx's end the session is sent SIGTERM (the shell takes the
// child down) and ctx's error returned.
func (h *heldShell) runFrame(ctx context.Context, line string, stdout, stderr io.Writer) error {
	var rb [16]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return err
	}
	tok := "sparkform-frame-" + hex.EncodeToString(rb[:])
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	if _, err := io.WriteString(h.stdin, fmt.Sprintf("r %s %d\n%s", tok, strings.Count(line, "\n"), line)); err != nil {
		return err
	}
	type result struct {
		code int
		err  error
	}
	resc := make(chan result, 1)
	go func() {
		mark := []byte(tok + " ")
		for {
			l, err := h.stdout.ReadBytes('\n')
			if i := bytes.Index(l, mark); i >= 0 {
				_, _ = stdout.Write(l[:i])
				code, cerr := strconv.Atoi(strings.TrimSpace(string(l[i+len(mark):])))
				if cerr != nil {
					err = fmt.Errorf("the privileged shell's frame ended with %q", l[i:])
				}
				resc <- result{code, err}
				return
			}
			_, _ = stdout.Write(l)
			if err != nil {
				resc <- result{0, err}
				return
			}
		}
	}()
	var res result
	select {
	case res = <-resc:
	case <-ctx.Done():
		_ = h.sess.Signal(ssh.SIGTERM)
		return ctx.Err()
	}
	if res.err != nil {
		return res.err
	}
	errb, ok := h.stderr.cutThrough([]byte(tok+"\n"), h.done)
	if !ok {
		return errors.New("the privileged shell ended")
	}
	_, _ = stderr.Write(errb)
	return exitErr(res.code, "")
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
// SIGTERM and the session closed, as Run does. What earlier frames left
// on stderr is theirs, already cut.
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
// core's own, or through the relay the core's. A command with no stdin
// whose output is collected (a read) runs as a frame and leaves the
// shell held for the next; any other takes it.
func (s *SSH) runBecome(ctx context.Context, c Cmd, stdout, stderr io.Writer) error {
	line := CommandLine(c, false)
	reuse := c.Stdin == nil && c.Stdout == nil
	if s.relayed {
		return s.runRelayedHeld(ctx, line, reuse, c.Stdin, stdout, stderr)
	}
	if reuse {
		if err, ok := s.runOnHeld(ctx, line, stdout, stderr); ok {
			return err
		}
	}
	h, err := s.takeHeld(ctx, line)
	if err != nil {
		return err
	}
	return h.execOn(ctx, line, c.Stdin, stdout, stderr)
}

// heldReuse prefixes a heldChannel's line that may run as a frame
// (runOnHeld); a line never holds a NUL.
const heldReuse = "frame\x00"

// runRelayedHeld is runBecome in a plugin: a heldChannel on the relay.
func (s *SSH) runRelayedHeld(ctx context.Context, line string, reuse bool, stdin io.Reader, stdout, stderr io.Writer) error {
	extra := line
	if reuse {
		extra = heldReuse + line
	}
	ch, reqs, err := s.client.OpenChannel(heldChannel, []byte(extra))
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

// cancelOnSignal returns a context cancelled when the plugin's side of a
// held channel sends a signal (its command was cancelled), answering
// the channel's other requests no.
func cancelOnSignal(ctx context.Context, reqs <-chan *ssh.Request) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		for req := range reqs {
			if req.Type == "signal" {
				cancel()
			}
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
	}()
	return cctx, cancel
}

// sendExitStatus ends a relayed held channel's command the way a
// session's ends: with its exit status.
func sendExitStatus(ch ssh.Channel, code uint32) {
	_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{code}))
}

// forwardFrame serves a plugin's heldChannel whose line may run as a
// frame (heldReuse) on up's held shell; false, with nc untouched, when
// that shell is busy or cannot start (forwardHeld then serves it as any
// other, sudo's refusal included).
func forwardFrame(ctx context.Context, up *SSH, nc ssh.NewChannel, line string) bool {
	h, err := up.frameShell(ctx)
	if err != nil || h == nil {
		return false
	}
	lch, lreqs, err := nc.Accept()
	if err != nil {
		h.runMu.Unlock()
		return true
	}
	defer lch.Close()
	cctx, cancel := cancelOnSignal(ctx, lreqs)
	defer cancel()
	werr := up.runFrameOn(cctx, h, line, lch, lch.Stderr())
	var he *heldExit
	switch {
	case werr == nil:
		sendExitStatus(lch, 0)
	case errors.As(werr, &he):
		sendExitStatus(lch, uint32(he.code))
	default:
		// Cancelled or the shell lost: no status, as a session cut short
		// (the plugin's side reports the connection).
		_, _ = io.WriteString(lch.Stderr(), werr.Error())
	}
	_ = lch.CloseWrite()
	return true
}

// forwardHeld serves a plugin's heldChannel: the line runs on the held
// shell of up (the node's one connection), its output and exit status go
// back as a session's would.
func forwardHeld(ctx context.Context, up *SSH, nc ssh.NewChannel) {
	if !takeSlot(ctx, up, nc) {
		return
	}
	defer func() { <-up.slots }()
	line, reuse := strings.CutPrefix(string(nc.ExtraData()), heldReuse)
	if reuse && forwardFrame(ctx, up, nc, line) {
		return
	}
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
		sendExitStatus(lch, uint32(ee.ExitCode))
		return
	}
	cctx, cancel := cancelOnSignal(ctx, lreqs)
	defer cancel()
	werr := h.execOn(cctx, line, lch, lch, lch.Stderr())
	var se *ssh.ExitError
	switch {
	case werr == nil:
		sendExitStatus(lch, 0)
	case errors.As(werr, &se) && se.Signal() != "":
		_, _ = lch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{Signal: se.Signal()}))
	case errors.As(werr, &se):
		sendExitStatus(lch, uint32(se.ExitStatus()))
	}
	_ = lch.CloseWrite()
}
