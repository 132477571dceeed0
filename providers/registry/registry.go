package registry

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/command"
	"github.com/sparkform/sparkform/providers/docker"
	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/hubstage"
	"github.com/sparkform/sparkform/providers/kmod"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Builtin is one built-in provider.
type Builtin struct {
	// New builds it on its own (one plugin process per provider, or in
	// the CLI's process).
	New func() sdk.Provider
	// NewWithPool, when set, builds it on the node.Pool the built-in
	// providers served from one process share: each node then gets one
	// relay connection from that process (and one SSH session limit), not
	// one per provider. Nil: the provider reaches no node.
	NewWithPool func(*node.Pool) sdk.Provider
	// InProcess: the CLI serves it in its own process rather than as a
	// plugin (plugin.Options.InProcess): its calls reach no node and do no
	// I/O, so a plugin would add only the encoding and round trip of every
	// call. A 10,000-instance apply of sparkform_data spent about half its
	// CPU on them (2.8 -> 1.4 CPU s; the no-op plan 1.4 -> 0.9).
	// `sparkform internal-plugin sparkform` still serves it.
	InProcess bool
}

// builtins are the providers the sparkform binary serves.
var builtins = map[string]Builtin{
	"sparkform": {New: builtin.New, InProcess: true},
	"gitkit":    {New: gitkit.New, NewWithPool: gitkit.NewWithPool},
	"kmod": {New: kmod.New, NewWithPool: func(p *node.Pool) sdk.Provider {
		return kmod.NewWithPool(kmod.Config{}, p)
	}},
	"docker":     {New: docker.New, NewWithPool: docker.NewWithPool},
	"hubstage":   {New: hubstage.New, NewWithPool: hubstage.NewWithPool},
	command.Name: {New: command.New, NewWithPool: command.NewWithPool},
}

// Replace puts b in place of the built-in name. Only test builds do,
// before anything is served: the kmodsim build's kmod provider drives a
// simulated kernel.
func Replace(name string, b Builtin) { builtins[name] = b }

// Lookup returns the built-in name.
func Lookup(name string) (Builtin, bool) {
	b, ok := builtins[name]
	return b, ok
}

// Names are the built-in providers, sorted.
func Names() []string { return slices.Sorted(maps.Keys(builtins)) }

// PluginNames are the built-ins served as plugins (plugin.Options.Builtins):
// every one but those served in process.
func PluginNames() []string {
	var names []string
	for _, n := range Names() {
		if !builtins[n].InProcess {
			names = append(names, n)
		}
	}
	return names
}

// InProcess are the constructors of the built-ins the CLI serves in its
// own process (plugin.Options.InProcess).
func InProcess() map[string]func() sdk.Provider {
	out := map[string]func() sdk.Provider{}
	for n, b := range builtins {
		if b.InProcess {
			out[n] = b.New
		}
	}
	return out
}

// Frames are the prefixes of each built-in provider's functions in a Go
// stack trace (plugin.Options.BuiltinFrames): its constructor's package.
func Frames() map[string]string {
	out := make(map[string]string, len(builtins))
	for name, b := range builtins {
		fn := runtime.FuncForPC(reflect.ValueOf(b.New).Pointer()).Name() // "path/to/pkg.New"
		if i := strings.LastIndexByte(fn, '/'); i >= 0 {
			if j := strings.IndexByte(fn[i:], '.'); j >= 0 {
				out[name] = fn[:i+j+1]
			}
		}
	}
	return out
}

// Serve serves the named built-in providers over the plugin protocol: one
// as a plugin of its own (sdk.Serve), several from this one process
// (sdk.ServeShared) on one node.Pool, as the plugin host starts them. The
// pool's connections report to o (its debug log: SPARKFORM_LOG=debug).
func Serve(names []string, o node.Options) error {
	ps := make(map[string]sdk.Provider, len(names))
	pool := node.NewPoolWith(o) // closed when the process exits
	for _, name := range names {
		b, ok := builtins[name]
		if !ok {
			return fmt.Errorf("no built-in provider %q (built-ins: %v)", name, Names())
		}
		if b.NewWithPool != nil {
			ps[name] = b.NewWithPool(pool)
		} else {
			ps[name] = b.New()
		}
	}
	if len(names) == 1 {
		sdk.Serve(ps[names[0]])
		return nil
	}
	sdk.ServeShared(ps)
	return nil
}
