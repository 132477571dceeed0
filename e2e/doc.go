// Package e2e holds the end-to-end tests: the sparkform binary (built once
// by TestMain, as a -tags kmodsim test build so its kmod provider drives
// simulated kernels) drives the examples/ configurations on real parts.
//
// TestSeedTwoNodes runs examples/dsv41-flash-exl3-2x, unchanged (its
// *.sf.hcl files are symlinked into a scratch working directory, so state
// never lands in examples/), on two real sshd nodes on loopback
// (internal/testbed), the machine's Docker Engine and one SIMULATED kernel
// per node (internal/kernelsim, reached through the test build's kmod
// provider and its "{node}" placeholder). Only hosts, paths, the image, the device and the
// kit's repo/commit are overridden, through SPARKFORM_VAR_* variables.
// It shows, in order: apply from nothing; a second plan with no changes; a
// simulated reboot of one node planned exactly and converged; a moved hub
// ref planned as a manifest update plus a container replacement; destroy in
// reverse dependency order leaving the nodes as they were; and a failed
// restore (module held in use) that keeps only that instance in state until
// the holder is gone and destroy is run again.
//
// TestQuickstart runs examples/quickstart/run.sh (what `make demo` runs)
// and checks it leaves no container, image or temporary folder behind.
//
// The test needs root, sshd, git, busybox-static and a Docker Engine; when
// one is missing it is skipped, or fails under CI=true.
package e2e
