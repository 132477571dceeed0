package gitkit

import (
	_ "embed"
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

// Exit codes of stage.sh and remove.sh.
const (
	exitRepo        = 10
	exitCommit      = 11
	exitSubdir      = 12
	exitExists      = 13
	exitNotWritable = 77
)
