// Package kmod is the sparkform provider for kernel state on a node:
// kmod_module (a loaded module and its parameters) and kmod_cgroup (a
// cgroup v2 group and its limits). Both are temporary by design (nothing is
// written to /etc/modprobe.d, modules-load.d or any boot config: a reboot
// resets them and the next plan shows the drift) and exactly reversible.
//
// # kmod_module
//
// Read observes /sys/module/NAME (loaded, refcnt, holders, every readable
// parameter) for all instances on a node in ONE remote command. Parameters
// the config does not name are never drift; values compare as the kernel
// means them (a bool reads Y/N and accepts 1/0/y/n/Y/N/on/off, integers
// compare by value), so modeset = "1" against an observed Y is no change.
//
// Apply records `prior` (loaded or not, every readable parameter) before the
// first change, durably, in a restore record on the node (package
// providers/internal/restore: /var/lib/sparkform/restore/kmod_module/ as
// root, keyed by the module's sysfs folder). The first record wins: a create
// whose reply was lost (a killed CLI or plugin) and is then replaced, or
// created again, keeps the values the module had before sparkform first
// touched it, and destroy reads the record, not only private data. Then: if the module is loaded with other values, unloads
// only that module (rmmod, never modprobe -r, which would also unload its
// unused dependencies), loads it with `modprobe NAME k=v ...` as an argv,
// reads it back and fails when the kernel did not take the values. A module
// in use is never unloaded: the error names its holders and refcount and the
// node is left as it was. If a load fails after the unload, the previous
// values are loaded back (best effort) and the state reports what is really
// there.
//
// Parameter values are plain printable ASCII without spaces or double
// quotes: modprobe joins KEY=VALUE words into one string that the kernel
// splits again at whitespace, with quotes grouping, so such a value would
// set other parameters (refused at validate and again at apply).
//
// Destroy puts prior back (and only after the verify removes the record): a plain reload (modprobe applies the node's own
// modprobe.d options), then a reload with explicit values for the
// parameters that still differ from prior, then a verify; or an unload when
// the module was not loaded before. When the restore cannot happen the
// instance stays in state with its prior and a later destroy retries.
//
// Changing a parameter always reloads the module (also for writable
// parameters), so a module in use cannot change its parameters.
//
// # kmod_cgroup
//
// A cgroup v2 group under the cgroup root. Apply creates it (and any missing
// ancestors, recorded), enables the needed controllers (memory, cpu, pids)
// in the ancestors' cgroup.subtree_control (recording exactly which ones it
// enabled), writes the limits and reads them back. What it will create and
// enable is appended to a restore record on the node (kind kmod_cgroup,
// keyed by the group's absolute path) before the first change, so a reply
// lost after the change loses none of it: Read of a recovered instance (no
// private data) takes the facts from the record, and Destroy takes them
// from private data and the record together. Read reports drift when a
// limit file changed. Destroy removes the group if it is empty (else an
// error lists the pids inside), removes the ancestors it created and
// disables only the controllers it enabled (a recorded group that is gone
// or never was made is fine), then removes the record. The instance leaves
// state only once all that is done: a step that fails (a dropped link, a
// write the kernel refuses) or a record that cannot be removed is an
// error that keeps the instance and the record, and the next destroy
// finishes. Only what others use now is left, with a warning: an ancestor
// with other groups or processes in it, a controller a child group has
// enabled. A node without cgroup v2 gets an error saying so.
//
// # Simulated kernels
//
// The provider finds the kernel through Config; New, what the sparkform
// binary serves, always uses the real one (/sys, /sys/fs/cgroup, modprobe
// and rmmod from the node's PATH) and reads no environment variables.
// Tests build the provider with NewWithConfig pointed at a simulated
// kernel (internal/kernelsim). "{node}" in SysfsRoot, Modprobe, Rmmod or
// RestoreDir is replaced by the node's key (Config.For, NodeKey), so one
// provider process drives a separate simulated kernel per node. The CLI
// and e2e tests run a test build of sparkform (go build -tags kmodsim,
// internal/kernelsim/kmodsim) whose kmod provider takes that Config from
// SPARKFORM_KMOD_* variables; the shipped binary has no such code.
package kmod
