package e2e

import (
	"os"
	"os/exec"
	"testing"
)

// TestQuickstart runs examples/quickstart/run.sh (what `make demo` runs)
// with the built binary: plan, apply, show, destroy, and nothing left
// behind: no container, no image, no temporary folder.
func TestQuickstart(t *testing.T) {
	requireParts(t)
	cmd := exec.Command("../examples/quickstart/run.sh", sparkformBin)
	tmp := t.TempDir()
	cmd.Env = append(cmd.Environ(), "TMPDIR="+tmp, "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
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
	if id, err := dockerInspect("sparkform-quickstart"); err == nil {
		t.Errorf("container sparkform-quickstart left behind: %s", id)
	}
	if _, err := exec.Command("docker", "image", "inspect", "sparkform-quickstart/serve:1").CombinedOutput(); err == nil {
		t.Errorf("image sparkform-quickstart/serve:1 left behind")
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Errorf("run.sh left files in TMPDIR: %v %v", left, err)
	}
}
