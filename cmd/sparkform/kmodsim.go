//go:build kmodsim

// This file is only in test builds of sparkform (go build -tags kmodsim):
// their kmod provider drives the simulated kernels the CLI and e2e tests
// name with SPARKFORM_KMOD_* variables. The shipped binary is built
// without the tag, so its kmod provider always drives the real kernel.

package main

import "github.com/sparkform/sparkform/internal/kernelsim/kmodsim"

func init() {
	builtins["kmod"] = kmodsim.New
	pooled["kmod"] = kmodsim.NewWithPool
}
