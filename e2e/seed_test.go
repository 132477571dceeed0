package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/kernelsim"
	"github.com/sparkform/sparkform/internal/testbed"
)

const (
	exampleDir = "../examples/dsv41-flash-exl3-2x"
	modelRepo  = "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"
	draftRepo  = "coolbho3k/DeepSeek-V4.1-Flash-DSpark-EXL3-3bpw"
	testImage  = "sparkform-e2e/ds41-standin:1"
)

// leftovers are the only paths a destroy may leave in a node folder, each
// for a stated reason; anything else that differs fails the test.
//   - exl3-cache: the seed's node-local runtime cache, created by the
//     container mount (create_host_path, the seed's `mkdir -p`) and
//     persistent between serves by design: destroy keeps it.
//
// The kit's parent folder exl3-kit is not one: gitkit_checkout made it and
// its destroy removes it again.
var leftovers = map[string]bool{"exl3-cache": true, "exl3-cache/": true}

// seedNode is one of the two test nodes.
type seedNode struct {
	key       string
	rank      int
	bed       *testbed.Node
	sim       *kernelsim.Sim
	servePort int
	container string
}

// TestSeedTwoNodes is issue 6's end-to-end test: see the package doc.
func TestSeedTwoNodes(t *testing.T) {
	requireParts(t)
	bed := testbed.StartT(t, 2)

	// One simulated kernel per node, found by the kmod provider through
	// its {node} hook (the node's for_each key).
	simBin, err := kernelsim.Binary()
	if err != nil {
		t.Fatal(err)
	}
	sims := sharedDir(t, "sparkform-e2e-kernel-")
	var nodes []*seedNode
	for i, key := range []string{"spark-01", "spark-02"} {
		s, err := kernelsim.Create(filepath.Join(sims, key), kernelsim.SeedCatalog, simBin)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, &seedNode{key: key, rank: i, bed: bed.Nodes[i], sim: s,
			servePort: freePort(t), container: "ds41-flash-exl3-r" + strconv.Itoa(i)})
	}

	// The NAS hub with both repos, the kit repo, the stand-in image.
	shared := sharedDir(t, "sparkform-e2e-nas-")
	h := &hub{t: t, dir: filepath.Join(shared, "hub")}
	rev1, rev2 := rev("model-1"), rev("model-2")
	h.commit(modelRepo, rev1, map[string]string{
		"config.json":                      `{"model_type":"deepseek_v41"}`,
		"model-00001-of-00002.safetensors": "shard one",
		"model-00002-of-00002.safetensors": "shard two",
		"engrams/vocab.engram":             "engram",
	})
	h.commit(draftRepo, rev("draft-1"), map[string]string{
		"config.json":       `{"model_type":"dspark"}`,
		"draft.safetensors": "drafter weights",
	})
	kitRepo, kitCommit := makeKitRepo(t, shared, bed.User)
	buildImage(t, testImage)
	for _, n := range nodes {
		name := n.container
		t.Cleanup(func() { dockerRm(name) })
		dockerRm(name) // a leftover of a killed earlier run
	}

	// A scratch working directory whose config IS the example: its files
	// are symlinked, never copied, and state stays out of examples/. The
	// module it calls (../../modules/spark-recipe) is the repository's,
	// linked at the same relative place.
	top := t.TempDir()
	work := filepath.Join(top, "examples", "dsv41-flash-exl3-2x")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if mods, err := filepath.Abs("../modules"); err != nil {
		t.Fatal(err)
	} else if err := os.Symlink(mods, filepath.Join(top, "modules")); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(exampleDir, "*.sf.hcl"))
	if len(files) == 0 {
		t.Fatalf("no *.sf.hcl in %s", exampleDir)
	}
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		if err := os.Symlink(abs, filepath.Join(work, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
	var entries []string
	for _, n := range nodes {
		entries = append(entries, fmt.Sprintf(`%q = { host = %q, port = %d, rank = %d, home = %q, serve_port = %d }`,
			n.key, n.bed.Host, n.bed.Port, n.rank, n.bed.Root, n.servePort))
	}
	env := append(os.Environ(),
		"NO_COLOR=1",
		"HOME="+t.TempDir(),
		"SPARKFORM_VAR_nodes={"+strings.Join(entries, ", ")+"}",
		"SPARKFORM_VAR_user="+bed.User,
		"SPARKFORM_VAR_identity_file="+bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+bed.KnownHosts,
		"SPARKFORM_VAR_image="+testImage,
		"SPARKFORM_VAR_hub_dir="+h.dir,
		"SPARKFORM_VAR_kit_repo="+kitRepo,
		"SPARKFORM_VAR_kit_commit="+kitCommit,
		// No GPU here: a harmless device stands in for the display device.
		"SPARKFORM_VAR_gpu_device=/dev/zero:/dev/dri/card0:rw",
		// Nor a GPU device driver, an RDMA NIC or (maybe) an engine that
		// may raise memlock: see noGPUContainer.
		"SPARKFORM_VAR_gpus=",
		"SPARKFORM_VAR_infiniband=false",
		"SPARKFORM_VAR_ulimits="+noGPUContainer(t),
		"SPARKFORM_KMOD_SYSFS_ROOT="+filepath.Join(sims, "{node}", "sys"),
		"SPARKFORM_KMOD_MODPROBE="+filepath.Join(sims, "{node}", "bin", "modprobe"),
		"SPARKFORM_KMOD_RMMOD="+filepath.Join(sims, "{node}", "bin", "rmmod"),
	)
	sf := &cli{t: t, dir: work, env: env}

	// What the nodes look like before sparkform touches them.
	type snapshot struct{ files, modules map[string]string }
	take := func() map[string]snapshot {
		m := map[string]snapshot{}
		for _, n := range nodes {
			m[n.key] = snapshot{listing(t, n.bed.Root), listing(t, n.sim.ModuleDir())}
		}
		return m
	}
	before := take()
	for _, n := range nodes {
		if got := n.sim.Param("nvidia_drm", "modeset"); got != "N" {
			t.Fatalf("%s: simulated nvidia_drm starts with modeset=%q, want N", n.key, got)
		}
	}
	// sameAsBefore: every node byte-for-byte as before the first apply,
	// except the stated leftovers.
	sameAsBefore := func(when string) {
		t.Helper()
		after := take()
		for _, n := range nodes {
			for _, d := range diffListings(before[n.key].modules, after[n.key].modules) {
				t.Errorf("%s: %s: simulated /sys/module differs: %s", when, n.key, d)
			}
			for _, d := range diffListings(before[n.key].files, after[n.key].files) {
				p := strings.Fields(d[2:])[0]
				if top, _, sub := strings.Cut(p, "/"); sub {
					p = top + "/" // anything inside
				}
				if d[0] == '+' && leftovers[p] {
					continue
				}
				t.Errorf("%s: %s: node folder differs: %s", when, n.key, d)
			}
		}
	}

	// checkServing: module reloaded, kit staged, containers past the guard
	// and answering their health check.
	checkServing := func(when, modelRev string, files int) {
		t.Helper()
		for _, n := range nodes {
			if m, f := n.sim.Param("nvidia_drm", "modeset"), n.sim.Param("nvidia_drm", "fbdev"); m != "Y" || f != "N" {
				t.Errorf("%s: %s: nvidia_drm modeset=%s fbdev=%s, want Y N", when, n.key, m, f)
			}
			kit := filepath.Join(n.bed.Root, "exl3-kit", kitCommit[:7])
			if _, err := os.Stat(filepath.Join(kit, "serving", "serve.py")); err != nil {
				t.Errorf("%s: %s: kit not staged: %v", when, n.key, err)
			}
			if _, err := os.Stat(filepath.Join(kit, "README.md")); err == nil {
				t.Errorf("%s: %s: the whole repo was staged, want release/runtime only", when, n.key)
			}
			if got := docker(t, "inspect", "-f", "{{.State.Running}}", n.container); got != "true" {
				t.Errorf("%s: %s: container running = %s", when, n.container, got)
			}
			wantSparkContainer(t, n.container)
			logs := docker(t, "logs", n.container)
			wantIn(t, when+": "+n.container+" logs", logs, "guard ok: rank "+strconv.Itoa(n.rank)+" memory 9663676416 swap 0 cpu 600000/100000, "+strconv.Itoa(files)+" regular files")
			if got := health(t, n.servePort); got != "ok" {
				t.Errorf("%s: %s: health = %q", when, n.key, got)
			}
		}
		var commits map[string]string
		out := sf.must(0, "output", "-json", "model_commit")
		if err := json.Unmarshal([]byte(out.stdout), &commits); err != nil {
			t.Fatalf("output -json model_commit: %v\n%s", err, out)
		}
		for _, n := range nodes {
			if commits[n.key] != modelRev {
				t.Errorf("%s: %s serves model commit %q, want %q", when, n.key, commits[n.key], modelRev)
			}
		}
	}

	sf.must(0, "validate")

	// 1. apply from nothing.
	plan := sf.must(2, "plan", "-detailed-exitcode")
	// 14: the 12 of issue 6 and the fit check per node (issue 30).
	wantIn(t, "first plan", plan.stdout, "Plan: 14 to add, 0 to change, 0 to destroy.")
	// As the machine-readable stream (issue 16): every line of stdout one
	// JSON object, the sequence of messages checked.
	apply := sf.must(0, "apply", "-json", "-auto-approve")
	checkApplyStream(t, apply.stdout, 14)
	if t.Failed() {
		t.FailNow()
	}
	checkServing("after the first apply", rev1, 6)

	// 2. A second plan has nothing to do.
	again := sf.must(0, "plan", "-detailed-exitcode")
	wantIn(t, "second plan", again.stdout, "No changes.")

	// 3. A simulated reboot of spark-01: the module is plain again and the
	// container is gone; the plan shows exactly that, apply converges.
	if err := nodes[0].sim.Reboot(); err != nil {
		t.Fatal(err)
	}
	dockerRm(nodes[0].container)
	reboot := sf.must(2, "plan", "-detailed-exitcode")
	wantIn(t, "plan after a reboot", reboot.stdout,
		`module.dsv41.kmod_module.display["spark-01"] will be updated in-place`,
		`module.dsv41.docker_container.serve["spark-01"] will be created`,
		"Plan: 1 to add, 1 to change, 0 to destroy.")
	wantNotIn(t, "plan after a reboot", reboot.stdout, `["spark-02"] will`, `["spark-02"] must`)
	sf.must(0, "apply", "-auto-approve")
	sf.must(0, "plan", "-detailed-exitcode")
	checkServing("after the reboot converged", rev1, 6)

	// 4. The hub ref moves: the manifests update in place, the containers
	// (whose bind list changed) are replaced; the plan says so briefly.
	h.commit(modelRepo, rev2, map[string]string{
		"config.json":                      `{"model_type":"deepseek_v41"}`,
		"model-00001-of-00002.safetensors": "shard one, revised",
		"model-00002-of-00002.safetensors": "shard two",
		"engrams/vocab.engram":             "engram",
		"tokenizer.json":                   "{}",
	})
	savedPlan := filepath.Join(work, "moved.plan")
	moved := sf.must(2, "plan", "-detailed-exitcode", "-out", savedPlan)
	wantIn(t, "plan after the ref moved", moved.stdout,
		`module.dsv41.hubstage_manifest.model["spark-01"] will be updated in-place`,
		`module.dsv41.hubstage_manifest.model["spark-02"] will be updated in-place`,
		`module.dsv41.docker_container.serve["spark-01"] must be replaced`,
		`module.dsv41.docker_container.serve["spark-02"] must be replaced`,
		"commit "+rev1[:7],
		"+1 files",
		"the plan below follows this change",
		// The fit checks change too: the model's bytes grew.
		`module.dsv41.node_memory_fit.serve["spark-01"] will be updated in-place`,
		"Plan: 2 to add, 4 to change, 2 to destroy.")
	wantNotIn(t, "plan after the ref moved", moved.stdout, "sparkform will undo")

	// 4b. The ref moves again before the saved plan is applied: apply
	// refreshes first and refuses the whole plan, naming the manifest and
	// what changed; nothing is touched and both ranks keep serving.
	rev3 := rev("model-3")
	h.commit(modelRepo, rev3, map[string]string{
		"config.json":                      `{"model_type":"deepseek_v41"}`,
		"model-00001-of-00002.safetensors": "shard one, revised",
		"model-00002-of-00002.safetensors": "shard two, revised",
		"engrams/vocab.engram":             "engram",
		"tokenizer.json":                   "{}",
	})
	stale := sf.run("apply", savedPlan)
	if stale.code != 1 {
		t.Fatalf("apply of a saved plan after the ref moved again: want exit 1, got %s", stale)
	}
	wantIn(t, "apply of the outdated saved plan", stale.stderr,
		"Saved plan no longer matches the nodes",
		`module.dsv41.hubstage_manifest.model["spark-01"] changed on node.spark["spark-01"] since the plan was made: change_summary was`,
		`module.dsv41.hubstage_manifest.model["spark-02"] changed`,
		"Nothing was changed on any node")
	wantNotIn(t, "apply of the outdated saved plan", stale.stdout, "Destroying...", "Destruction complete", "Creating...")
	checkServing("after the outdated saved plan was refused", rev1, 6)
	for _, n := range nodes {
		if got := docker(t, "inspect", "-f", "{{.State.Running}}", n.container); got != "true" {
			t.Errorf("after the refused saved plan: %s running = %s, want true", n.container, got)
		}
	}

	sf.must(0, "apply", "-auto-approve")
	checkServing("after the ref moved", rev3, 7) // 5 model files + 2 drafter files
	sf.must(0, "plan", "-detailed-exitcode")

	// 5. destroy: containers first, then manifests and kits, then the
	// module reloaded with its prior params; nodes as before; state empty.
	destroy := sf.must(0, "destroy", "-auto-approve")
	wantIn(t, "destroy", destroy.stdout, "Destroy complete! Resources: 0 added, 0 changed, 14 destroyed.")
	checkDestroyOrder(t, destroy.stdout)
	for _, n := range nodes {
		if out, err := dockerInspect(n.container); err == nil {
			t.Errorf("container %s still there after destroy: %s", n.container, out)
		}
	}
	sameAsBefore("after destroy")
	if st := sf.must(0, "state", "list"); strings.TrimSpace(st.stdout) != "" {
		t.Errorf("state not empty after destroy:\n%s", st.stdout)
	}

	// 6. A failed restore: the simulator holds nvidia_drm in use on
	// spark-02, so destroy cannot reload it. That instance stays in state
	// with its prior values, everything else is destroyed, the exit code
	// is non-zero and the message says why. Released, destroy completes.
	sf.must(0, "apply", "-auto-approve")
	if err := nodes[1].sim.Use("nvidia_drm"); err != nil {
		t.Fatal(err)
	}
	failed := sf.run("destroy", "-auto-approve")
	if failed.code == 0 {
		t.Fatalf("destroy with the module in use succeeded:\n%s", failed)
	}
	wantIn(t, "destroy with the module in use", failed.stdout+failed.stderr,
		`restore of nvidia_drm to its prior state failed: module is in use`, `node.spark["spark-02"]`,
		"stays in state", "13 destroyed")
	left := sf.must(0, "state", "list")
	if got := strings.TrimSpace(left.stdout); got != `module.dsv41.kmod_module.display["spark-02"]` {
		t.Errorf("state after the failed restore = %q, want only module.dsv41.kmod_module.display[\"spark-02\"]", got)
	}
	show := sf.must(0, "state", "show", `module.dsv41.kmod_module.display["spark-02"]`)
	wantIn(t, "state show of the kept module", show.stdout, "prior", "modeset", `"N"`)
	if m := nodes[0].sim.Param("nvidia_drm", "modeset"); m != "N" {
		t.Errorf("spark-01 was not restored while spark-02 failed: modeset=%s", m)
	}
	if err := nodes[1].sim.Release("nvidia_drm"); err != nil {
		t.Fatal(err)
	}
	sf.must(0, "destroy", "-auto-approve")
	sameAsBefore("after the retried destroy")
	if st := sf.must(0, "state", "list"); strings.TrimSpace(st.stdout) != "" {
		t.Errorf("state not empty after the retried destroy:\n%s", st.stdout)
	}
}

// checkDestroyOrder reads the destroy progress: every container is gone
// before any manifest or kit starts going, and those before any module.
func checkDestroyOrder(t *testing.T, out string) {
	t.Helper()
	stage := func(line string) int {
		switch {
		case strings.HasPrefix(line, "module.dsv41.docker_container."):
			return 0
		case strings.HasPrefix(line, "module.dsv41.hubstage_manifest."), strings.HasPrefix(line, "module.dsv41.gitkit_checkout."):
			return 1
		case strings.HasPrefix(line, "module.dsv41.kmod_module."):
			return 2
		}
		return -1
	}
	lastDone := map[int]int{}
	firstStart := map[int]int{}
	for i, line := range strings.Split(out, "\n") {
		s := stage(line)
		if s < 0 {
			continue
		}
		if strings.Contains(line, "Destroying...") {
			if _, ok := firstStart[s]; !ok {
				firstStart[s] = i
			}
		}
		if strings.Contains(line, "Destruction complete") {
			lastDone[s] = i
		}
	}
	for s := 0; s < 3; s++ {
		if _, ok := firstStart[s]; !ok {
			t.Fatalf("destroy output has no 'Destroying...' line for stage %d:\n%s", s, out)
		}
	}
	if lastDone[0] > firstStart[1] || lastDone[1] > firstStart[2] {
		t.Errorf("destroy order wrong (want containers, then manifests and kits, then modules):\n%s", out)
	}
}
