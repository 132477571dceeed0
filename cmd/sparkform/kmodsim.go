//go:build kmodsim

// This file is only in test builds of sparkform (go build -tags kmodsim):
// their kmod provider drives the simulated kernels the CLI and e2e tests
// name with SPARKFORM_KMOD_* variables. The shipped binary is built
// without the tag, so its kmod provider always drives the real kernel.

package main

import (
	"github.com/sparkform/sparkform/internal/kernelsim/kmodsim"
	"github.com/sparkform/sparkform/providers/registry"
)

func init() {
	registry.Replace("kmod", registry.Builtin{New: kmodsim.New, NewWithPool: kmodsim.NewWithPool})
}
