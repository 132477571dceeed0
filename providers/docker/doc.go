// Package docker is the sparkform provider for the Docker Engine on a node:
// docker_image and docker_container.
//
// Connection: the Engine API through its official Go SDK
// (github.com/moby/moby/client), API version negotiated (Docker 20.10 /
// API 1.41 and newer), carried over the node transport: the node's
// /var/run/docker.sock dialled through node.Conn.Dial (locally the socket,
// over SSH a direct-streamlocal channel). When the connecting user cannot
// open the socket and the node has become = true, each API connection is
// a Become command on the node spoken over its stdin/stdout: the node
// helper's `dial unix:///var/run/docker.sock` when the helper is on the
// node (node.HelperPath; one small process, no Docker CLI start), else
// `docker system dial-stdio`, which opens the same socket (sudo resets
// DOCKER_HOST) (a transport's Stream method when it has one, see
// streamer; otherwise node.Conn.Run with streaming Stdin/Stdout). Without
// become the error says to join the docker group or set become. The docker
// CLI's output is never parsed.
//
// docker_image: name, pull ("missing", "always", "never"), keep_locally.
// Read reports image_id and repo_digest from the node; with pull =
// "always" Plan asks the registry (through the engine) for the current
// digest and plans a pull when it moved. Pull progress is streamed as
// the bytes done and total over all layers (Unit "bytes", at most four
// events a second) with a short message ("pulling REF: 2/5 layers"); the
// CLI renders sizes and rates.
//
// docker_container: Read observes the container's real configuration
// (inspect), whether it runs, and the cgroup limits the kernel applied
// (memory.max, memory.swap.max, cpu.max; on cgroup v1 the equivalents,
// reported in v2 form). Values the engine or image fill in (image ENV,
// default device permissions, ordering of env, mounts, devices, caps) are
// not drift: Read keeps the user's spelling whenever the observed fact
// means the same. A stopped container (must_run) or a removed one is drift.
// memory, memory_swap, cpus and restart change in place (ContainerUpdate);
// every other attribute replaces the container. cpus is applied as a CFS
// quota (CpuQuota/CpuPeriod), not NanoCpus, so a recipe written for a
// bigger host still applies, and the kernel's cpu.max is what it says.
//
// Everything sparkform creates carries the label sparkform.address (the
// resource address); a same-named container without it is refused (import
// it instead). More than MaxBinds binds, and bind_files sources that are
// not regular files on the node (symlinks included), are refused at plan
// time with one remote command for the whole list.
//
// Read is batched per node: image inspects and container inspects do not
// depend on each other and run together in one concurrent wave
// (readParallel at a time), then the cgroup values of every running
// container come from one remote command, run as the login user (root
// only when something was unreadable): two round trips per node for any
// mix of the two types. Over dial-stdio (become) the inspects go one
// after another on one stream instead: each concurrent call would start
// one more sudo and docker CLI on the node. RoundTrips counts sequential
// waves. A wait
// block is probed from the node (over SSH through the connection); while
// apply waits, progress reports the elapsed time every second, and a
// timeout error names what was probed and how long it waited.
package docker
