// Package kmodsim is the kmod provider of sparkform's test builds: the
// provider the CLI and e2e tests start (sparkform built with -tags
// kmodsim, see cmd/sparkform/kmodsim.go) drives a simulated kernel
// (internal/kernelsim) named by SPARKFORM_KMOD_* variables, so one test
// machine stands in for several nodes' kernels. The shipped binary never
// imports this package: its kmod provider (kmod.New) drives the real
// kernel whatever the environment says.
package kmodsim

import (
	"os"

	"github.com/sparkform/sparkform/providers/kmod"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// The variables a test build reads; unset means the real kernel's. A
// "{node}" in the sysfs root or a tool path is replaced by the node's key
// (kmod.NodePlaceholder).
const (
	EnvSysfsRoot  = "SPARKFORM_KMOD_SYSFS_ROOT"
	EnvCgroupRoot = "SPARKFORM_KMOD_CGROUP_ROOT"
	EnvModprobe   = "SPARKFORM_KMOD_MODPROBE"
	EnvRmmod      = "SPARKFORM_KMOD_RMMOD"
)

// ConfigFromEnv reads the provider's Config from the process environment.
func ConfigFromEnv() kmod.Config {
	return kmod.Config{
		SysfsRoot:  os.Getenv(EnvSysfsRoot),
		CgroupRoot: os.Getenv(EnvCgroupRoot),
		Modprobe:   os.Getenv(EnvModprobe),
		Rmmod:      os.Getenv(EnvRmmod),
	}
}

// New returns the kmod provider configured from the environment.
func New() sdk.Provider { return kmod.NewWithConfig(ConfigFromEnv()) }

// NewWithPool is New reaching nodes through pool (kmod.NewWithPool).
func NewWithPool(pool *node.Pool) sdk.Provider { return kmod.NewWithPool(ConfigFromEnv(), pool) }
