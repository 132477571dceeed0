package nodehelper

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// command is one subcommand: it runs with its arguments (after the name)
// and returns the exit status.
type command func(args []string, stdin io.Reader, stdout, stderr io.Writer) int

var commands = map[string]command{}

// register adds a subcommand; each subcommand's file calls it from init.
func register(name string, c command) {
	if _, dup := commands[name]; dup {
		panic("nodehelper: subcommand registered twice: " + name)
	}
	commands[name] = c
}

// ExitUsage is the status of a call that names no known subcommand or
// gives it bad arguments (a helper older than its caller). The script
// exec'd the helper, so it has no fallback left: a provider that sees
// this status (or 126/127, a helper that could not be exec'd) before any
// output runs its read again without the helper.
const ExitUsage = 125

// Main runs the subcommand args[0] and returns the process's exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "usage: sparkform-node SUBCOMMAND [ARG...]; subcommands: %s\n", names())
		return ExitUsage
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sparkform-node: unknown subcommand %q; this helper has: %s\n", args[0], names())
		return ExitUsage
	}
	return c(args[1:], stdin, stdout, stderr)
}

func names() string {
	var n []string
	for k := range commands {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}
