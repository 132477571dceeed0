package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
)

// rayRoot calls the spark-recipe module with distributed_backend = "ray"
// on the nodes of var.nodes, with the stand-in Ray image.
const rayRoot = `
variable "nodes" {
  type = map(object({ host = string, port = number, rank = number, serve_port = number }))
}
variable "user" { type = string }
variable "identity_file" { type = string }
variable "known_hosts" { type = string }
variable "required_nodes" {
  type    = number
  default = 2
}
variable "tp" {
  type    = number
  default = 2
}
variable "head_args" {
  type    = list(string)
  default = []
}
variable "worker_args" {
  type    = list(string)
  default = []
}
variable "ready_timeout" {
  type    = string
  default = "2m"
}

node "spark" {
  for_each      = var.nodes
  host          = each.value.host
  port          = each.value.port
  user          = var.user
  identity_file = var.identity_file
  known_hosts   = var.known_hosts
  become        = true
}

module "recipe" {
  source = "./modules/spark-recipe"
  recipe = {
    required_nodes       = var.required_nodes
    tensor_parallel_size = var.tp
    distributed_backend  = "ray"
    nodes                = { for k, n in var.nodes : k => { node = node.spark[k], rank = n.rank, serve_port = n.serve_port } }
  }
  name       = "e2e-ray"
  image      = %q
  entrypoint = ["/bin/busybox", "sh", "/opt/serve"]
  args       = ["--served-model-name", "standin"]
  env        = { EXPECT_RAY_NODES = "2" }
  # No GPU here, and the engine's memlock limit (see noGPUContainer).
  gpus    = ""
  ulimits = %s
  ray = {
    port          = %d
    temp_dir      = %q
    head_args     = var.head_args
    worker_args   = var.worker_args
    ready_timeout = var.ready_timeout
  }
  wait = { timeout = "1m" }
}

output "ray_address" {
  value = module.recipe.ray_address
}
`

// buildImageDir builds an image FROM scratch with busybox-static from
// the build context testdata/DIR, removed when the test ends.
func buildImageDir(t *testing.T, dir, tag string) {
	t.Helper()
	ctxDir := t.TempDir()
	copyTree(t, filepath.Join("testdata", dir), ctxDir)
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		realpart.Missing(t, "busybox-static at /bin/busybox: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "busybox"), bb, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("docker", "build", "-q", "-t", tag, ctxDir)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker build %s: %v\n%s", tag, err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
}

// orderOf returns the line index of the first line holding every one of
// subs, or -1.
func orderOf(out string, subs ...string) int {
	for i, line := range strings.Split(out, "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			return i
		}
	}
	return -1
}

// TestRecipesRay: a Ray recipe (distributed_backend = "ray") on two real
// sshd nodes sharing this machine's Docker Engine, with a STAND-IN image
// whose `ray` answers like Ray's CLI (e2e/testdata/rayimage: it is not
// Ray, which cannot be installed here). Apply starts the Ray head on rank
// 0, the worker on rank 1, waits until the head lists both nodes and only
// then starts the server on rank 0 (the stand-in server itself refuses to
// start otherwise); rank 1 serves nothing. A second plan has no changes;
// bad input (one node, a TP that does not divide the GPUs) is refused and
// changes nothing; a new head replaces the worker, the wait and the
// server; a worker that left is drift, put right by apply; destroy stops
// the server, the worker and the head in that order and leaves no
// container, temp dir or state. Last, a worker that cannot reach the head
// fails the wait, naming it, and no server starts.
func TestRecipesRay(t *testing.T) {
	requireParts(t)
	bed := testbed.StartT(t, 2)
	const image = "sparkform-e2e/ray-standin:1"
	buildImageDir(t, "rayimage", image)
	head, worker, server := "e2e-ray-ray-head", "e2e-ray-ray-r1", "e2e-ray-r0"
	for _, c := range []string{head, worker, server, "e2e-ray-r1"} {
		name := c
		dockerRm(name)
		t.Cleanup(func() { dockerRm(name) })
	}
	rayTmp := filepath.Join(sharedDir(t, "sparkform-e2e-ray-"), "ray-tmp")

	work := t.TempDir()
	mods, err := filepath.Glob("../modules/spark-recipe/*.sf.hcl")
	if err != nil || len(mods) == 0 {
		t.Fatalf("the spark-recipe module's files: %v %v", mods, err)
	}
	for _, m := range mods {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, work, map[string]string{filepath.Join("modules", "spark-recipe", filepath.Base(m)): string(b)})
	}
	rayPort := freePort(t)
	writeFiles(t, work, map[string]string{"main.sf.hcl": fmt.Sprintf(rayRoot, image, noGPUContainer(t), rayPort, rayTmp)})

	n := bed.Nodes
	ports := []int{freePort(t), freePort(t)}
	nodes := func(k int) string {
		s := []string{}
		for i := 0; i < k; i++ {
			s = append(s, fmt.Sprintf(`"spark-0%d" = { host = %q, port = %d, rank = %d, serve_port = %d }`, i+1, n[i].Host, n[i].Port, i, ports[i]))
		}
		return "{" + strings.Join(s, ", ") + "}"
	}
	env := append(os.Environ(), "NO_COLOR=1", "HOME="+t.TempDir(),
		"SPARKFORM_VAR_user="+bed.User,
		"SPARKFORM_VAR_identity_file="+bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+bed.KnownHosts)
	sf := &cli{t: t, dir: work, env: append(env, "SPARKFORM_VAR_nodes="+nodes(2))}
	sf.must(0, "fmt", "-check")
	sf.must(0, "validate")

	plan := sf.must(2, "plan", "-detailed-exitcode")
	wantIn(t, "plan", plan.stdout,
		`module.recipe.node_command.ray_tmp["spark-01"] will be created`,
		`module.recipe.docker_container.ray_head["spark-01"] will be created`,
		`module.recipe.docker_container.ray_worker["spark-02"] will be created`,
		`module.recipe.node_command.ray_ready["spark-01"] will be created`,
		`module.recipe.docker_container.serve["spark-01"] will be created`,
		`"--distributed-executor-backend"`, `"ray"`,
		fmt.Sprintf(`"--address=%s:%d"`, n[0].Host, rayPort))
	wantNotIn(t, "plan", plan.stdout,
		`module.recipe.docker_container.serve["spark-02"]`,
		`module.recipe.docker_container.ray_worker["spark-01"]`,
		`"--nnodes"`, `"--master-addr"`)

	ap := sf.must(0, "apply", "-auto-approve")
	ready := orderOf(ap.stdout, `node_command.ray_ready["spark-01"]`, "Creation complete")
	serving := orderOf(ap.stdout, `docker_container.serve["spark-01"]`, "Creating...")
	workerUp := orderOf(ap.stdout, `docker_container.ray_worker["spark-02"]`, "Creation complete")
	headUp := orderOf(ap.stdout, `docker_container.ray_head["spark-01"]`, "Creation complete")
	workerStart := orderOf(ap.stdout, `docker_container.ray_worker["spark-02"]`, "Creating...")
	if ready < 0 || serving < 0 || workerUp < 0 || headUp < 0 || !(headUp < workerStart && workerUp < ready && ready < serving) {
		t.Errorf("apply order: want the head, then the worker, then the wait, then the server:\n%s", ap.stdout)
	}
	for _, c := range []string{head, worker, server} {
		if got := docker(t, "inspect", "-f", "{{.State.Running}}", c); got != "true" {
			t.Errorf("after apply: %s running = %s\n%s", c, got, docker(t, "logs", c))
		}
		// The Ray containers hold the GPU work: they get the Spark flags.
		wantSparkContainer(t, c)
	}
	if _, err := dockerInspect("e2e-ray-r1"); err == nil {
		t.Error("rank 1 runs a server: with Ray only rank 0 serves")
	}
	if got := health(t, ports[0]); got != "ok" {
		t.Errorf("after apply: health = %q\n%s", got, docker(t, "logs", server))
	}
	status := docker(t, "exec", head, "ray", "status")
	if c := strings.Count(status, " 1 node_"); c != 2 {
		t.Errorf("the head lists %d nodes, want 2:\n%s", c, status)
	}
	wantIn(t, "server log", docker(t, "logs", server), "serve ok: Ray cluster at "+fmt.Sprintf("%s:%d", n[0].Host, rayPort)+" with 2 nodes, TP 2")
	wantIn(t, "worker command", docker(t, "inspect", "-f", "{{json .Args}}", worker),
		fmt.Sprintf(`"--address=%s:%d"`, n[0].Host, rayPort), fmt.Sprintf(`"--node-ip-address=%s"`, n[1].Host))
	out := sf.must(0, "output", "-raw", "ray_address")
	if strings.TrimSpace(out.stdout) != fmt.Sprintf("%s:%d", n[0].Host, rayPort) {
		t.Errorf("output ray_address = %q", out.stdout)
	}
	sf.must(0, "plan", "-detailed-exitcode")
	// The memory check counts both containers rank 0 runs (head and
	// server), and one on the worker's node.
	for key, want := range map[string]string{"spark-01": "2", "spark-02": "1"} {
		fit := sf.must(0, "state", "show", fmt.Sprintf("module.recipe.node_memory_fit.serve[%q]", key)).stdout
		if !regexp.MustCompile(`(?m)^\s*containers\s+= ` + want + `$`).MatchString(fit) {
			t.Errorf("memory check of %s: want containers = %s:\n%s", key, want, fit)
		}
	}

	// Bad input: refused before anything changes, saying what to do.
	ids := map[string]string{}
	for _, c := range []string{head, worker, server} {
		ids[c], _ = dockerInspect(c)
	}
	stateBefore := sf.must(0, "state", "list").stdout
	for _, bad := range []struct {
		name string
		env  []string
		want string
	}{
		{"one node", []string{"SPARKFORM_VAR_nodes=" + nodes(1), "SPARKFORM_VAR_required_nodes=1", "SPARKFORM_VAR_tp=1"},
			`it needs required_nodes >= 2 (it has 1). On one node use distributed_backend = "mp"`},
		{"tp 3 on 2 GPUs", []string{"SPARKFORM_VAR_nodes=" + nodes(2), "SPARKFORM_VAR_tp=3"},
			"tensor_parallel_size = 3 does not divide the recipe's GPUs (required_nodes x gpus_per_node = 2)"},
	} {
		bsf := &cli{t: t, dir: work, env: append(append([]string{}, env...), bad.env...)}
		for _, cmd := range [][]string{{"plan"}, {"apply", "-auto-approve"}} {
			r := bsf.must(1, cmd...)
			wantIn(t, bad.name+": "+cmd[0], r.stderr, bad.want)
			wantNotIn(t, bad.name+": "+cmd[0], r.stdout, "Destroying...", "Creating...")
		}
	}
	for c, id := range ids {
		if got, _ := dockerInspect(c); got != id {
			t.Errorf("bad input changed %s: id %s, was %s", c, got, id)
		}
	}
	if after := sf.must(0, "state", "list").stdout; after != stateBefore {
		t.Errorf("bad input changed the state:\n%s\nwas\n%s", after, stateBefore)
	}
	sf.must(0, "plan", "-detailed-exitcode")

	// A new head is a new cluster: the worker, the wait and the server
	// are replaced with it, and the new cluster serves.
	sf.env = append(sf.env, `SPARKFORM_VAR_head_args=["--num-gpus=1"]`)
	re := sf.must(2, "plan", "-detailed-exitcode")
	wantIn(t, "plan with new head_args", re.stdout,
		`module.recipe.docker_container.ray_head["spark-01"] must be replaced`,
		`module.recipe.docker_container.ray_worker["spark-02"] must be replaced`,
		`module.recipe.node_command.ray_ready["spark-01"] must be replaced`,
		`module.recipe.docker_container.serve["spark-01"] must be replaced`)
	sf.must(0, "apply", "-auto-approve")
	if got := health(t, ports[0]); got != "ok" {
		t.Errorf("after the new head: health = %q\n%s", got, docker(t, "logs", server))
	}
	for c, id := range ids {
		if got, _ := dockerInspect(c); got == id || got == "" {
			t.Errorf("after the new head: %s id %q (was %s)", c, got, id)
		}
	}
	sf.must(0, "plan", "-detailed-exitcode")

	// A worker that leaves is drift: once the head no longer lists it, plan
	// starts it again, waits for the cluster again and restarts the server
	// (a vLLM server does not survive losing a worker).
	docker(t, "stop", worker)
	for deadline := time.Now().Add(time.Minute); ; {
		st := docker(t, "exec", head, "ray", "status")
		if strings.Count(st, " 1 node_") == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the head still lists the stopped worker after a minute:\n%s", st)
		}
		time.Sleep(time.Second)
	}
	left := sf.must(2, "plan", "-detailed-exitcode")
	wantIn(t, "plan after a worker left", left.stdout,
		`module.recipe.node_command.ray_ready["spark-01"] has been deleted`,
		`module.recipe.docker_container.ray_worker["spark-02"] will be updated in-place`,
		`module.recipe.node_command.ray_ready["spark-01"] will be created`,
		`module.recipe.docker_container.serve["spark-01"] must be replaced`)
	sf.must(0, "apply", "-auto-approve")
	if c := strings.Count(docker(t, "exec", head, "ray", "status"), " 1 node_"); c != 2 {
		t.Errorf("after the worker came back the head lists %d nodes, want 2", c)
	}
	if got := health(t, ports[0]); got != "ok" {
		t.Errorf("after the worker came back: health = %q\n%s", got, docker(t, "logs", server))
	}
	sf.must(0, "plan", "-detailed-exitcode")

	d := sf.must(0, "destroy", "-auto-approve")
	serverGone := orderOf(d.stdout, `docker_container.serve["spark-01"]`, "Destruction complete")
	readyGone := orderOf(d.stdout, `node_command.ray_ready["spark-01"]`, "Destruction complete")
	workerStop := orderOf(d.stdout, `docker_container.ray_worker["spark-02"]`, "Destroying...")
	workerGone := orderOf(d.stdout, `docker_container.ray_worker["spark-02"]`, "Destruction complete")
	headStop := orderOf(d.stdout, `docker_container.ray_head["spark-01"]`, "Destroying...")
	headGone := orderOf(d.stdout, `docker_container.ray_head["spark-01"]`, "Destruction complete")
	tmpStop := orderOf(d.stdout, `node_command.ray_tmp["spark-01"]`, "Destroying...")
	if serverGone < 0 || readyGone < 0 || workerGone < 0 || headGone < 0 ||
		!(serverGone < workerStop && readyGone < workerStop && workerGone < headStop && headGone < tmpStop) {
		t.Errorf("destroy order: want the server and the wait, then the worker, then the head, then its temp dir:\n%s", d.stdout)
	}
	for _, c := range []string{head, worker, server} {
		if _, err := dockerInspect(c); err == nil {
			t.Errorf("after destroy: %s is still there", c)
		}
	}
	if _, err := os.Lstat(rayTmp); !os.IsNotExist(err) {
		t.Errorf("after destroy: the head's temp dir %s: %v", rayTmp, err)
	}
	if st := sf.must(0, "state", "list"); strings.TrimSpace(st.stdout) != "" {
		t.Errorf("state not empty after destroy:\n%s", st.stdout)
	}

	// A worker that cannot reach the head: the wait gives up after
	// ready_timeout saying so, and the server is never started.
	lost := &cli{t: t, dir: work, env: append(append([]string{}, sf.env...),
		`SPARKFORM_VAR_worker_args=["--address=127.0.0.1:1"]`, "SPARKFORM_VAR_ready_timeout=4s")}
	r := lost.must(1, "apply", "-auto-approve")
	wantIn(t, "apply with a lost worker", r.stdout+r.stderr,
		`The Ray head (e2e-ray-ray-head) lists 1 of 2 nodes after 4 s: every worker must reach the head at `+fmt.Sprintf("%s:%d", n[0].Host, rayPort), "See docker logs of the workers: e2e-ray-ray-r1 on spark-02.")
	if _, err := dockerInspect(server); err == nil {
		t.Error("the server started though the Ray cluster never had every node")
	}
	lost.must(0, "destroy", "-auto-approve")
	for _, c := range []string{head, worker, server} {
		if _, err := dockerInspect(c); err == nil {
			t.Errorf("after the last destroy: %s is still there", c)
		}
	}
	if _, err := os.Lstat(rayTmp); !os.IsNotExist(err) {
		t.Errorf("after the last destroy: the head's temp dir %s: %v", rayTmp, err)
	}
}
