// Command kernelsim is the multi-call binary behind the simulator's shims:
//
//	kernelsim --root DIR modprobe|rmmod|lsmod|kernelsim ARGS...
//
// It is a SIMULATED kernel for tests (see package internal/kernelsim).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sparkform/sparkform/internal/kernelsim"
)

func main() {
	a := os.Args[1:]
	if len(a) < 3 || a[0] != "--root" {
		fmt.Fprintln(os.Stderr, "usage: kernelsim --root DIR modprobe|rmmod|lsmod|kernelsim ARGS...")
		os.Exit(2)
	}
	// A module load or unload, once started, completes in a real kernel
	// whatever happens to the modprobe process (a SIGTERM relayed by sudo
	// when sparkform cancels, a SIGHUP or broken pipe when the SSH link
	// drops). The shim does the same, instead of leaving a half-written
	// /sys/module entry no kernel would show.
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
	s, err := kernelsim.Open(a[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(s.Main(a[2], a[3:], os.Stdout, os.Stderr))
}
