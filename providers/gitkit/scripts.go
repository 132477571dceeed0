package gitkit

import (
	_ "embed"

	"github.com/sparkform/sparkform/providers/node"
)

// The remote scripts. Each runs as `sh -c PRELUDE+SCRIPT sh ARGS...`: user
// values reach the node only as quoted positional arguments.
var (
	//go:embed scripts/digest.sh
	prelude string
	//go:embed scripts/read.sh
	readScript string
	//go:embed scripts/walk.sh
	walkScript string
	//go:embed scripts/check.sh
	checkScript string
	//go:embed scripts/stage.sh
	stageScript string
	//go:embed scripts/remove.sh
	removeScript string
)

// shArgv is the argv that runs script (with the prelude) with args as $1...
func shArgv(script string, args ...string) []string {
	return append([]string{"sh", "-c", prelude + "\n" + script, "sh"}, args...)
}

// helperArgv is shArgv for a script whose work the node helper's
// subcommand sub does when the helper is at helper on the node
// (node.HelperPath; "" none): the script gets helper as $1, and with the
// helper there the shell execs it (one process in all); without, script
// runs with args as $1... as shArgv runs it. sub is a constant.
func helperArgv(helper, sub, script string, args ...string) []string {
	head := "h=$1\nshift\n" + node.HelperShell("h") + `[ -n "$h" ] && exec "$h" ` + sub + ` "$@"` + "\n"
	return append([]string{"sh", "-c", head + prelude + "\n" + script, "sh", helper}, args...)
}

// walkArgv runs walk.sh for paths, or the helper at helper ("" none).
func walkArgv(helper string, paths ...string) []string {
	return helperArgv(helper, "walk", walkScript, paths...)
}

// Exit codes of stage.sh and remove.sh.
const (
	exitRepo        = 10
	exitCommit      = 11
	exitSubdir      = 12
	exitExists      = 13
	exitNotWritable = 77
)
