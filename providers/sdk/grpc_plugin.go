package sdk

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sparkform/sparkform/providers/sdk/proto"
)

// PluginName is the name under which a provider plugin dispenses its
// Provider (go-plugin's plugin map key).
const PluginName = "provider"

// MaxMessageSize bounds one gRPC message each way. gRPC's default of 4 MiB
// is too small for a batched ReadResources of thousands of instances.
const MaxMessageSize = 256 << 20

// ProtocolVersion is the version of the provider protocol
// (proto/provider.proto) this package speaks. 2: validation in one call
// per provider, plans and applies as items of sessions (mux.go). 3: an
// apply's re-plan, its check against the reviewed plan and the apply are
// one apply item (ApplyResourceChange_Request.replan, PlanAndApply). 4: a
// resource schema says whether its plans reach no node (local_plan), and
// the engine plans such types wider than its parallelism. An
// engine and a plugin of different versions refuse each other at the
// handshake, before any call.
const ProtocolVersion = 4

// Handshake is the go-plugin handshake between the engine and a provider
// plugin. The magic cookie is not a secret: it only tells a user who runs a
// plugin by hand that it is not meant to be run that way.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "SPARKFORM_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "c5a3e1f0d9b7sparkform-provider-v1",
}

// GRPCProviderPlugin is the go-plugin plugin.GRPCPlugin for a sparkform
// provider. On the plugin side Impl is the provider served; on the engine
// side Impl is unused and GRPCClient returns a *GRPCClient.
type GRPCProviderPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Provider
	// Name, when set, is the provider's name in a process that serves
	// several (ServeShared): it is served and called under the gRPC
	// service SharedService(Name) instead of the protocol's own, so that
	// several providers share one gRPC server. Empty for a plugin of one
	// provider.
	Name string
}

var _ plugin.GRPCPlugin = (*GRPCProviderPlugin)(nil)

// GRPCServer implements plugin.GRPCPlugin: it registers the server adapter.
func (p *GRPCProviderPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Name == "" {
		proto.RegisterProviderServer(s, NewGRPCServer(p.Impl))
		return nil
	}
	desc := proto.Provider_ServiceDesc
	desc.ServiceName = SharedService(p.Name)
	s.RegisterService(&desc, NewGRPCServer(p.Impl))
	return nil
}

// GRPCClient implements plugin.GRPCPlugin: it returns a *GRPCClient, which
// implements Provider.
func (p *GRPCProviderPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	if p.Name == "" {
		return NewGRPCClient(c), nil
	}
	return NewGRPCClient(sharedConn{cc: c, prefix: "/" + SharedService(p.Name) + "/"}), nil
}

// NewGRPCServerWithLimits returns a gRPC server with sparkform's message
// size limits added to opts; Serve and sdktest use it.
func NewGRPCServerWithLimits(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts, grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxSendMsgSize(MaxMessageSize))
	return grpc.NewServer(opts...)
}

// Serve serves p as a provider plugin over go-plugin (gRPC only) and
// returns when the engine closes the connection. A plugin's main calls it
// and nothing else; the process must not write to stdout before it.
func Serve(p Provider) {
	ignoreSIGPIPE()
	go exitWithParent(p.Stop, engineParent())
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: &GRPCProviderPlugin{Impl: p}},
		GRPCServer:      NewGRPCServerWithLimits,
	})
}

// ignoreSIGPIPE makes a write to a dead engine's end of stdout or stderr
// (the handshake line, a log line) fail with EPIPE instead of killing the
// plugin with SIGPIPE: killed so, it would leave its socket behind
// before exitWithParent could remove it. Called before plugin.Serve,
// which makes the socket and then writes the handshake.
func ignoreSIGPIPE() { signal.Ignore(syscall.SIGPIPE) }

// LifelineEnv names, in a plugin's environment, the file descriptor of
// its lifeline: the read end of a pipe whose write end only the engine
// holds. It reads EOF when the engine is gone, however it went.
const LifelineEnv = "SPARKFORM_PLUGIN_LIFELINE_FD"

// ParentPIDEnv names, in a plugin's environment, the pid of the engine
// that started it: a plugin whose engine died before it could ask
// (os.Getppid is then already someone else) still sees it is an orphan.
const ParentPIDEnv = "SPARKFORM_PLUGIN_PARENT_PID"

// parentPollInterval is how often a plugin without a lifeline (started
// by an older engine) checks its parent.
const parentPollInterval = 200 * time.Millisecond

// exitWithParent ends the plugin when the engine that started it is gone
// (killed with SIGKILL, it cannot tell its plugins): go-plugin would keep
// an orphan serving nobody, holding its SSH connections and its socket.
// In-flight work is asked to stop first; its results have no one to go
// to. The engine is gone when the lifeline (LifelineEnv) reads EOF, or
// when the parent is not the engine that started the plugin
// (ParentPIDEnv, else the parent at start), checked at once and then
// every parentPollInterval: so a plugin orphaned before it got here,
// under any load, still goes.
func exitWithParent(stop func(context.Context) error, ppid int) {
	gone := make(chan struct{}, 2)
	if fd, err := strconv.Atoi(os.Getenv(LifelineEnv)); err == nil && fd > 2 {
		if f := os.NewFile(uintptr(fd), "lifeline"); f != nil {
			go func() {
				var b [1]byte
				for {
					if _, err := f.Read(b[:]); err != nil {
						gone <- struct{}{}
						return
					}
				}
			}()
		}
	}
	go func() {
		for os.Getppid() == ppid {
			time.Sleep(parentPollInterval)
		}
		gone <- struct{}{}
	}()
	<-gone
	removeSocketDir() // first: nobody is left to connect to it
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = stop(ctx)
	cancel()
	time.Sleep(300 * time.Millisecond) // let stopped calls unwind
	// Again, until it is gone: go-plugin may have been making its socket
	// in the folder while it was being removed.
	for i := 0; removeSocketDir() && i < 40; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	os.Exit(2)
}

// engineParent is the pid of the engine exitWithParent watches for:
// ParentPIDEnv, else the parent now. Callers read it before they start
// the watching goroutine: read inside it, under load, it could already be
// the reaper's pid and the plugin would watch that instead. A plugin
// without ParentPIDEnv whose parent is already init (1) was orphaned
// before it could look: 0 makes it leave at once.
func engineParent() int {
	if p, err := strconv.Atoi(os.Getenv(ParentPIDEnv)); err == nil && p > 0 {
		return p
	}
	if ppid := os.Getppid(); ppid != 1 {
		return ppid
	}
	return 0
}

// SocketDirPrefix names the folder the engine makes for a plugin's socket
// (plugin.EnvUnixSocketDir). A plugin that outlives its engine removes the
// folder with its socket before it exits; go-plugin would leave the
// socket behind.
const SocketDirPrefix = "sparkform-plugin-"

// RelayEnv names the socket of the sparkform process's connection relay
// (providers/node.Relay) in a plugin's environment. A plugin that
// outlives its engine removes the relay's folder too (prefix
// "sparkform-relay-"): the engine that made it was killed.
const RelayEnv = "SPARKFORM_NODE_RELAY"

// SweepStaleDirs removes from base the folders named PREFIX PID-... of
// this user whose process PID is gone. A sparkform killed between making
// such a folder (a plugin's socket folder, its connection relay's) and
// starting a plugin, which would remove it, leaves it behind; the next
// sparkform to make one sweeps it. A pid in use again keeps its folder.
func SweepStaleDirs(base, prefix string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

// removeSocketDir removes the plugin's socket folder and its engine's
// relay folder; it reports whether one of them is still there.
func removeSocketDir() (left bool) {
	remove := func(d string) {
		_ = os.RemoveAll(d)
		if _, err := os.Lstat(d); err == nil {
			left = true
		}
	}
	if d := os.Getenv(plugin.EnvUnixSocketDir); d != "" && strings.HasPrefix(filepath.Base(d), SocketDirPrefix) {
		remove(d)
	}
	if s := os.Getenv(RelayEnv); s != "" && strings.HasPrefix(filepath.Base(filepath.Dir(s)), "sparkform-relay-") {
		remove(filepath.Dir(s))
	}
	return left
}
