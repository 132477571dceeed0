package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/kernelsim"
	"github.com/sparkform/sparkform/internal/testbed"
)

// secondRecipe is a single-node recipe beside the imported seed in one
// root: the same stand-in serving stack (TP1) on a third node, its own
// node block, no display unlock.
const secondRecipe = `
variable "third" {
  type = object({ host = string, port = number, home = string, serve_port = number })
}

node "third" {
  host          = var.third.host
  port          = var.third.port
  user          = var.user
  identity_file = var.identity_file
  known_hosts   = var.known_hosts
  become        = true
}

module "second" {
  source = "./modules/spark-recipe"
  recipe = {
    required_nodes       = 1
    tensor_parallel_size = 1
    nodes = { "spark-03" = { node = node.third, rank = 0, home = var.third.home, serve_port = var.third.serve_port } }
  }
  kit        = local.recipe_kit
  hub_dir    = "%s"
  model      = { repo_id = "%s", target = "/model" }
  drafter    = { repo_id = "%s", target = "/draft-exl3" }
  name       = "i14-second"
  image      = "%s"
  entrypoint = local.entrypoint
  args       = local.args
  env        = local.env
  memory     = "9g"
  cpus       = 6
  shm_size   = "2g"
  devices    = ["/dev/zero:/dev/dri/card0:rw"]
  gpus       = ""
  ulimits    = { memlock = "%s", stack = "67108864" }
  mounts = [
    { source = "%s", target = "/hub", read_only = true },
    { source = "{kit}/serving", target = "/opt/ds41-serving", read_only = true },
    { source = "{kit}/aot/mxfp8_gemm_cutlass_sm120", target = "/usr/local/lib/python3.12/dist-packages/flashinfer/data/aot/mxfp8_gemm_cutlass_sm120", read_only = true },
    { source = "{home}/exl3-cache", target = "/cache", create_host_path = true },
  ]
}
`

// TestRecipesOneCluster: `sparkform recipe import` of the seed recipe (its
// paths pointed at the test's hub, kit repo and image) gives a root that
// applies on two real sshd nodes and serves; a second, single-node recipe
// on a third node sits in the same root and state. Plan shows both;
// `destroy -target module.second` takes only the second away and the first
// keeps serving; destroy puts the nodes back.
func TestRecipesOneCluster(t *testing.T) {
	requireParts(t)
	bed := testbed.StartT(t, 3)
	simBin, err := kernelsim.Binary()
	if err != nil {
		t.Fatal(err)
	}
	sims := sharedDir(t, "sparkform-e2e-kernel-")
	keys := []string{"spark-01", "spark-02"}
	sim := map[string]*kernelsim.Sim{}
	for _, key := range keys {
		s, err := kernelsim.Create(filepath.Join(sims, key), kernelsim.SeedCatalog, simBin)
		if err != nil {
			t.Fatal(err)
		}
		sim[key] = s
	}
	shared := sharedDir(t, "sparkform-e2e-nas-")
	h := &hub{t: t, dir: filepath.Join(shared, "hub")}
	h.commit(modelRepo, rev("model-1"), map[string]string{
		"config.json":                      `{"model_type":"deepseek_v41"}`,
		"model-00001-of-00002.safetensors": "shard one",
		"model-00002-of-00002.safetensors": "shard two",
	})
	h.commit(draftRepo, rev("draft-1"), map[string]string{"draft.safetensors": "drafter weights"})
	kitRepo, kitCommit := makeKitRepo(t, shared, bed.User)
	const image = "sparkform-e2e/i14-recipes:1"
	buildImage(t, image)
	containers := []string{"recipe-r0", "recipe-r1", "i14-second-r0"}
	for _, c := range containers {
		name := c
		dockerRm(name)
		t.Cleanup(func() { dockerRm(name) })
	}

	// The seed recipe, pointed at the test's parts (and without the
	// manifest file, which the nodes here would share on one disk).
	seed, err := os.ReadFile("../internal/recipeimport/testdata/seed.recipe.toml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(seed)
	for old, new := range map[string]string{
		"878e0eecd893fadc69ad2d58b2df0fabb0fae2ee":                                  kitCommit,
		"https://github.com/coolbho3k/DeepSeek-v4.1-Flash-2x-DGX-Spark.git":         kitRepo,
		"/mnt/nas/ai/huggingface/hub":                                               h.dir,
		"ghcr.io/coolbho3k/deepseek-v4.1-flash-exl3-3bpw-2x-dgx-spark:20260917-rc2": image,
		`devices = ["/dev/dri/card0"]`:                                              `devices = ["/dev/zero:/dev/dri/card0:rw"]`,
		`extra_mounts_manifest = "/tmp/sm121-exl3-mounts.txt"` + "\n":               "",
	} {
		if !strings.Contains(text, old) {
			t.Fatalf("the seed no longer holds %q", old)
		}
		text = strings.ReplaceAll(text, old, new)
	}
	top := t.TempDir()
	recipe := filepath.Join(top, "recipe.toml")
	if err := os.WriteFile(recipe, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(top, "root")
	env := append(os.Environ(), "NO_COLOR=1", "HOME="+t.TempDir(),
		"SPARKFORM_KMOD_SYSFS_ROOT="+filepath.Join(sims, "{node}", "sys"),
		"SPARKFORM_KMOD_MODPROBE="+filepath.Join(sims, "{node}", "bin", "modprobe"),
		"SPARKFORM_KMOD_RMMOD="+filepath.Join(sims, "{node}", "bin", "rmmod"))
	(&cli{t: t, dir: top, env: env}).must(0, "recipe", "import", recipe, "-o", work)
	(&cli{t: t, dir: work, env: env}).must(0, "fmt", "-check")
	// The second recipe shares the kit settings the import wrote.
	main, _ := os.ReadFile(filepath.Join(work, "main.sf.hcl"))
	kitStart := strings.Index(string(main), "  kit = {")
	if kitStart < 0 {
		t.Fatalf("the imported root has no kit:\n%s", main)
	}
	kitEnd := strings.Index(string(main)[kitStart:], "}\n") + kitStart + 2
	kitBlock := strings.Replace(string(main)[kitStart:kitEnd], "  kit = ", "  recipe_kit = ", 1)
	// No GPU device driver here, nor an engine that may raise memlock: the
	// imported recipe's container without a GPU request (see noGPUContainer).
	const modHead = "module \"recipe\" {\n"
	if !strings.Contains(string(main), modHead) {
		t.Fatalf("the imported root has no module \"recipe\":\n%s", main)
	}
	main = []byte(strings.Replace(string(main), modHead, modHead+"  gpus    = \"\"\n  ulimits = "+noGPUContainer(t)+"\n", 1))
	if err := os.WriteFile(filepath.Join(work, "main.sf.hcl"), main, 0o644); err != nil {
		t.Fatal(err)
	}
	second := fmt.Sprintf(secondRecipe, h.dir, modelRepo, draftRepo, image, engineMemlock(t), h.dir)
	second += "\nlocals {\n" + kitBlock + "}\n"
	if err := os.WriteFile(filepath.Join(work, "second.sf.hcl"), []byte(second), 0o644); err != nil {
		t.Fatal(err)
	}

	n := bed.Nodes
	ports := []int{freePort(t), freePort(t), freePort(t)}
	env = append(env,
		fmt.Sprintf(`SPARKFORM_VAR_nodes={"spark-01" = { host = %q, port = %d, rank = 0, home = %q, serve_port = %d }, "spark-02" = { host = %q, port = %d, rank = 1, home = %q, serve_port = %d }}`,
			n[0].Host, n[0].Port, n[0].Root, ports[0], n[1].Host, n[1].Port, n[1].Root, ports[1]),
		fmt.Sprintf(`SPARKFORM_VAR_third={ host = %q, port = %d, home = %q, serve_port = %d }`, n[2].Host, n[2].Port, n[2].Root, ports[2]),
		"SPARKFORM_VAR_user="+bed.User,
		"SPARKFORM_VAR_identity_file="+bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+bed.KnownHosts,
	)
	sf := &cli{t: t, dir: work, env: env}
	sf.must(0, "validate")

	plan := sf.must(2, "plan", "-detailed-exitcode")
	wantIn(t, "plan", plan.stdout,
		`module.recipe.kmod_module.display["spark-01"] will be`,
		`module.recipe.docker_container.serve["spark-02"] will be created`,
		`module.second.docker_container.serve["spark-03"] will be created`,
		`module.second.gitkit_checkout.kit["spark-03"] will be created`)
	wantNotIn(t, "plan", plan.stdout, `module.second.kmod_module`)
	sf.must(0, "apply", "-auto-approve")
	for i, c := range containers {
		if got := docker(t, "inspect", "-f", "{{.State.Running}}", c); got != "true" {
			t.Errorf("after apply: %s running = %s", c, got)
		}
		if got := health(t, ports[i]); got != "ok" {
			t.Errorf("after apply: %s health = %q\n%s", c, got, docker(t, "logs", c))
		}
	}
	sf.must(0, "plan", "-detailed-exitcode")

	// Take the second recipe away: the first keeps serving.
	d := sf.must(0, "destroy", "-auto-approve", "-target", "module.second")
	wantIn(t, "destroy -target module.second", d.stdout, "module.second.docker_container.serve")
	wantNotIn(t, "destroy -target module.second", d.stdout, "module.recipe.")
	if _, err := dockerInspect("i14-second-r0"); err == nil {
		t.Error("the second recipe's container is still there")
	}
	for i, c := range containers[:2] {
		if got := health(t, ports[i]); got != "ok" {
			t.Errorf("after destroying module.second: %s health = %q", c, got)
		}
	}
	if m := sim["spark-01"].Param("nvidia_drm", "modeset"); m != "Y" {
		t.Errorf("the first recipe's module was touched: modeset=%s", m)
	}
	st := sf.must(0, "state", "list")
	if strings.Contains(st.stdout, "module.second") || !strings.Contains(st.stdout, "module.recipe.docker_container.serve") {
		t.Errorf("state after destroying module.second:\n%s", st.stdout)
	}

	sf.must(0, "destroy", "-auto-approve")
	for _, key := range keys[:2] {
		if m := sim[key].Param("nvidia_drm", "modeset"); m != "N" {
			t.Errorf("%s: nvidia_drm not restored: modeset=%s", key, m)
		}
	}
	if st := sf.must(0, "state", "list"); strings.TrimSpace(st.stdout) != "" {
		t.Errorf("state not empty after destroy:\n%s", st.stdout)
	}
}
