package main

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/command"
	"github.com/sparkform/sparkform/providers/docker"
	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/hubstage"
	"github.com/sparkform/sparkform/providers/kmod"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// builtins are the providers this binary serves in plugin mode.
var builtins = map[string]func() sdk.Provider{
	"sparkform":  builtin.New,
	"gitkit":     gitkit.New,
	"kmod":       kmod.New,
	"docker":     docker.New,
	"hubstage":   hubstage.New,
	command.Name: command.New,
}

// inProcess are the built-in providers sparkform serves in its own
// process rather than as a plugin (plugin.Options.InProcess): their calls
// reach no node and do no I/O, so a plugin would add only the encoding
// and round trip of every call. A 10,000-instance apply of sparkform_data
// spent about half its CPU on them (2.8 -> 1.4 CPU s; the no-op plan 1.4
// -> 0.9). `sparkform internal-plugin sparkform` still serves it.
var inProcess = map[string]func() sdk.Provider{
	"sparkform": builtin.New,
}

// pluginBuiltins are the built-in providers served as plugins: every
// built-in but those served in process.
func pluginBuiltins() []string {
	var names []string
	for _, n := range builtinProviders() {
		if _, ok := inProcess[n]; !ok {
			names = append(names, n)
		}
	}
	return names
}

// pooled are the constructors of the built-in providers that reach nodes,
// taking the node.Pool they share when served from one process: each
// node then gets one relay connection from the plugin process (and one
// SSH session limit), not one per provider.
var pooled = map[string]func(*node.Pool) sdk.Provider{
	"gitkit":     gitkit.NewWithPool,
	"kmod":       func(p *node.Pool) sdk.Provider { return kmod.NewWithPool(kmod.Config{}, p) },
	"docker":     docker.NewWithPool,
	"hubstage":   hubstage.NewWithPool,
	command.Name: command.NewWithPool,
}

// servePlugin serves the named built-in providers over the plugin
// protocol: one as a plugin of its own (sdk.Serve), several from this one
// process (sdk.ServeShared), as the plugin host starts them.
func servePlugin(names []string) error {
	ps := make(map[string]sdk.Provider, len(names))
	if debugLog() {
		// JSON lines on stderr: go-plugin hands them to the sparkform
		// process's logger with their level.
		node.SetDebug(hclog.New(&hclog.LoggerOptions{Name: "ssh", Level: hclog.Debug, JSONFormat: true, Output: os.Stderr}).Debug)
	}
	pool := node.NewPool() // closed when the process exits
	for _, name := range names {
		mk, ok := builtins[name]
		if !ok {
			return fmt.Errorf("no built-in provider %q (built-ins: %v)", name, builtinProviders())
		}
		if mkp, ok := pooled[name]; ok {
			ps[name] = mkp(pool)
		} else {
			ps[name] = mk()
		}
	}
	if len(names) == 1 {
		sdk.Serve(ps[names[0]])
		return nil
	}
	sdk.ServeShared(ps)
	return nil
}

// builtinFrames are the prefixes of each built-in provider's functions in
// a Go stack trace (plugin.Options.BuiltinFrames): its constructor's
// package.
func builtinFrames() map[string]string {
	out := make(map[string]string, len(builtins))
	for name, mk := range builtins {
		fn := runtime.FuncForPC(reflect.ValueOf(mk).Pointer()).Name() // "path/to/pkg.New"
		if i := strings.LastIndexByte(fn, '/'); i >= 0 {
			if j := strings.IndexByte(fn[i:], '.'); j >= 0 {
				out[name] = fn[:i+j+1]
			}
		}
	}
	return out
}
