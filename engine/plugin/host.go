package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/proto"
)

// Options configure a Host.
type Options struct {
	// SelfExe is the sparkform binary; built-in providers run as
	// `SelfExe internal-plugin NAME` (go-plugin handshake over that process).
	SelfExe string
	// Builtins are the provider names served by SelfExe. With two or more,
	// one process serves them all (`SelfExe internal-plugin NAME...`,
	// sdk.ServeShared): it starts when the first is asked for.
	Builtins []string
	// BuiltinFrames name, per built-in provider, the prefix of its
	// functions in a Go stack trace (its package path and "."): when the
	// shared process panics, the diagnostic names the provider whose code
	// panicked. Optional.
	BuiltinFrames map[string]string
	// PluginDirs are searched, in order, for `sparkform-provider-NAME`.
	PluginDirs []string
	// Logger receives the host's and the plugins' log lines; may be nil.
	Logger hclog.Logger
	// Notice receives the lines plugins write for the user (sdk.Notice),
	// such as a connection being retried; nil logs them as warnings.
	Notice func(msg string)
	// Env is added to every plugin's environment ("K=V"), such as the
	// address of the node connection relay (providers/node.Relay).
	Env []string
	// InProcess are providers served in this process, not as plugins,
	// made on first use: only providers whose calls reach no node and
	// do no I/O (sparkform_data), for which a plugin adds nothing but
	// the encoding and round trip of every call (OpenTofu serves
	// terraform_data so too). A panic in one is its call's error. They
	// win over Builtins of the same name, and make no RPCs (Stats).
	InProcess map[string]func() sdk.Provider
	// StartTimeout bounds a plugin's start: the handshake line, and its
	// gRPC server answering at the address it announced. Zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
}

// DefaultStartTimeout is how long a plugin may take to start: a Go
// binary on a loaded machine starts in well under a second; a plugin
// silent this long is not going to speak.
const DefaultStartTimeout = 30 * time.Second

// StderrTailSize is how much of a plugin's stderr is kept for diagnostics.
const StderrTailSize = 8 << 10

// ExecPrefix is the file name prefix of an external provider plugin.
const ExecPrefix = "sparkform-provider-"

// How long a failed call waits for a dying plugin to finish exiting, so
// that the diagnostic can say "crashed" and quote its last words.
const exitGrace = 3 * time.Second

// The RPC methods of the provider service, as counted by Stats.
// A session (PlanResourceChanges, ApplyResourceChanges) counts once per
// stream opened; METHOD+batchSuffix counts the messages the engine sent
// on it, each carrying every call that was ready at that moment, and
// METHOD+itemSuffix the calls (items) they carried.
var methods = []string{"GetSchema", "ValidateResourceConfigs", "ReadResources",
	"PlanResourceChanges", "PlanResourceChanges" + batchSuffix, "PlanResourceChanges" + itemSuffix,
	"ApplyResourceChanges", "ApplyResourceChanges" + batchSuffix, "ApplyResourceChanges" + itemSuffix, "ImportResource", "Stop", "ReadStatus", "Logs"}

const (
	batchSuffix = " messages"
	itemSuffix  = " items"
)

// serviceName is the provider protocol's gRPC service; a provider in the
// built-ins' shared process is served under sdk.SharedService(name).
var serviceName = proto.Provider_ServiceDesc.ServiceName

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Host starts provider plugins lazily and routes calls to them. It is safe
// for concurrent use.
type Host struct {
	opts Options
	log  hclog.Logger

	mu      sync.Mutex
	closed  bool
	plugins map[string]*instance
	procs   []*process            // every process started, for Close
	inproc  map[string]*inProcess // Options.InProcess, made so far

	sharedMu sync.Mutex // serialises the start of the built-ins' process
	shared   *process
}

// instance is one provider, started or not.
type instance struct {
	name  string
	log   hclog.Logger
	calls map[string]*atomic.Int64 // fixed keys: read without a lock

	startMu sync.Mutex // serialises the start
	proc    *process   // set before prov
	prov    atomic.Pointer[sdk.GRPCClient]
}

// process is one plugin process: a provider's own, or the one serving
// every built-in provider.
type process struct {
	client  *goplugin.Client
	rpc     goplugin.ClientProtocol
	cmd     *exec.Cmd // its ProcessState says how the plugin ended
	sockDir string    // the folder of the plugin's socket (see start)
	// lifeline is this end of the plugin's lifeline (addLifeline): held
	// open while the plugin runs, closed when it is killed.
	lifeline *os.File
	stderr   *ring
	shared   []string          // the providers it serves when it serves several
	frames   map[string]string // Options.BuiltinFrames, when shared
}

// NewHost returns a Host; nothing starts until a provider is asked for.
func NewHost(opts Options) *Host {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	// Socket folders of sparkform processes that are gone (killed before
	// their plugin could remove them) go now, started plugin or not.
	for _, base := range []string{os.TempDir(), "/tmp"} {
		sdk.SweepStaleDirs(base, sdk.SocketDirPrefix)
	}
	return &Host{opts: opts, log: log, plugins: map[string]*instance{}}
}

// Provider returns the named provider, starting its plugin on first use.
func (h *Host) Provider(ctx context.Context, name string) (sdk.Provider, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	h.mu.Unlock()
	if ip := h.inProcessProvider(name); ip != nil {
		return ip, nil
	}
	h.mu.Lock()
	inst := h.instanceLocked(name)
	h.mu.Unlock()

	if p := inst.prov.Load(); p != nil {
		return p, nil
	}
	inst.startMu.Lock()
	defer inst.startMu.Unlock()
	if p := inst.prov.Load(); p != nil {
		return p, nil
	}
	var proc *process
	dispense := sdk.PluginName
	if h.sharedBuiltin(name) {
		p, err := h.sharedProcess()
		if err != nil {
			return nil, err
		}
		proc, dispense = p, name
	} else {
		cmd, err := h.command(name)
		if err != nil {
			return nil, err
		}
		plugins := goplugin.PluginSet{sdk.PluginName: &sdk.GRPCProviderPlugin{}}
		route := func(service string) *instance {
			if service != serviceName {
				return nil
			}
			return inst
		}
		p, err := h.start(fmt.Sprintf("provider %q", name), inst.log, cmd, plugins, route)
		if err != nil {
			return nil, err
		}
		proc = p
	}
	raw, err := proc.rpc.Dispense(dispense)
	prov, ok := raw.(*sdk.GRPCClient)
	if err == nil && !ok {
		err = fmt.Errorf("dispensed %T, not a provider", raw)
	}
	if err != nil {
		if proc.shared != nil { // the others it serves carry on
			return nil, fmt.Errorf("%w: provider %q (%s): %v", ErrPluginStart, name, strings.Join(proc.cmd.Args, " "), err)
		}
		return nil, proc.startError(fmt.Sprintf("provider %q", name), err)
	}
	inst.proc = proc
	prov.OnRPCError = inst.rpcError
	inst.prov.Store(prov)
	inst.log.Debug("provider plugin started", "cmd", strings.Join(proc.cmd.Args, " "))
	return prov, nil
}

// instanceLocked returns provider name's instance, made on first use.
// h.mu is held.
func (h *Host) instanceLocked(name string) *instance {
	inst := h.plugins[name]
	if inst == nil {
		inst = &instance{name: name, log: h.log.Named(name), calls: map[string]*atomic.Int64{}}
		for _, m := range methods {
			inst.calls[m] = new(atomic.Int64)
		}
		h.plugins[name] = inst
	}
	return inst
}

// sharedBuiltin says whether provider name is served by the built-ins'
// shared process: a built-in, when there are several.
func (h *Host) sharedBuiltin(name string) bool {
	return len(h.opts.Builtins) > 1 && nameRE.MatchString(name) && slices.Contains(h.opts.Builtins, name)
}

// sharedProcess returns the process serving every built-in provider,
// starting it on first use: one process start (a Go runtime, the
// handshake) per run instead of one per built-in provider.
func (h *Host) sharedProcess() (*process, error) {
	h.sharedMu.Lock()
	defer h.sharedMu.Unlock()
	if h.shared != nil {
		return h.shared, nil
	}
	if h.opts.SelfExe == "" {
		return nil, fmt.Errorf("built-in providers cannot start: the plugin host was given no sparkform executable (Options.SelfExe)")
	}
	names := slices.Clone(h.opts.Builtins)
	slices.Sort(names)
	cmd := exec.Command(h.opts.SelfExe, append([]string{"internal-plugin"}, names...)...)
	plugins := goplugin.PluginSet{}
	for _, n := range names {
		plugins[n] = &sdk.GRPCProviderPlugin{Name: n}
	}
	route := func(service string) *instance {
		n, ok := strings.CutPrefix(service, sharedServicePrefix)
		if !ok {
			return nil
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.plugins[n]
	}
	p, err := h.start("built-in providers "+strings.Join(names, ", "), h.log.Named("builtin"), cmd, plugins, route)
	if err != nil {
		return nil, err
	}
	p.shared, p.frames = names, h.opts.BuiltinFrames
	h.shared = p
	return p, nil
}

// sharedServicePrefix starts the gRPC service of a provider in the
// shared process (sdk.SharedService).
var sharedServicePrefix = sdk.SharedService("")

// command finds how to run provider name.
func (h *Host) command(name string) (*exec.Cmd, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("%w %q: a provider name is lower-case letters, digits and dashes (it is the part of a resource type before the first underscore)", ErrUnknownProvider, name)
	}
	if slices.Contains(h.opts.Builtins, name) {
		if h.opts.SelfExe == "" {
			return nil, fmt.Errorf("built-in provider %q cannot start: the plugin host was given no sparkform executable (Options.SelfExe)", name)
		}
		return exec.Command(h.opts.SelfExe, "internal-plugin", name), nil // the only built-in
	}
	file := ExecPrefix + name
	var notExec []string
	for _, dir := range h.opts.PluginDirs {
		path := filepath.Join(dir, file)
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			notExec = append(notExec, path)
			continue
		}
		return exec.Command(path), nil
	}
	builtins := "none"
	if len(h.opts.Builtins) > 0 {
		builtins = strings.Join(h.opts.Builtins, ", ")
	}
	dirs := "no plugin directories are configured"
	if len(h.opts.PluginDirs) > 0 {
		dirs = "searched " + strings.Join(h.opts.PluginDirs, ", ")
	}
	msg := fmt.Sprintf("%v %q: it is not built in (built-ins: %s) and no executable %s was found (%s). Install the plugin into one of those directories or fix the resource type's prefix",
		ErrUnknownProvider, name, builtins, file, dirs)
	if len(notExec) > 0 {
		msg += fmt.Sprintf("; found %s but it is not an executable file (chmod +x?)", strings.Join(notExec, ", "))
	}
	return nil, wrapped{msg: msg, err: ErrUnknownProvider}
}

// wrapped is an error with its own message that still matches a sentinel.
type wrapped struct {
	msg string
	err error
}

func (w wrapped) Error() string { return w.msg }
func (w wrapped) Unwrap() error { return w.err }

// start starts a plugin process serving plugins; what names the
// provider(s) in messages; route finds the provider an RPC's service is
// for (its calls are counted there). Close kills what it started.
func (h *Host) start(what string, log hclog.Logger, cmd *exec.Cmd, plugins goplugin.PluginSet, route func(service string) *instance) (*process, error) {
	p := &process{cmd: cmd, stderr: newRing(StderrTailSize)}
	timeout := h.opts.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	// A process group of its own: a plugin that fails to start is killed
	// with everything it started, which may hold its stdout and stderr
	// open (go-plugin waits for those to close, forever).
	setProcessGroup(cmd)
	// The lifeline: the plugin's end of a pipe whose other end only this
	// process holds. When this process dies, however it dies, the plugin
	// reads EOF and exits, removing its socket (sdk.Serve).
	lifeline, theirs, err := addLifeline(cmd)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrPluginStart, what, err)
	}
	p.lifeline = lifeline
	// The plugin makes its socket in a folder of its own, which goes when
	// the plugin is killed or closed here, and which the plugin removes
	// itself when it outlives this process (sdk.Serve): an orphan left
	// behind no /tmp/plugin* socket.
	sockDir, err := socketDir()
	if err != nil {
		lifeline.Close()
		theirs.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrPluginStart, what, err)
	}
	p.sockDir = sockDir
	if sockDir != "" || len(h.opts.Env) > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, h.opts.Env...)
	}
	if sockDir != "" {
		cmd.Env = append(cmd.Env, goplugin.EnvUnixSocketDir+"="+sockDir)
	}
	// calls finds the counters of an RPC's provider and method.
	calls := func(method string) (*instance, string) {
		service, m, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
		if !ok {
			return nil, ""
		}
		return route(service), m
	}
	count := func(method string) {
		if inst, m := calls(method); inst != nil {
			if c := inst.calls[m]; c != nil {
				c.Add(1)
			}
		}
	}
	syncLog := &lineLogger{log: func(line string) {
		if msg, ok := strings.CutPrefix(line, sdk.NoticePrefix); ok {
			h.notice(msg)
			return
		}
		log.Debug(line)
	}}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		StartTimeout:     timeout,
		Plugins:          plugins,
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           log,
		// Stderr is the process's fd 2 (panics, early failures); SyncStderr
		// is what the plugin writes to os.Stderr once serving.
		Stderr:     p.stderr,
		SyncStderr: io.MultiWriter(p.stderr, syncLog),
		SyncStdout: &lineLogger{log: func(line string) { log.Debug(line) }},
		GRPCDialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				count(method)
				return invoker(ctx, method, req, reply, cc, opts...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				count(method)
				cs, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil || !desc.ClientStreams {
					return cs, err
				}
				inst, name := calls(method)
				if inst == nil {
					return cs, nil
				}
				return &countingStream{ClientStream: cs, sent: inst.calls[name+batchSuffix], items: inst.calls[name+itemSuffix]}, nil
			}),
		},
	})
	p.client = client
	started := time.Now()
	rpc, err := client.Client()
	theirs.Close() // the plugin has its own copy (or never started)
	if err != nil {
		return nil, p.startError(what, handshakeError(err, timeout))
	}
	p.rpc = rpc
	// The handshake names an address; a plugin that is not serving there
	// would leave the first call waiting on its connection. Ask its health
	// service, within what is left of the start timeout.
	if err := checkServing(rpc, timeout-time.Since(started)); err != nil {
		return nil, p.startError(what, fmt.Errorf("it cannot be reached at the address it announced (%s): %v", client.ReattachConfig().Addr, err))
	}
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.procs = append(h.procs, p)
	}
	h.mu.Unlock()
	if closed { // Close ran while the plugin was starting: do not leak it
		p.kill()
		return nil, ErrClosed
	}
	return p, nil
}

// startError kills a process that did not start serving and says why,
// quoting its stderr.
func (p *process) startError(what string, err error) error {
	killGroup(p.cmd) // whatever it started goes with it, at once
	p.kill()
	tail := p.stderr.Tail()
	if tail != "" {
		tail = "\n\nLast output of the plugin (stderr):\n" + tail
	}
	return fmt.Errorf("%w: %s (%s): %v%s", ErrPluginStart, what, strings.Join(p.cmd.Args, " "), err, tail)
}

// countingStream counts the messages sent on a session stream, and the
// items they carry.
type countingStream struct {
	grpc.ClientStream
	sent, items *atomic.Int64
}

func (s *countingStream) SendMsg(m any) error {
	if s.sent != nil {
		s.sent.Add(1)
	}
	if s.items != nil {
		switch b := m.(type) {
		case *proto.PlanResourceChanges_Batch:
			s.items.Add(int64(len(b.Items)))
		case *proto.ApplyResourceChanges_Batch:
			s.items.Add(int64(len(b.Items)))
		}
	}
	return s.ClientStream.SendMsg(m)
}

// rpcError is the diagnostic for an RPC that failed in transport. A plugin
// that died is the usual cause: say so, and quote its stderr.
func (inst *instance) rpcError(op, address string, err error) sdk.Diagnostic {
	p := inst.proc
	if status.Code(err) == codes.Unavailable {
		deadline := time.Now().Add(exitGrace)
		for !p.client.Exited() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	what := op
	if address != "" {
		what += " of " + address
	}
	if p.client.Exited() {
		tail := p.stderr.Tail()
		if tail == "" {
			tail = "(nothing)"
		}
		const after = "Work it finished is in state; the instance it was working on may be half-changed, and the next plan refreshes it.\n\n" +
			"Last output of the plugin (stderr):\n%s"
		// Which process: a provider's own, or the one every built-in
		// provider shares (all of them ended with it).
		proc := fmt.Sprintf("The plugin process of provider %q", inst.name)
		if p.shared != nil {
			proc = "The shared plugin process of the built-in providers " + strings.Join(p.shared, ", ")
			what += fmt.Sprintf(" (provider %q)", inst.name)
		}
		// Exited() is set after the process was waited for, so
		// ProcessState is there to read.
		if ps := p.cmd.ProcessState; ps != nil {
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				sig := ws.Signal()
				return sdk.Errorf(nil, fmt.Sprintf("Provider %q was killed", inst.name),
					"%s (pid %d) was killed by signal %s (%s, %d) during %s. "+
						"Something outside sparkform stopped it: a kill, the kernel's out-of-memory killer, a service manager. "+
						"Run the command again once whatever killed it is dealt with. "+after,
					proc, ps.Pid(), signalName(sig), sig, int(sig), what, tail)
			}
			culprit, bug := inst.name, "This is a bug in the provider."
			if p.shared != nil {
				culprit, bug = "", "This is a bug in one of the built-in providers."
				if c := panicked(tail, p.frames); c != "" {
					culprit, bug = c, fmt.Sprintf("Provider %q panicked (its stack is below): this is a bug in provider %q.", c, c)
				}
			}
			title := fmt.Sprintf("Provider %q crashed", culprit)
			if culprit == "" {
				title = fmt.Sprintf("The built-in providers' plugin crashed during a call of provider %q", inst.name)
			}
			return sdk.Errorf(nil, title, "%s (pid %d) exited with status %d during %s. %s "+after,
				proc, ps.Pid(), ps.ExitCode(), what, bug, tail)
		}
		return sdk.Errorf(nil, fmt.Sprintf("Provider %q crashed", inst.name),
			"%s exited during %s. This is a bug in the provider. "+after, proc, what, tail)
	}
	msg := err.Error()
	if st, ok := status.FromError(err); ok {
		msg = st.Message()
	}
	return sdk.Errorf(nil, fmt.Sprintf("Provider %q call failed", inst.name), "%s: %s", what, msg)
}

// panicked names the built-in provider whose code panicked, from the Go
// panic in a plugin's stderr: the first function of the panicking
// goroutine's stack that is in one of frames (provider name -> function
// name prefix). "" when there is no panic or no such function.
func panicked(stderr string, frames map[string]string) string {
	i := strings.LastIndex(stderr, "\npanic: ")
	if i < 0 && strings.HasPrefix(stderr, "panic: ") {
		i = 0
	}
	if i < 0 || len(frames) == 0 {
		return ""
	}
	rest := stderr[i:]
	g := strings.Index(rest, "\ngoroutine ")
	if g < 0 {
		return ""
	}
	for _, line := range strings.Split(rest[g+1:], "\n")[1:] {
		if line == "" {
			break // the end of the panicking goroutine's stack
		}
		if strings.HasPrefix(line, "\t") {
			continue // a file:line
		}
		for name, prefix := range frames {
			if strings.HasPrefix(line, prefix) {
				return name
			}
		}
	}
	return ""
}

// Schema returns the schema of the named provider (starting it if need
// be). The sdk client caches it: one GetSchema RPC per plugin.
func (h *Host) Schema(ctx context.Context, name string) (*sdk.Schema, error) {
	p, err := h.Provider(ctx, name)
	if err != nil {
		return nil, err
	}
	s, diags := p.GetSchema(ctx)
	if err := diags.Err(); err != nil {
		return nil, fmt.Errorf("provider %q: %w", name, err)
	}
	return s, nil
}

// started returns the providers whose plugin is running (or ran).
func (h *Host) started() []*instance {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*instance
	for _, inst := range h.plugins {
		if inst.prov.Load() != nil {
			out = append(out, inst)
		}
	}
	return out
}

// Stats returns, for every started provider, the number of RPCs made per
// method (methods never called are left out).
func (h *Host) Stats() map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, inst := range h.started() {
		m := map[string]int64{}
		for name, c := range inst.calls {
			if n := c.Load(); n > 0 {
				m[name] = n
			}
		}
		out[inst.name] = m
	}
	return out
}

// Stop asks every started provider to stop in-flight work (first Ctrl-C).
// It waits for the Stop calls, not for the work to end.
func (h *Host) Stop(ctx context.Context) {
	var wg sync.WaitGroup
	for _, inst := range h.started() {
		wg.Go(func() {
			if err := inst.prov.Load().Stop(ctx); err != nil {
				inst.log.Warn("provider did not stop cleanly", "error", err)
			}
		})
	}
	for _, ip := range h.inProcessStarted() {
		wg.Go(func() {
			if err := ip.Stop(ctx); err != nil {
				ip.log.Warn("provider did not stop cleanly", "error", err)
			}
		})
	}
	wg.Wait()
}

// Close kills every plugin process and starts no more. In-flight calls
// fail. It waits until the processes are gone.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	var wg sync.WaitGroup
	for name, calls := range h.Stats() {
		h.log.Debug("provider calls", "provider", name, "calls", fmt.Sprint(calls))
	}
	h.mu.Lock()
	procs := h.procs
	h.mu.Unlock()
	for _, p := range procs {
		wg.Go(p.kill)
	}
	wg.Wait()
}

// notice shows a plugin's line for the user (Options.Notice).
func (h *Host) notice(msg string) {
	if h.opts.Notice != nil {
		h.opts.Notice(msg)
		return
	}
	h.log.Warn(msg)
}

// maxSocketPath is the longest unix socket path the kernel takes
// (sun_path holds 108 bytes with the NUL).
const maxSocketPath = 107

// socketDir makes the folder for a plugin's socket: in TMPDIR, or in /tmp
// when TMPDIR is so deep that the socket's path would be too long for the
// kernel; "" (go-plugin's own choice) when neither will do. The folder's
// name holds this process's pid, and the folders of processes that are
// gone are removed first (sdk.SweepStaleDirs).
func socketDir() (string, error) {
	sock := len("/" + sdk.SocketDirPrefix + "1234567-1234567890/plugin1234567890")
	for _, base := range []string{os.TempDir(), "/tmp"} {
		if len(base)+sock > maxSocketPath {
			continue
		}
		sdk.SweepStaleDirs(base, sdk.SocketDirPrefix)
		return os.MkdirTemp(base, fmt.Sprintf("%s%d-", sdk.SocketDirPrefix, os.Getpid()))
	}
	return "", nil
}

// killWait bounds how long kill waits for go-plugin's Kill: it returns
// only when the plugin's stdout and stderr are closed, which a process
// the plugin started can hold open for ever.
const killWait = 5 * time.Second

// kill stops the plugin (gracefully first, as go-plugin does) and removes
// its socket folder. When go-plugin's Kill does not return in killWait,
// the plugin's process group is killed, closing the pipes it waits on;
// kill returns after at most twice killWait.
func (p *process) kill() {
	done := make(chan struct{})
	go func() {
		p.client.Kill()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(killWait):
		killGroup(p.cmd)
		select {
		case <-done:
		case <-time.After(killWait):
		}
	}
	if p.lifeline != nil {
		p.lifeline.Close()
	}
	if p.sockDir != "" {
		os.RemoveAll(p.sockDir)
	}
}

// signalName is the conventional name of sig ("SIGKILL").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
