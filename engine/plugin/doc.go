// Package plugin is the engine's provider host: it starts provider plugins
// on first use, hands the engine each one as an sdk.Provider, and stops
// and kills them at the end.
//
// A provider NAME is found in this order: a built-in (Options.Builtins);
// else an executable `sparkform-provider-NAME` in one of
// Options.PluginDirs. Both speak the go-plugin handshake (sdk.Handshake)
// over gRPC. A provider that is never asked for is never started.
//
// The built-ins run in one process, `SelfExe internal-plugin NAME...`
// (sdk.ServeShared), started when the first of them is asked for: each is
// dispensed by name and served under a gRPC service of its own over the
// one connection. A plan over several built-in providers pays one process
// start (Go runtime, package init, handshake), not one per provider. The
// price is isolation: when that process dies, every built-in ends with it.
// The diagnostic of each call it ended names the call's provider and says
// the process was shared; a panic names the provider whose code panicked
// (the first of its functions, Options.BuiltinFrames, in the panicking
// goroutine's stack). With a single built-in it runs alone, as
// `SelfExe internal-plugin NAME`.
//
// Each plugin's stderr is forwarded to the logger and the last few KiB are
// kept: when a plugin dies mid-call, the diagnostic returned for that call
// names the provider, the operation and the instance, and quotes that
// tail. RPCs are counted per provider and method (Stats), so tests and
// `-json` output can show that refresh costs one call per node.
//
// A crashed plugin is not restarted: every later call to it returns the
// same crash diagnostic, since what it was doing is unknown.
//
// Options.InProcess names providers served in the host's own process
// instead: ones that reach no node and do no I/O, for which a plugin adds
// only the encoding and round trip of every call. They are called as the
// gRPC client calls a plugin in all a provider can tell (values without
// marks; a panic is the call's error diagnostic), start nothing, and make
// no RPCs for Stats to count.
package plugin
