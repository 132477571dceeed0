package kmod

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Resource type names.
const (
	TypeModule = "kmod_module"
	TypeCgroup = "kmod_cgroup"
)

// Config says where the provider finds the kernel on a node. The zero
// value means the real one; tests point it at a simulated kernel.
type Config struct {
	// SysfsRoot is the sysfs mount (modules under SysfsRoot/module).
	SysfsRoot string
	// CgroupRoot is the cgroup v2 mount.
	CgroupRoot string
	// Modprobe and Rmmod are the tools, found on the node's PATH unless
	// absolute.
	Modprobe string
	Rmmod    string
	// RestoreDir, when set, is where the restore records go instead of
	// the default (see package restore); tests keep nodes apart with it.
	RestoreDir string
}

// NodePlaceholder in SysfsRoot, Modprobe or Rmmod is replaced, per request,
// by the node's key (see NodeKey), so that one provider process can drive
// several simulated kernels on one machine: e.g. SysfsRoot
// "/tmp/sim/{node}/sys". Only tests use it.
const NodePlaceholder = "{node}"

// NodeKey is what NodePlaceholder becomes for a node: its instance key
// (`node.spark["spark-01"]` -> "spark-01", `node.n[1]` -> "1"), or its name
// when it has none (`node.local` -> "local"); a "/" becomes "_".
func NodeKey(n sdk.Node) string {
	name := strings.TrimPrefix(n.Name, "node.")
	if i := strings.IndexByte(name, '['); i >= 0 && strings.HasSuffix(name, "]") {
		name = strings.Trim(name[i+1:len(name)-1], `"`)
	}
	return strings.ReplaceAll(name, "/", "_")
}

// For returns the config for one node: NodePlaceholder filled in.
func (c Config) For(n sdk.Node) Config {
	if !strings.Contains(c.SysfsRoot+c.Modprobe+c.Rmmod+c.RestoreDir, NodePlaceholder) {
		return c
	}
	key := NodeKey(n)
	c.SysfsRoot = strings.ReplaceAll(c.SysfsRoot, NodePlaceholder, key)
	c.Modprobe = strings.ReplaceAll(c.Modprobe, NodePlaceholder, key)
	c.Rmmod = strings.ReplaceAll(c.Rmmod, NodePlaceholder, key)
	c.RestoreDir = strings.ReplaceAll(c.RestoreDir, NodePlaceholder, key)
	return c
}

func (c Config) withDefaults() Config {
	if c.SysfsRoot == "" {
		c.SysfsRoot = "/sys"
	}
	if c.CgroupRoot == "" {
		c.CgroupRoot = "/sys/fs/cgroup"
	}
	if c.Modprobe == "" {
		c.Modprobe = "modprobe"
	}
	if c.Rmmod == "" {
		c.Rmmod = "rmmod"
	}
	return c
}

func (c Config) moduleDir() string { return path.Join(c.SysfsRoot, "module") }

// records is where a node's kmod_module restore records live, keyed by the
// module's sysfs folder (so simulated kernels on one machine stay apart).
func (c Config) records() restore.Store {
	return restore.Store{Kind: "kmod_module", Dir: c.RestoreDir}
}

// cgroupRecords is where kmod_cgroup's restore records live, keyed by the
// group's absolute path: the ancestors it creates and the controllers it
// enables, written before it creates or enables them.
func (c Config) cgroupRecords() restore.Store {
	return restore.Store{Kind: "kmod_cgroup", Dir: c.RestoreDir}
}

// New returns the kmod provider for the real kernel: /sys, /sys/fs/cgroup,
// modprobe and rmmod. It reads no environment: nothing set by accident
// can point it elsewhere (tests build their own, see NewWithConfig).
func New() sdk.Provider { return NewWithConfig(Config{}) }

// NewWithConfig returns the kmod provider with an explicit Config.
func NewWithConfig(cfg Config) sdk.Provider { return NewWithPool(cfg, node.NewPool()) }

// NewWithPool returns the kmod provider with an explicit Config, reaching
// nodes through pool, which a plugin process serving several providers
// shares among them.
func NewWithPool(cfg Config, pool *node.Pool) sdk.Provider {
	k := &kernel{cfg: cfg.withDefaults(), pool: pool}
	return &sdk.Router{
		Name: "kmod",
		Resources: map[string]sdk.Resource{
			TypeModule: &moduleResource{k: k},
			TypeCgroup: &cgroupResource{k: k},
		},
	}
}

// kernel is what both resources share: the config and one connection per
// node.
type kernel struct {
	cfg  Config
	pool *node.Pool
}

// run runs argv on the node (through sudo -n when the node says become)
// and returns stdout; a failure carries the command's stderr.
func (k *kernel) run(ctx context.Context, conn node.Conn, n sdk.Node, argv ...string) (string, error) {
	res, err := conn.Run(ctx, node.Cmd{Argv: argv, Become: n.Become})
	if err != nil {
		return string(res.Stdout), err
	}
	return string(res.Stdout), nil
}

// sh runs a fixed POSIX sh script whose only inputs are its arguments.
func (k *kernel) sh(ctx context.Context, conn node.Conn, n sdk.Node, script string, args ...string) (string, error) {
	return k.run(ctx, conn, n, append([]string{"sh", "-c", script, "sh"}, args...)...)
}

// toolErr turns a failed kmod tool into a short error with its own words.
func toolErr(err error) string {
	if ee, ok := err.(*node.ExitError); ok {
		msg := strings.TrimSpace(ee.Stderr)
		if msg == "" {
			msg = fmt.Sprintf("exit status %d", ee.ExitCode)
		}
		return node.QuoteArgv(ee.Argv) + ": " + msg
	}
	return err.Error()
}
