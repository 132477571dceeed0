// Command kernelsim is the multi-call binary behind the simulator's shims:
//
//	kernelsim --root DIR modprobe|rmmod|lsmod|kernelsim ARGS...
//
// It is a SIMULATED kernel for tests (see package internal/kernelsim).
package main

import (
	"fmt"
	"os"

	"github.com/sparkform/sparkform/internal/kernelsim"
)

func main() {
	a := os.Args[1:]
	if len(a) < 3 || a[0] != "--root" {
		fmt.Fprintln(os.Stderr, "usage: kernelsim --root DIR modprobe|rmmod|lsmod|kernelsim ARGS...")
		os.Exit(2)
	}
	s, err := kernelsim.Open(a[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(s.Main(a[2], a[3:], os.Stdout, os.Stderr))
}
