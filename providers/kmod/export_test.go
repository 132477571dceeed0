package kmod

// Exported for the external tests only.
var (
	MemKernel  = memKernel
	ParamEqual = paramEqual
	ReadScript = readScript
)
