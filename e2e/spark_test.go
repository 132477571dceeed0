package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/testbed"
)

// engineMemlock is the memlock ulimit this machine's Docker Engine can
// give a container: "-1" (the Spark standard, unlimited) when dockerd has
// CAP_SYS_RESOURCE, else its own hard limit, which it cannot go above
// (this machine's root lacks the capability; a Spark's does not).
func engineMemlock(t *testing.T) string {
	t.Helper()
	pid := "self"
	if ents, err := os.ReadDir("/proc"); err == nil {
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(b)) == "dockerd" {
				pid = e.Name()
				break
			}
		}
	}
	status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:\t"); ok {
			if caps, err := strconv.ParseUint(hex, 16, 64); err == nil && caps&(1<<24) != 0 {
				return "-1"
			}
		}
	}
	limits, err := os.ReadFile(filepath.Join("/proc", pid, "limits"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(limits), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && strings.HasPrefix(line, "Max locked memory") {
			return f[4]
		}
	}
	t.Fatalf("no 'Max locked memory' in /proc/%s/limits", pid)
	return ""
}

// noGPUContainer is the module input text that runs the Spark container
// on this machine: no GPU device request (no GPU, no NVIDIA Container
// Toolkit), no /dev/infiniband (no RDMA NIC), memlock as high as the
// engine may set it; host IPC and network, the 64 MiB stack stay.
func noGPUContainer(t *testing.T) string {
	return fmt.Sprintf(`{ memlock = %q, stack = "67108864" }`, engineMemlock(t))
}

// wantSparkContainer checks that a running container got the Spark
// flags the module sets: host IPC and network, the ulimits.
func wantSparkContainer(t *testing.T, name string) {
	t.Helper()
	got := docker(t, "inspect", "-f", "{{.HostConfig.IpcMode}} {{.HostConfig.NetworkMode}} {{range .HostConfig.Ulimits}}{{.Name}}={{.Soft}}:{{.Hard}} {{end}}", name)
	ml := engineMemlock(t)
	if want := fmt.Sprintf("host host memlock=%s:%s stack=67108864:67108864", ml, ml); got != want {
		t.Errorf("%s: ipc, network, ulimits = %q, want %q", name, got, want)
	}
}

// fitRecipe is a one-node recipe for the fit check: the module on an sshd
// node with a model on a shared hub and a kit (what an apply would change
// first), its memory asks set by variables.
const fitRecipe = `
variable "n" {
  type = object({ host = string, port = number, home = string })
}
variable "user" {}
variable "identity_file" {}
variable "known_hosts" {}
variable "gmu" {
  type    = number
  default = null
}
variable "reason" {
  type    = string
  default = null
}
variable "smi" {
  type    = string
  default = null
}
variable "args" {
  type    = list(string)
  default = []
}

node "one" {
  host          = var.n.host
  port          = var.n.port
  user          = var.user
  identity_file = var.identity_file
  known_hosts   = var.known_hosts
  become        = true
}

module "fit" {
  source = "./modules/spark-recipe"
  recipe = {
    required_nodes       = 1
    tensor_parallel_size = 1
    nodes                = { "spark-01" = { node = node.one, rank = 0, home = var.n.home, infiniband = true } }
  }
  kit                    = { repo = %q, commit = %q, subdir = "release/runtime", dir = "kit" }
  hub_dir                = %q
  model                  = { repo_id = %q, target = "/model" }
  name                   = "fit-check"
  image                  = "sparkform-e2e/fit-never-pulled:1"
  memory                 = "1g"
  gpu_memory_utilization = var.gmu
  args                   = var.args
  fit_override_reason    = var.reason
  fit_nvidia_smi         = var.smi
}
`

// TestRecipeFit is issue 30's fit check on the test bed: the spark-recipe
// module on an sshd node plans a recipe that fits with its budget per
// node (from a STAND-IN nvidia-smi, named so: this machine has no GPU)
// beside the container a Spark needs (the module's defaults, and
// /dev/infiniband for a node that says it has RoCE),
// refuses one that does not (gpu_memory_utilization = 1 plus a 1g
// container is always more than is available) at plan and at apply with
// the numbers, and nothing on the node changes (no kit, no container,
// nothing in state); an override with a reason plans it with a warning,
// an empty reason is an error.
func TestRecipeFit(t *testing.T) {
	requireParts(t)
	bed := testbed.StartT(t, 1)
	shared := sharedDir(t, "sparkform-e2e-fit-")
	h := &hub{t: t, dir: filepath.Join(shared, "hub")}
	h.commit(modelRepo, rev("fit-model"), map[string]string{
		"config.json":       `{"model_type":"deepseek_v41"}`,
		"model.safetensors": strings.Repeat("w", 1<<20),
	})
	kitRepo, kitCommit := makeKitRepo(t, shared, bed.User)
	n := bed.Nodes[0]

	// The stand-in nvidia-smi: 128 GiB, 117 GiB free, in MiB.
	smiDir := filepath.Join(n.Root, "standin-bin")
	writeFiles(t, smiDir, map[string]string{"nvidia-smi": "#!/bin/sh\n# STAND-IN for nvidia-smi (test only)\necho '131072, 119808'\n"})
	if err := os.Chmod(filepath.Join(smiDir, "nvidia-smi"), 0o755); err != nil {
		t.Fatal(err)
	}

	work := t.TempDir()
	if mods, err := filepath.Abs("../modules"); err != nil {
		t.Fatal(err)
	} else if err := os.Symlink(mods, filepath.Join(work, "modules")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, work, map[string]string{"main.sf.hcl": fmt.Sprintf(fitRecipe, kitRepo, kitCommit, h.dir, modelRepo)})
	env := append(os.Environ(), "NO_COLOR=1", "HOME="+t.TempDir(),
		fmt.Sprintf(`SPARKFORM_VAR_n={ host = %q, port = %d, home = %q }`, n.Host, n.Port, n.Root),
		"SPARKFORM_VAR_user="+bed.User,
		"SPARKFORM_VAR_identity_file="+bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+bed.KnownHosts,
	)
	sf := &cli{t: t, dir: work, env: env}
	before := listing(t, n.Root)
	const addr = `module.fit.node_memory_fit.serve["spark-01"]`

	// Fits: the plan shows the budget from the stand-in nvidia-smi, with
	// gpu_memory_utilization from the input or from the server's args.
	smi := "smi=" + filepath.Join(smiDir, "nvidia-smi")
	for _, gmu := range [][]string{{"-var", "gmu=0.5"}, {"-var", `args=["--gpu-memory-utilization", "0.5"]`}, {"-var", `args=["--gpu-memory-utilization=0.5"]`}} {
		plan := sf.must(2, append([]string{"plan", "-detailed-exitcode", "-var", smi}, gmu...)...)
		wantIn(t, "plan that fits ("+gmu[1]+")", plan.stdout, addr+" will be created",
			`asks 65.0 GiB = 64.0 GiB (gpu_memory_utilization 0.5 of 128.0 GiB) + 1.0 GiB (the container's memory limit) of 117.0 GiB available`,
			"from nvidia-smi: fits, 52.0 GiB to spare", "module.fit.gitkit_checkout.kit",
			`gpus                   = "all"`, `ipc_mode               = "host"`, `network_mode           = "host"`, `privileged             = false`,
			`memlock = "-1"`, `stack   = "67108864"`, `"/dev/infiniband",`)
	}

	// Does not fit: refused at plan and at apply, with the numbers.
	for _, args := range [][]string{{"plan"}, {"apply", "-auto-approve"}} {
		r := sf.must(1, append(args, "-var", "gmu=1")...)
		wantIn(t, strings.Join(args, " ")+" that does not fit", r.stderr, "Does not fit in memory", addr,
			"(gpu_memory_utilization 1 of ", "+ 1.0 GiB (the container's memory limit)", "from /proc/meminfo", "short", "Nothing was changed", "override_reason")
		wantNotIn(t, strings.Join(args, " "), r.stdout, "Apply complete", "Creating...")
	}
	if d := diffListings(before, listing(t, n.Root)); len(d) > 0 {
		t.Errorf("a refused recipe changed the node: %v", d)
	}
	if _, err := dockerInspect("fit-check-r0"); err == nil {
		t.Error("a refused recipe has a container")
	}
	if st := sf.run("state", "list"); strings.TrimSpace(st.stdout) != "" {
		t.Errorf("state after a refused apply:\n%s", st)
	}

	// Overridden with a reason: planned, with a warning that says why.
	over := sf.must(2, "plan", "-detailed-exitcode", "-var", "gmu=1", "-var", "reason=the KV cache comes from the display pool")
	wantIn(t, "overridden plan", over.stdout+over.stderr, "Memory check overridden", `override_reason = "the KV cache comes from the display pool"`, "does not fit")
	// An empty reason is an error.
	empty := sf.must(1, "plan", "-var", "gmu=1", "-var", "reason= ")
	wantIn(t, "override without a reason", empty.stderr, "Override without a reason")
}
