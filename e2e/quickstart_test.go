package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
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
	r := <-other
	if r.err != nil {
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
	// Each run's own names (from the folder it prints): other demos may
	// run on this engine meanwhile.
	for _, o := range [][]byte{out, r.out} {
		m := regexp.MustCompile(`== preparing .*/sparkform-quickstart\.(\S+)`).FindSubmatch(o)
		if m == nil {
			t.Fatalf("run.sh did not name its folder:\n%s", o)
		}
		id := strings.ToLower(string(m[1]))
		if cid, err := dockerInspect("sparkform-quickstart-" + id); err == nil {
			t.Errorf("container sparkform-quickstart-%s left behind: %s", id, cid)
		}
		if _, err := exec.Command("docker", "image", "inspect", "sparkform-quickstart/serve:"+id).CombinedOutput(); err == nil {
			t.Errorf("image sparkform-quickstart/serve:%s left behind", id)
		}
	}
	if bytes.Equal(out, r.out) {
		t.Error("the two runs printed the same: not two runs")
	}

	// A reader that goes away (run.sh | head) still gets everything
	// removed: the demo's image, folder and state (it left them before).
	piped := exec.Command("sh", "-c", `"$0" "$1" | head -3`, "../examples/quickstart/run.sh", sparkformBin)
	piped.Env = append(piped.Environ(), "TMPDIR="+tmp, "NO_COLOR=1")
	if o, err := piped.CombinedOutput(); err != nil {
		t.Fatalf("run.sh | head: %v\n%s", err, o)
	}
	// (Its folder is gone: checked with the others' below. The cleanup
	// that removes it removes the image first.)

	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Errorf("run.sh left files in TMPDIR: %v %v", left, err)
	}
}
