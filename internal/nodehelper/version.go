package nodehelper

import (
	"fmt"
	"io"
)

func init() { register("version", version) }

// version prints "sparkform-node PROTOCOL" (PROTOCOL: Protocol), the one
// line a caller may use to check what it talks to.
func version(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: sparkform-node version")
		return ExitUsage
	}
	fmt.Fprintf(stdout, "sparkform-node %d\n", Protocol)
	return 0
}

// Protocol is bumped when a subcommand's format changes incompatibly
// (the install path carries the binary's hash anyway).
const Protocol = 1
