package docker

import "errors"

// Sentinel errors. Callers match them with errors.Is; messages built on top
// of them say what to do.
var (
	// ErrNotManaged: a container with the wanted name exists on the node and
	// sparkform did not create it (no matching address label).
	ErrNotManaged = errors.New("container exists and was not created by sparkform")
	// ErrNotRegularFile: a bind_files source is not a regular file on the node.
	ErrNotRegularFile = errors.New("bind source is not a regular file")
	// ErrBadSize: a size string that is not bytes or N[kmgt].
	ErrBadSize = errors.New("invalid size")
	// ErrImageMissing: the image is not on the node and pull = "never".
	ErrImageMissing = errors.New("image not present on node")
	// ErrWaitTimeout: the wait condition did not hold within its timeout.
	ErrWaitTimeout = errors.New("container did not become ready in time")
	// ErrLinkLost: the connection to the node broke while apply waited.
	ErrLinkLost = errors.New("connection to the node lost")
	// ErrContainerExited: the container stopped while we waited for it.
	ErrContainerExited = errors.New("container exited")
	// ErrNoGPUDriver: the container asks for GPUs (gpus) and the node's
	// Docker Engine has no device driver that answers a GPU request.
	ErrNoGPUDriver = errors.New("the Docker Engine on the node has no GPU device driver")
	// ErrUlimitNotPermitted: the runtime may not raise a ulimit the
	// container asks for (above the engine's own hard limit).
	ErrUlimitNotPermitted = errors.New("ulimit not permitted by the Docker Engine")
	// ErrNoContainer: logs of an instance whose container is not on the node.
	ErrNoContainer = errors.New("container not found")
)
