package kmod

// Exported for the external tests only.
var (
	MemKernel  = memKernel
	ParamEqual = paramEqual
	ReadScript = readScript
)

// SetTestStep makes f run at each step of an apply (see step); nil stops.
func SetTestStep(f func(address, name string)) { testStep = f }
