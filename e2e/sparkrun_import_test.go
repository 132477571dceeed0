package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
)

// standinRecipe is a sparkrun v2 recipe whose mod (mods/mark in its
// repository) must run in the image before the stand-in server starts.
const standinRecipe = `# A sparkrun recipe with a mod, served by a stand-in vllm.
recipe_version: "2"
runtime: vllm
container: %s
mods:
  - mods/mark
defaults:
  port: 8000
  tensor_parallel: 1
command: |
  vllm serve stand-in/model \
    --port {port} \
    -tp {tensor_parallel}
`

// TestSparkrunRecipeWithMod: a sparkrun YAML recipe with a mod imports
// (the mod from the recipe's repository, found by its .git) into a root
// that applies on a real sshd node: the node builds the image with the mod
// (node_command.mods through sudo -n docker), the container runs it and
// the stand-in server answers with what the mod wrote; a second plan is
// empty; an image removed by hand is drift the plan shows; destroy removes
// the container and the built image, and leaves the recipe's image.
func TestSparkrunRecipeWithMod(t *testing.T) {
	requireParts(t)
	bed := testbed.StartT(t, 1)
	n := bed.Nodes[0]

	const base = "sparkform-e2e/sparkrun-base:1"
	ctxDir := t.TempDir()
	copyTree(t, "testdata/sparkrun-standin", ctxDir)
	bb, err := os.ReadFile("/bin/busybox")
	realpart.Need(t, "busybox-static at /bin/busybox", err)
	os.WriteFile(filepath.Join(ctxDir, "busybox"), bb, 0o755)
	cmd := exec.Command("docker", "build", "-q", "-t", base, ctxDir)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build %s: %v\n%s", base, err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", base).Run() })
	const container = "standin-r0"
	dockerRm(container)
	t.Cleanup(func() { dockerRm(container) })

	top := t.TempDir()
	writeFiles(t, filepath.Join(top, "repo"), map[string]string{
		".git/HEAD":             "ref: refs/heads/main\n",
		"recipes/standin.yaml":  fmt.Sprintf(standinRecipe, base),
		"mods/mark/run.sh":      "#!/bin/sh\nset -e\necho \"mod ran in $WORKSPACE_DIR\" > applied\n",
		"mods/mark/unused.conf": "kept = true\n",
	})
	work := filepath.Join(top, "root")
	env := append(os.Environ(), "NO_COLOR=1", "HOME="+t.TempDir())
	imp := (&cli{t: t, dir: top, env: env}).must(0, "recipe", "import", "repo/recipes/standin.yaml", "-o", work)
	if imp.stderr != "" {
		t.Errorf("import warned: %s", imp.stderr)
	}
	main, _ := os.ReadFile(filepath.Join(work, "main.sf.hcl"))
	tag := regexp.MustCompile(`sparkform-mods/standin:[0-9a-f]{16}`).FindString(string(main))
	if tag == "" {
		t.Fatalf("no mods image in:\n%s", main)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })

	// No GPU device driver here, nor an engine that may raise memlock:
	// the container without a GPU request (see noGPUContainer).
	const modHead = "module \"recipe\" {\n"
	main = []byte(strings.Replace(string(main), modHead, modHead+"  gpus    = \"\"\n  ulimits = "+noGPUContainer(t)+"\n", 1))
	if err := os.WriteFile(filepath.Join(work, "main.sf.hcl"), main, 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	env = append(env,
		fmt.Sprintf(`SPARKFORM_VAR_nodes={"spark-01" = { host = %q, port = %d, rank = 0, home = %q, serve_port = %d }}`, n.Host, n.Port, n.Root, port),
		"SPARKFORM_VAR_user="+bed.User,
		"SPARKFORM_VAR_identity_file="+bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+bed.KnownHosts,
	)
	sf := &cli{t: t, dir: work, env: env}
	sf.must(0, "validate")
	plan := sf.must(2, "plan", "-detailed-exitcode")
	wantIn(t, "plan", plan.stdout, `node_command.mods["spark-01"] will be created`, `module.recipe.docker_container.serve["spark-01"] will be created`)
	sf.must(0, "apply", "-auto-approve")
	if got := docker(t, "inspect", "-f", "{{.Config.Image}}", container); got != tag {
		t.Errorf("the container runs %s, want the image with the mod %s", got, tag)
	}
	if got := health(t, port); got != "mod ran in /srv" {
		t.Errorf("health = %q, want what the mod wrote (in the image's working folder)", got)
	}
	sf.must(0, "plan", "-detailed-exitcode")

	// The built image removed by hand: its check fails, the plan says so.
	docker(t, "rmi", "-f", tag)
	drift := sf.must(2, "plan", "-detailed-exitcode")
	wantIn(t, "plan after the image was removed", drift.stdout, `node_command.mods["spark-01"]`)

	sf.must(0, "destroy", "-auto-approve")
	if _, err := dockerInspect(container); err == nil {
		t.Error("the container is still there after destroy")
	}
	if out, err := exec.Command("docker", "image", "inspect", tag).CombinedOutput(); err == nil {
		t.Errorf("the mods image is still there after destroy: %s", strings.TrimSpace(string(out))[:80])
	}
	docker(t, "image", "inspect", base) // the recipe's own image stays
}
