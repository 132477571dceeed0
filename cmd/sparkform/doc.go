// Command sparkform is the CLI: flags, prompts and rendering. It holds no
// engine logic: it loads config, opens state, starts the plugin host and
// hands them to the engine, then renders what comes back.
//
// Run as `sparkform internal-plugin NAME` it serves one built-in provider
// over the plugin protocol instead: the engine starts built-in providers
// out of process by re-executing this binary.
package main
