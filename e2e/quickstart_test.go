package e2e

import (
	"os"
	"os/exec"
	"testing"
)

// TestQuickstart runs examples/quickstart/run.sh (what `make demo` runs)
// with the built binary: plan, apply, show, destroy, and nothing left
// behind: no container, no image, no temporary folder.
//
// Two demos run at once on the one Docker Engine (issue 33: fixed names
// made them clobber each other): each uses its own container and image.
func TestQuickstart(t *testing.T) {
	requireParts(t)
	tmp := t.TempDir()
	run := func() ([]byte, error) {
		cmd := exec.Command("../examples/quickstart/run.sh", sparkformBin)
		cmd.Env = append(cmd.Environ(), "TMPDIR="+tmp, "NO_COLOR=1")
		return cmd.CombinedOutput()
	}
	type result struct {
		out []byte
		err error
	}
	other := make(chan result, 1)
	go func() {
		out, err := run()
		other <- result{out, err}
	}()
	out, err := run()
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	if r := <-other; r.err != nil {
		t.Fatalf("the second run.sh at the same time: %v\n%s", r.err, r.out)
	}
	wantIn(t, "run.sh", string(out),
		"Docker Engine found: the container is part of the run",
		"Apply complete! Resources: 3 added, 0 changed, 0 destroyed.",
		"docker_container.serve[0]: Creation complete",
		"No changes.",
		"Destroy complete! Resources: 0 added, 0 changed, 3 destroyed.")
	// The demo builds its image without a builder: no legacy-builder
	// deprecation notice, no BuildKit/buildx hint.
	wantNotIn(t, "run.sh", string(out), "DEPRECATED", "legacy builder", "buildx", "BuildKit")
	if left, _ := exec.Command("docker", "ps", "-a", "-q", "--filter", "name=^sparkform-quickstart").Output(); len(left) > 0 {
		t.Errorf("containers of the demo left behind: %s", left)
	}
	if left, _ := exec.Command("docker", "images", "-q", "sparkform-quickstart/serve").Output(); len(left) > 0 {
		t.Errorf("images of the demo left behind: %s", left)
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Errorf("run.sh left files in TMPDIR: %v %v", left, err)
	}
}
