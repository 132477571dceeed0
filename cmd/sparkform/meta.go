package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/term"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plugin"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/registry"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// meta is what every command shares: where to work, how to print, and
// how to reach config, state and providers.
type meta struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	chdir          string
	noColor        bool
	resetState     bool // -reset-state: see state.Options.ResetState

	// view is where diagnostics and errors go: the command's view once it
	// has picked one (see views.go), for people before that.
	view view

	files map[string]*hcl.File // for rendering diagnostics
	be    state.Backend        // where state lives (see backend)
	// mod is the root module once loadConfig has parsed it: backend reads
	// its backend block from it instead of parsing every file again.
	mod *config.Module

	backendConfig []string // -backend-config KEY=VALUE
	host          *plugin.Host
	// pool holds this run's one SSH connection per node (the node check
	// dials it); relay serves it to the plugins (see providers/node.Relay).
	pool    *node.Pool
	relay   *node.Relay
	closers []func()
	// writer is the state opened for writing, once it is: an immediate
	// exit (a second Ctrl-C) flushes the results it has queued first.
	writer atomic.Pointer[state.Store]

	// The notices of a prewarmed dial (a connection being retried) are
	// held until the node check, which is when the user asked for the
	// node: a plan that stops before it (a config error) does not show
	// them. See prewarmNodes.
	noticeMu    sync.Mutex
	holdNotices bool
	heldNotices []string
}

// Dir is the working directory (after -chdir).
func (m *meta) Dir() string {
	if m.chdir != "" {
		return m.chdir
	}
	return "."
}

// Path is a path the user gave on the command line (-var-file, -out, a
// plan file): a relative one is relative to the working directory after
// -chdir, as in Terraform, where -chdir switches before anything else.
func (m *meta) Path(p string) string {
	if m.chdir == "" || p == "" || p == "-" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(m.chdir, p)
}

// StatePath is where the state lives.
func (m *meta) StatePath() string { return state.DefaultLocalPath(m.Dir()) }

func (m *meta) color() bool {
	if m.noColor || os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := outputFile(m.stdout)
	return ok && term.IsTerminal(int(f.Fd()))
}

// diags prints diagnostics with file:line:col and a source snippet; it
// reports whether any was an error.
func (m *meta) diags(ds hcl.Diagnostics) bool {
	if len(ds) == 0 {
		return false
	}
	m.view.diagnostics(ds, m.files)
	return ds.HasErrors()
}

func dedupe(ds hcl.Diagnostics) hcl.Diagnostics {
	seen := map[string]bool{}
	var out hcl.Diagnostics
	for _, d := range ds {
		k := d.Summary + "\x00" + d.Detail
		if d.Subject != nil {
			k += d.Subject.String()
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	return out
}

// loadConfig parses every *.sf.hcl in the working directory.
func (m *meta) loadConfig() (*config.Module, bool) {
	mod, ds := config.LoadDir(m.Dir())
	if mod != nil {
		m.files = mod.Files
		if config.OnlyRecoverable(ds) { // e.g. a data block: report the rest too
			ds = append(ds, mod.CheckReferences()...)
		}
	}
	if m.diags(ds) {
		return nil, false
	}
	m.mod = mod
	return mod, true
}

// flatten brings the module instances into one configuration (vals nil:
// validate, with every value unknown).
func (m *meta) flatten(mod *config.Module, vals map[string]cty.Value) (*config.Module, bool) {
	flat, ds := config.Flatten(mod, vals)
	if m.diags(ds) {
		return nil, false
	}
	return flat, true
}

// variables resolves -var, -var-file and SPARKFORM_VAR_*.
func (m *meta) variables(mod *config.Module, vf *varFlags) (map[string]cty.Value, bool) {
	sources := vf.sources
	if m.chdir != "" {
		sources = slices.Clone(sources)
		for i := range sources {
			if sources[i].Kind == "file" {
				sources[i].Value = m.Path(sources[i].Value)
			}
		}
	}
	vals, ds := config.ResolveVariables(mod, sources, os.Environ())
	if m.diags(ds) {
		return nil, false
	}
	return vals, true
}

// openState opens the state for writing, waiting up to lockTimeout for
// the lock, and says who holds it when it cannot.
func (m *meta) openState(lockTimeout time.Duration, command string) (state.Store, error) {
	be, err := m.backend()
	if err != nil {
		return nil, err
	}
	if _, local := be.(state.Local); local {
		if err := os.MkdirAll(filepath.Dir(m.StatePath()), 0o700); err != nil {
			return nil, err
		}
	}
	st, err := be.Open(state.Options{LockTimeout: lockTimeout, Command: command, ResetState: m.resetState,
		ConvertValue: engine.CompactValue})
	if err != nil {
		var le *state.LockedError
		if errors.As(err, &le) {
			unlock := "sparkform force-unlock"
			if le.Holder != nil {
				unlock += " " + le.Holder.ID()
			}
			return nil, fmt.Errorf("%w\n\nAnother sparkform command is using this state. Wait for it to finish, or use -lock-timeout=DURATION to wait longer. If its process is gone, run `%s`", err, unlock)
		}
		return nil, err
	}
	m.writer.Store(&st)
	return st, nil
}

// flushWriter makes the results the state has queued durable (see
// state.Store.Complete), waiting at most d: without it an immediate exit
// would leave their intents for the next plan to recover.
func (m *meta) flushWriter(d time.Duration) {
	st := m.writer.Load()
	if st == nil {
		return
	}
	done := make(chan struct{})
	go func() { _ = (*st).Flush(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// openStateReadOnly opens the state without taking the lock.
func (m *meta) openStateReadOnly() (state.Store, error) {
	be, err := m.backend()
	if err != nil {
		return nil, err
	}
	return be.OpenReadOnly()
}

// pluginHost starts (lazily) the providers the config uses.
func (m *meta) pluginHost() (*plugin.Host, error) {
	if m.host != nil {
		return m.host, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	level := hclog.Off
	if l := os.Getenv("SPARKFORM_LOG"); l != "" {
		level = hclog.LevelFromString(l)
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "sparkform", Level: level, Output: m.stderr})
	dirs := []string{filepath.Join(m.Dir(), ".sparkform", "plugins")}
	if d := os.Getenv("SPARKFORM_PLUGIN_DIR"); d != "" {
		dirs = append(filepath.SplitList(d), dirs...)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".sparkform", "plugins"))
	}
	// Notices (a node's connection being retried) go to stderr as they
	// happen, so stdout keeps only what the command produces.
	notice := func(msg string) { fmt.Fprintln(m.stderr, msg) }
	// This process holds one SSH connection per node for the whole run and
	// serves it to every plugin through the relay: the node check's
	// connection is the only handshake with a node. Nothing is dialled
	// until a node is first needed (never, for -refresh=false).
	nodeOpts := node.Options{Notify: func(msg string) {
		m.noticeMu.Lock() // nodes are dialled in parallel
		defer m.noticeMu.Unlock()
		if m.holdNotices {
			m.heldNotices = append(m.heldNotices, msg)
			return
		}
		fmt.Fprintln(m.stderr, msg)
	}}
	if debugLog() {
		nodeOpts.Debug = logger.Named("ssh").Debug
	}
	m.pool = node.NewPoolWith(nodeOpts)
	var env []string
	if r, err := node.NewRelay(m.pool); err != nil {
		// Plugins then dial the nodes themselves, as before the relay.
		logger.Warn("no connection relay: each provider connects to the nodes itself", "error", err)
	} else {
		m.relay, env = r, r.Env()
	}
	m.host = plugin.NewHost(plugin.Options{SelfExe: self, Builtins: registry.PluginNames(), InProcess: registry.InProcess(), BuiltinFrames: registry.Frames(), PluginDirs: dirs, Logger: logger, Notice: notice, Env: env})
	return m.host, nil
}

// prewarmNodes starts dialling, while the plugins start and the
// configuration is validated, the nodes the plan's node check will reach
// (those the variables alone decide): the handshakes leave the plan's
// critical path. Only what the node check does is done here (the login
// and, with become, sudo -n true); its results, errors included, are
// reported by the node check as before. Only the first parallelism of
// them, which it returns for the plan's node check to take first
// (PlanOptions.DialledAhead), so -parallelism bounds the nodes in flight
// from the start.
func (m *meta) prewarmNodes(mod *config.Module, vals map[string]cty.Value, parallelism int) []sdk.Node {
	if m.pool == nil {
		return nil
	}
	m.noticeMu.Lock()
	m.holdNotices = true
	m.noticeMu.Unlock()
	return m.prewarm(engine.NodesFromVariables(mod, vals), parallelism)
}

// prewarm dials the first parallelism of nodes ahead (Pool.Prewarm) and
// returns them.
func (m *meta) prewarm(nodes []sdk.Node, parallelism int) []sdk.Node {
	ahead := nodes[:min(len(nodes), max(parallelism, 1))]
	for _, n := range ahead {
		m.pool.Prewarm(n)
	}
	return ahead
}

// checkNode is the plan's node check (engine.NodeChecker): the pool's
// Check, after the held notices of a prewarmed dial are shown.
func (m *meta) checkNode(ctx context.Context, n sdk.Node) error {
	m.noticeMu.Lock()
	for _, msg := range m.heldNotices {
		fmt.Fprintln(m.stderr, msg)
	}
	m.heldNotices, m.holdNotices = nil, false
	m.noticeMu.Unlock()
	return m.pool.Check(ctx, n)
}

func (m *meta) close() {
	if m.host != nil {
		m.host.Close()
		m.host = nil
	}
	if m.relay != nil {
		m.relay.Close()
		m.relay = nil
	}
	if m.pool != nil {
		m.pool.Close()
		m.pool = nil
	}
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i]()
	}
	m.closers = nil
}

// interruptible returns a context cancelled on the first Ctrl-C (after
// asking providers to stop); a second Ctrl-C exits at once.
func (m *meta) interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	interruptsHandled.Add(1)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			interruptsTaken.Add(1)
		case <-done:
			return
		}
		fmt.Fprintln(m.stderr, "\nInterrupt received. Stopping: no new operations start, providers are asked to stop, and everything finished is saved. Press Ctrl-C again to exit at once (state may then miss in-flight results).")
		m.flush()
		if m.host != nil {
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			m.host.Stop(sctx)
			scancel()
		}
		cancel()
		select {
		case <-sigs:
			fmt.Fprintln(m.stderr, "Two interrupts received. Exiting immediately.")
			m.flush()
			m.flushWriter(2 * time.Second)
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		interruptsHandled.Add(-1)
		close(done)
		cancel()
	}
}

// newEngine wires config, state (nil: given later, engine.SetStore) and
// providers into one engine.
func (m *meta) newEngine(mod *config.Module, st state.Store, hooks engine.Hooks, parallelism int) (*engine.Engine, error) {
	host, err := m.pluginHost()
	if err != nil {
		return nil, err
	}
	// The node check dials from this process, into the pool the relay
	// serves to the plugins; its notices (a connection being retried) go
	// straight to stderr (see pluginHost).
	opts := engine.Options{Module: mod, Providers: host, Hooks: hooks, Parallelism: parallelism, NodeCheck: m.checkNode}
	if st != nil { // a nil state.Store is not a nil engine.Store
		opts.Store = st
	}
	return engine.New(opts), nil
}

// confirm asks the Terraform question; only "yes" approves.
func (m *meta) confirm(question, detail string) bool {
	fmt.Fprintf(m.stdout, "\n%s\n  %s\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", question, detail)
	m.flush() // the plan and the question are on the screen before we wait
	var line strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := m.stdin.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				break
			}
			line.WriteByte(buf[0])
		}
		if err != nil {
			break
		}
	}
	fmt.Fprintln(m.stdout)
	return strings.TrimSpace(line.String()) == "yes"
}

// varFlags collects -var and -var-file in command-line order.
type varFlags struct{ sources []config.VarSource }

type varFlag struct {
	v    *varFlags
	kind string
}

func (f varFlag) String() string { return "" }
func (f varFlag) Set(s string) error {
	f.v.sources = append(f.v.sources, config.VarSource{Kind: f.kind, Value: s})
	return nil
}
func (f varFlag) Type() string { return "string" }

func addVarFlags(cmd *cobra.Command, vf *varFlags) {
	cmd.Flags().Var(varFlag{vf, "var"}, "var", "set a variable: -var 'NAME=VALUE' (repeatable; later wins)")
	cmd.Flags().Var(varFlag{vf, "file"}, "var-file", "set variables from a file of NAME = VALUE lines (repeatable)")
}

// flush writes out what stdout and stderr have buffered (see console).
func (m *meta) flush() { flushOutput(m.stdout) }

// onClose registers cleanup run when the command ends (after providers stop).
func (m *meta) onClose(fn func()) { m.closers = append(m.closers, fn) }
