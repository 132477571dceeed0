// Command sparkform-testbed starts N real sshd test nodes (see package
// testbed), prints their description as shell `export` lines, and keeps
// them running until SIGTERM or SIGINT.
//
//	eval "$(sparkform-testbed -n 2 -dir /tmp/bed &)"   # or read the lines from a file
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
)

func main() {
	n := flag.Int("n", 2, "number of sshd nodes")
	dir := flag.String("dir", "", "directory for keys, configs and logs (default: a temporary one, removed on exit)")
	envFile := flag.String("env-file", "", "also write the export lines to this file (written once the nodes accept connections)")
	flag.Parse()

	bed, err := testbed.Start(*dir, *n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sparkform-testbed:", err)
		os.Exit(1)
	}
	env := bed.Env()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lines string
	for _, k := range keys {
		lines += "export " + k + "=" + node.Quote(env[k]) + "\n"
	}
	fmt.Print(lines)
	if *envFile != "" {
		if err := os.WriteFile(*envFile, []byte(lines), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "sparkform-testbed:", err)
		}
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	if err := bed.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "sparkform-testbed: stop:", err)
		os.Exit(1)
	}
}
