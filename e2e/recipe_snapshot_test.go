package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/hubtest"
	"github.com/sparkform/sparkform/internal/testbed"
)

// recipeFromHub is the spark-recipe module on two nodes with no shared
// hub folder: model_source = {} (the hub, HF_ENDPOINT), hub_dir under each
// node's home. The container is busybox httpd answering /health (no kit,
// no display unlock): the test is about the model reaching both nodes and
// the container's binds.
const recipeFromHub = `
variable "nodes" {
  type = map(object({ host = string, port = number, rank = number, home = string, serve_port = number }))
}
variable "user" {}
variable "identity_file" {}
variable "known_hosts" {}
variable "image" {}
variable "prefix" {}
variable "model_id" {}
variable "draft_id" {}
variable "ulimits" {
  type = map(string)
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
    required_nodes       = 2
    tensor_parallel_size = 2
    nodes = { for k, n in var.nodes : k => { node = node.spark[k], rank = n.rank, home = n.home, serve_port = n.serve_port } }
  }
  hub_dir      = "{home}/hub"
  model        = { repo_id = var.model_id, target = "/model" }
  drafter      = { repo_id = var.draft_id, target = "/draft" }
  model_source = {}
  name         = var.prefix
  image        = var.image
  # No GPU device driver here, nor an engine that may raise memlock (see noGPUContainer).
  gpus    = ""
  ulimits = var.ulimits
  # A stand-in server: /health on the port the layout flags end with.
  entrypoint = ["/bin/busybox", "sh", "-c", "for a; do p=$a; done; mkdir -p /www && echo ok >/www/health && exec /bin/busybox httpd -f -p 127.0.0.1:$p -h /www", "sh"]
}

output "model_commit" {
  value = module.recipe.model_commit
}
`

// TestRecipeModelFromHub: the spark-recipe module with model_source = {}
// and no NAS: rank 0 fetches the model and the drafter from the hub, rank
// 1 copies rank 0's snapshots node to node at the commit rank 0 got (the
// hub serves every byte once, for rank 0 only; nothing passes through
// sparkform), the manifests resolve those commits and each container
// binds its own node's blobs. A no-op plan follows; destroy leaves both
// nodes as they were.
func TestRecipeModelFromHub(t *testing.T) {
	requireParts(t)
	requireSnapParts(t)
	model := hubtest.GenRepo("e2e-org/recipe-model", 41,
		hubtest.FileSpec{Path: "config.json", Size: 321},
		hubtest.FileSpec{Path: "model-00001-of-00002.safetensors", Size: 2 << 20, LFS: true},
		hubtest.FileSpec{Path: "model-00002-of-00002.safetensors", Size: 1 << 20, LFS: true},
	)
	draft := hubtest.GenRepo("e2e-org/recipe-draft", 42,
		hubtest.FileSpec{Path: "config.json", Size: 123},
		hubtest.FileSpec{Path: "draft.safetensors", Size: 512 << 10, LFS: true},
	)
	hub := hubtest.NewServer(t, model, draft)
	bed := testbed.StartT(t, 2)
	image := fmt.Sprintf("sparkform-e2e/recipe-hub:%d", os.Getpid())
	buildImage(t, image)
	prefix := fmt.Sprintf("sf-rhub-%d", os.Getpid())
	for _, r := range []string{"r0", "r1"} {
		name := prefix + "-" + r
		dockerRm(name)
		t.Cleanup(func() { dockerRm(name) })
	}
	before := map[int]map[string]string{}
	for i, n := range bed.Nodes {
		before[i] = listing(t, n.Root)
	}

	work := t.TempDir()
	copyTree(t, "../modules/spark-recipe", filepath.Join(work, "modules", "spark-recipe"))
	writeFiles(t, work, map[string]string{"main.sf.hcl": recipeFromHub})
	n := bed.Nodes
	sf := &cli{t: t, dir: work, env: append(os.Environ(),
		"NO_COLOR=1",
		"HOME="+t.TempDir(),
		"HF_ENDPOINT="+hub.URL,
		fmt.Sprintf(`SPARKFORM_VAR_nodes={"spark-01" = { host = %q, port = %d, rank = 0, home = %q, serve_port = %d }, "spark-02" = { host = %q, port = %d, rank = 1, home = %q, serve_port = %d }}`,
			n[0].Host, n[0].Port, n[0].Root, freePort(t), n[1].Host, n[1].Port, n[1].Root, freePort(t)),
		"SPARKFORM_VAR_user="+bed.User,
		"SPARKFORM_VAR_identity_file="+bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+bed.KnownHosts,
		"SPARKFORM_VAR_image="+image,
		"SPARKFORM_VAR_prefix="+prefix,
		"SPARKFORM_VAR_model_id="+model.ID,
		"SPARKFORM_VAR_draft_id="+draft.ID,
		"SPARKFORM_VAR_ulimits="+noGPUContainer(t),
	)}

	plan := sf.must(2, "plan", "-detailed-exitcode")
	wantIn(t, "plan", plan.stdout,
		`module.recipe.hubstage_snapshot.model["spark-01"] will be created`,
		`module.recipe.hubstage_snapshot.model_peer["spark-02"] will be created`,
		`module.recipe.hubstage_snapshot.draft["spark-01"] will be created`,
		`module.recipe.hubstage_snapshot.draft_peer["spark-02"] will be created`,
		"from hub "+hub.URL,
		"commit "+model.Main().SHA[:7])
	wantNotIn(t, "plan", plan.stdout, `hubstage_snapshot.model["spark-02"]`, `hubstage_snapshot.model_peer["spark-01"]`)

	sf.must(0, "apply", "-auto-approve")
	hubDir := func(i int) string { return filepath.Join(n[i].Root, "hub") }
	for _, r := range []*hubtest.Repo{model, draft} {
		hubtest.CheckLayout(t, hubDir(0), r, "main")
		// Rank 1 holds rank 0's commit, pinned: no ref of its own.
		hubtest.CheckLayout(t, hubDir(1), r, r.Main().SHA)
	}
	if got, want := hub.TotalBytes(), model.Main().TotalSize()+draft.Main().TotalSize(); got != want {
		t.Errorf("the hub served %d bytes, want %d: every file once, to rank 0 only", got, want)
	}
	for _, addr := range []string{`module.recipe.hubstage_snapshot.model_peer["spark-02"]`, `module.recipe.hubstage_snapshot.draft_peer["spark-02"]`} {
		show := sf.must(0, "state", "show", addr)
		if m := regexp.MustCompile(`relayed_bytes\s*=\s*(\d+)`).FindStringSubmatch(show.stdout); m == nil || m[1] != "0" {
			t.Errorf("%s: relayed_bytes %v, want 0 (a direct copy):\n%s", addr, m, show.stdout)
		}
	}
	// Each container binds its own node's blobs.
	for i, r := range []string{"r0", "r1"} {
		c := prefix + "-" + r
		for _, f := range []struct {
			repo   *hubtest.Repo
			target string
		}{{model, "/model/config.json"}, {draft, "/draft/config.json"}} {
			want := f.repo.Main().File("config.json").SHA256
			if got, _, _ := strings.Cut(docker(t, "exec", c, "/bin/busybox", "sha256sum", f.target), " "); got != want {
				t.Errorf("%s: %s has sha256 %s, want %s", c, f.target, got, want)
			}
		}
		mounts := docker(t, "inspect", "-f", `{{range .Mounts}}{{.Source}}{{"\n"}}{{end}}`, c)
		if !strings.Contains(mounts, filepath.Join(hubDir(i), model.CacheDirName(), "blobs")) {
			t.Errorf("%s binds no blob of its own node's hub %s:\n%s", c, hubDir(i), mounts)
		}
	}
	sf.must(0, "plan", "-detailed-exitcode")

	sf.must(0, "destroy", "-auto-approve")
	for i, nd := range n {
		if d := diffListings(before[i], listing(t, nd.Root)); len(d) > 0 {
			t.Errorf("node %d is not as before after destroy:\n%s", i+1, strings.Join(d, "\n"))
		}
	}
	for _, r := range []string{"r0", "r1"} {
		if id, err := dockerInspect(prefix + "-" + r); err == nil {
			t.Errorf("container %s-%s left: %s", prefix, r, id)
		}
	}
}
