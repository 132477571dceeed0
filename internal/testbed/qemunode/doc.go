// Package qemunode boots a REAL Linux kernel under qemu for tests and
// hands it out as an ordinary sparkform node reached over SSH.
//
// Build makes the image once and caches it (CacheDir): the Debian cloud
// kernel (linux-image-*-cloud-amd64, fetched with `apt-get download`) and a
// small initramfs with busybox-static, the real kmod tools, dropbear (+
// sftp-server), and a module subset (virtio_net for the NIC; brd, null_blk,
// loop, dummy, scsi_debug for tests). The build script is embedded
// (build-node.sh) and the cache is keyed by its hash, so a changed script
// rebuilds.
//
// Start boots it (TCG; SPARKFORM_QEMU_ACCEL=kvm opts in to KVM, which is
// not the default because a /dev/kvm that opens may still not run a guest) with qemu user networking restricted to one forwarded port
// 127.0.0.1:PORT -> guest:22, waits for /init's "ready" line on the serial
// console and for the SSH banner, and writes a known_hosts line from the
// guest's host key, so host-key checking stays on. The node logs in as root
// (no sudo in the guest: Become stays false). cgroup2 is mounted at
// /sys/fs/cgroup.
//
// StartT does all that for a test and stops the VM when it ends; when qemu
// or the build tools are missing it skips, or fails under CI=true.
package qemunode
