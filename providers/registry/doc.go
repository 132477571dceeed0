// Package registry is the set of providers built into the sparkform
// binary: each by name, with its constructor, whether it is built on the
// node.Pool the providers of one plugin process share, and whether the CLI
// serves it in its own process (plugin.Options.InProcess).
//
// The CLI wires it into the plugin host (Names, PluginNames, InProcess,
// Frames) and serves it in plugin mode (Serve). It is a providers package:
// the engine never imports it, and it imports no engine package.
package registry
