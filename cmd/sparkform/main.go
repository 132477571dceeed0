package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/registry"
)

// exitError carries a process exit code through cobra.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	tuneGC()
	os.Exit(runProcess(os.Args[1:]))
}

// runProcess is run with the process's stdin, stdout and stderr: the
// command's output is buffered (see console) and written out however run
// ends, a panic included.
func runProcess(args []string) int {
	if len(args) >= 1 && args[0] == "internal-plugin" {
		// A plugin's stdout is go-plugin's handshake: never buffered.
		return run(args, os.Stdin, os.Stdout, os.Stderr)
	}
	con := newConsole(os.Stdout, os.Stderr)
	defer con.Flush()
	defer con.flushOnSignal()()
	return run(args, os.Stdin, con.stdout, con.stderr)
}

// run is main without the process: script tests call it in-process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) >= 2 && args[0] == "internal-plugin" {
		prof := "plugin-" + args[1]
		if len(args) > 2 {
			prof = "plugin-builtin" // the process of every built-in provider
		}
		stop := startProfiles(prof)
		defer stop()
		if err := servePlugin(args[1:]); err != nil {
			fmt.Fprintln(stderr, "sparkform internal-plugin:", err)
			return 1
		}
		return 0
	}
	defer startProfiles("")()
	root, m := newRoot(stdin, stdout, stderr)
	root.SetArgs(normalizeArgs(args))
	err := root.Execute()
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		m.fail(err) // in the -json stream, a diagnostic: nothing but JSON on stdout
		return 1
	}
}

// normalizeArgs accepts Terraform's single-dash long flags
// (-auto-approve, -var=x=1, -chdir=dir) by rewriting them to the
// double-dash form cobra expects. Single-letter flags (-h) and anything
// after "--" are left alone.
func normalizeArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && isLetter(a[1]) && (isLetter(a[2]) || a[2] == '-') {
			a = "-" + a
		}
		out = append(out, a)
	}
	return out
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// servePlugin serves the named built-in providers (registry.Serve), their
// SSH debug log on stderr as JSON lines with SPARKFORM_LOG=debug: go-plugin
// hands them to the sparkform process's logger with their level.
func servePlugin(names []string) error {
	var o node.Options
	if debugLog() {
		o.Debug = hclog.New(&hclog.LoggerOptions{Name: "ssh", Level: hclog.Debug, JSONFormat: true, Output: os.Stderr}).Debug
	}
	return registry.Serve(names, o)
}
