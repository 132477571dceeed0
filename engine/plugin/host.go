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
	// Builtins are the provider names served by SelfExe.
	Builtins []string
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
}

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
	"ApplyResourceChanges", "ApplyResourceChanges" + batchSuffix, "ApplyResourceChanges" + itemSuffix, "ImportResource", "Stop"}

const (
	batchSuffix = " messages"
	itemSuffix  = " items"
)

const servicePrefix = "/sparkform.provider.v1.Provider/"

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Host starts provider plugins lazily and routes calls to them. It is safe
// for concurrent use.
type Host struct {
	opts Options
	log  hclog.Logger

	mu      sync.Mutex
	closed  bool
	plugins map[string]*instance
}

// instance is one provider plugin, started or not.
type instance struct {
	name   string
	log    hclog.Logger
	stderr *ring
	calls  map[string]*atomic.Int64 // fixed keys: read without a lock

	startMu sync.Mutex // serialises the start
	client  *goplugin.Client
	cmd     *exec.Cmd // its ProcessState says how the plugin ended
	sockDir string    // the folder of the plugin's socket (see start)
	prov    atomic.Pointer[sdk.GRPCClient]
}

// NewHost returns a Host; nothing starts until a provider is asked for.
func NewHost(opts Options) *Host {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
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
	inst := h.plugins[name]
	if inst == nil {
		inst = &instance{name: name, log: h.log.Named(name), stderr: newRing(StderrTailSize), calls: map[string]*atomic.Int64{}}
		for _, m := range methods {
			inst.calls[m] = new(atomic.Int64)
		}
		h.plugins[name] = inst
	}
	h.mu.Unlock()

	if p := inst.prov.Load(); p != nil {
		return p, nil
	}
	inst.startMu.Lock()
	defer inst.startMu.Unlock()
	if p := inst.prov.Load(); p != nil {
		return p, nil
	}
	cmd, err := h.command(name)
	if err != nil {
		return nil, err
	}
	if err := h.start(inst, cmd); err != nil {
		return nil, err
	}
	// Close may have run while the plugin was starting: do not leak it.
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		inst.kill()
		return nil, ErrClosed
	}
	return inst.prov.Load(), nil
}

// command finds how to run provider name.
func (h *Host) command(name string) (*exec.Cmd, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("%w %q: a provider name is lower-case letters, digits and dashes (it is the part of a resource type before the first underscore)", ErrUnknownProvider, name)
	}
	if slices.Contains(h.opts.Builtins, name) {
		if h.opts.SelfExe == "" {
			return nil, fmt.Errorf("built-in provider %q cannot start: the plugin host was given no sparkform executable (Options.SelfExe)", name)
		}
		return exec.Command(h.opts.SelfExe, "internal-plugin", name), nil
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

func (h *Host) start(inst *instance, cmd *exec.Cmd) error {
	// The plugin makes its socket in a folder of its own, which goes when
	// the plugin is killed or closed here, and which the plugin removes
	// itself when it outlives this process (sdk.Serve): an orphan left
	// behind no /tmp/plugin* socket.
	sockDir, err := socketDir()
	if err != nil {
		return fmt.Errorf("%w: provider %q: %v", ErrPluginStart, inst.name, err)
	}
	inst.sockDir = sockDir
	if sockDir != "" || len(h.opts.Env) > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, h.opts.Env...)
	}
	if sockDir != "" {
		cmd.Env = append(cmd.Env, goplugin.EnvUnixSocketDir+"="+sockDir)
	}
	count := func(method string) {
		if m, ok := strings.CutPrefix(method, servicePrefix); ok {
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
		inst.log.Debug(line)
	}}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		Plugins:          goplugin.PluginSet{sdk.PluginName: &sdk.GRPCProviderPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           inst.log,
		// Stderr is the process's fd 2 (panics, early failures); SyncStderr
		// is what the plugin writes to os.Stderr once serving.
		Stderr:     inst.stderr,
		SyncStderr: io.MultiWriter(inst.stderr, syncLog),
		SyncStdout: &lineLogger{log: func(line string) { inst.log.Debug(line) }},
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
				name := strings.TrimPrefix(method, servicePrefix)
				return &countingStream{ClientStream: cs, sent: inst.calls[name+batchSuffix], items: inst.calls[name+itemSuffix]}, nil
			}),
		},
	})
	fail := func(err error) error {
		client.Kill()
		if sockDir != "" {
			os.RemoveAll(sockDir)
		}
		tail := inst.stderr.Tail()
		if tail != "" {
			tail = "\n\nLast output of the plugin (stderr):\n" + tail
		}
		return fmt.Errorf("%w: provider %q (%s): %v%s", ErrPluginStart, inst.name, strings.Join(cmd.Args, " "), err, tail)
	}
	rpc, err := client.Client()
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "incompatible api version") {
			err = fmt.Errorf("it speaks another version of the provider protocol than this sparkform, which speaks version %d (%v). "+
				"Use a build of the provider made against this sparkform's providers/sdk", sdk.ProtocolVersion, err)
		}
		return fail(err)
	}
	raw, err := rpc.Dispense(sdk.PluginName)
	if err != nil {
		return fail(err)
	}
	prov, ok := raw.(*sdk.GRPCClient)
	if !ok {
		return fail(fmt.Errorf("dispensed %T, not a provider", raw))
	}
	inst.client, inst.cmd = client, cmd
	prov.OnRPCError = inst.rpcError
	inst.prov.Store(prov)
	inst.log.Debug("provider plugin started", "cmd", strings.Join(cmd.Args, " "))
	return nil
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
	if status.Code(err) == codes.Unavailable {
		deadline := time.Now().Add(exitGrace)
		for !inst.client.Exited() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	what := op
	if address != "" {
		what += " of " + address
	}
	if inst.client.Exited() {
		tail := inst.stderr.Tail()
		if tail == "" {
			tail = "(nothing)"
		}
		const after = "Work it finished is in state; the instance it was working on may be half-changed, and the next plan refreshes it.\n\n" +
			"Last output of the plugin (stderr):\n%s"
		// Exited() is set after the process was waited for, so
		// ProcessState is there to read.
		if ps := inst.cmd.ProcessState; ps != nil {
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				sig := ws.Signal()
				return sdk.Errorf(nil, fmt.Sprintf("Provider %q was killed", inst.name),
					"The plugin process of provider %q (pid %d) was killed by signal %s (%s, %d) during %s. "+
						"Something outside sparkform stopped it: a kill, the kernel's out-of-memory killer, a service manager. "+
						"Run the command again once whatever killed it is dealt with. "+after,
					inst.name, ps.Pid(), signalName(sig), sig, int(sig), what, tail)
			}
			return sdk.Errorf(nil, fmt.Sprintf("Provider %q crashed", inst.name),
				"The plugin process of provider %q (pid %d) exited with status %d during %s. This is a bug in the provider. "+after,
				inst.name, ps.Pid(), ps.ExitCode(), what, tail)
		}
		return sdk.Errorf(nil, fmt.Sprintf("Provider %q crashed", inst.name),
			"The plugin process of provider %q exited during %s. This is a bug in the provider. "+after, inst.name, what, tail)
	}
	msg := err.Error()
	if st, ok := status.FromError(err); ok {
		msg = st.Message()
	}
	return sdk.Errorf(nil, fmt.Sprintf("Provider %q call failed", inst.name), "%s: %s", what, msg)
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
	for _, inst := range h.started() {
		wg.Go(inst.kill)
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
// kernel; "" (go-plugin's own choice) when neither will do.
func socketDir() (string, error) {
	sock := len("/" + sdk.SocketDirPrefix + "1234567890/plugin1234567890")
	for _, base := range []string{os.TempDir(), "/tmp"} {
		if len(base)+sock > maxSocketPath {
			continue
		}
		return os.MkdirTemp(base, sdk.SocketDirPrefix)
	}
	return "", nil
}

// kill stops the plugin (gracefully first, as go-plugin does) and removes
// its socket folder.
func (inst *instance) kill() {
	inst.client.Kill()
	if inst.sockDir != "" {
		os.RemoveAll(inst.sockDir)
	}
}

// signalName is the conventional name of sig ("SIGKILL").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
