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
// TestKillPoints (faults_test.go) is the short version of the torture
// suite: testdata/faults (kmod_module, gitkit_checkout, hubstage_manifest
// with manifest_path, docker_image, docker_container, sparkform_data) on an
// sshd node with a simulated kernel, run by sparkform built with the
// sparkform_faultinject tag so that a provider pauses between its node
// change and its reply (providers/sdk/fault_inject.go). At 11 fixed kill
// points, one per window (each type's create and delete, CLI and plugin
// kills), it kills, then requires one converging apply, a plan with no
// changes, and a destroy that leaves the node as before: module parameters
// put back, no folder, file, restore record or container left.
//
// TestTorture (torture_test.go, build tag torture, run by `make torture`)
// kills at >= 100 random moments of apply and destroy on two nodes with 200
// sparkform_data (CLI, plugin and sshd kills) and prints the table.
//
// The test needs root, sshd, git, busybox-static and a Docker Engine; when
// one is missing it is skipped, or fails under CI=true.
package e2e
