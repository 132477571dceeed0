// Command sparkform is the CLI: flags, prompts and rendering. It holds no
// engine logic: it loads config, opens state, starts the plugin host and
// hands them to the engine, then renders what comes back.
//
// What a command shows goes through its view (views.go): one interface
// per command (operationView for plan, apply and destroy, validateView),
// each with an implementation for people and one for -json (Terraform's
// machine-readable UI, views_json.go and jsonview.go), picked once from
// the parsed arguments (arguments.go). The shared steps (loading the
// configuration, opening the state) report through meta.view.
//
// Run as `sparkform internal-plugin NAME...` it serves built-in providers
// over the plugin protocol instead: the engine starts them out of process
// by re-executing this binary, all of them in one process (several names:
// sdk.ServeShared; one name: sdk.Serve, that provider alone).
package main
