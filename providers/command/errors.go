package command

import "errors"

// Sentinel errors. Messages built on top of them say what to do.
var (
	// ErrDoesNotFit: node_memory_fit found that what the recipe asks is
	// more than the node has available.
	ErrDoesNotFit = errors.New("the recipe does not fit in the node's memory")
	// ErrNoMemFigures: the node gave neither nvidia-smi memory figures nor
	// MemTotal and MemAvailable in /proc/meminfo.
	ErrNoMemFigures = errors.New("no memory figures on the node")
)
