// Package realpart decides what a test does when a real part it drives
// is missing here: root, sshd and the test bed, git, busybox-static, the
// Docker Engine, etcd, a registry. Under CI (the CI variable set to any
// non-empty value, as `make test` and .ci/run do) the test fails: a CI
// run never passes by silently skipping the parts it exists to test.
// Elsewhere the test is skipped with the reason, so a developer without
// the part still runs the rest.
//
// Every test helper that checks for a part goes through this package,
// so the rule is stated and enforced in one place.
package realpart
