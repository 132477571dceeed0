package kmod

import "errors"

// Sentinel errors; the messages built on them say what to do.
var (
	// ErrInUse: a module that has to be unloaded has a non-zero refcount.
	ErrInUse = errors.New("module is in use")
	// ErrBuiltin: a built-in module cannot be loaded, unloaded or reloaded.
	ErrBuiltin = errors.New("module is built into the kernel")
	// ErrNotTaken: after a load the kernel shows other parameter values.
	ErrNotTaken = errors.New("the kernel did not take the parameter values")
	// ErrNoCgroup2: the node has no cgroup v2 hierarchy at the cgroup root.
	ErrNoCgroup2 = errors.New("no cgroup v2 on the node")
	// ErrNotEmpty: a cgroup to remove still has processes.
	ErrNotEmpty = errors.New("cgroup is not empty")
	// ErrBadValue: a limit or name the provider cannot parse.
	ErrBadValue = errors.New("invalid value")
)
