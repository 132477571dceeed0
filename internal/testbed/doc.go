// Package testbed starts real OpenSSH sshd "nodes" for tests: each node is
// its own `/usr/sbin/sshd -D -e -f CONFIG` on 127.0.0.(10+i) and a free
// port, with its own host key. Host-key checking stays on: the Bed writes a
// known_hosts file with every node's key.
//
// Every node logs in as one of three local users shared by all beds on the
// machine: User (passwordless sudo through /etc/sudoers.d, so `become`
// works), NoSudoUser (no sudo rights, for the "sudo wants a password"
// path) and DockerUser (sudo, and a member of the docker group where there
// is one: the Docker socket opens without sudo, as for the user of a DGX
// Spark). They are created on first use under an flock, so concurrent
// test processes are safe. The client key is generated per Bed and
// authorized for every user through a bed-private AuthorizedKeysFile;
// nothing is written to the users' own ~/.ssh. sshd also reads the user's
// ~/.ssh/authorized_keys (its default), where providers under test may
// install keys as they would on a real node (hubstage's one-time keys).
//
// All nodes run on this machine, so they share one filesystem: tests that
// need per-node state use Node.Root, a fresh directory owned by User.
//
// StartBehindJumps puts the nodes behind a chain of jump hosts, each in its
// own network namespace, so that they are reachable only through the whole
// chain (ProxyJump tests); Node.Kill and Node.Revive stop and restart one
// sshd in place (retry tests).
//
// Starting a bed needs root (to create users and run sshd) and sshd; when
// either is missing Start returns an error wrapping ErrUnavailable, and
// StartT skips the test, or fails it when CI=true.
package testbed
