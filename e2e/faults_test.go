package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/kernelsim"
	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
)

// faultBin is sparkform built with the sparkform_faultinject tag
// (providers/sdk/fault_inject.go: a provider can pause between its node
// change and its reply) and kmodsim (as sparkformBin). Only the fault tests
// run it.
var faultBin struct {
	once sync.Once
	path string
	err  error
}

func faultBinary(t *testing.T) string {
	t.Helper()
	faultBin.once.Do(func() {
		faultBin.path = filepath.Join(filepath.Dir(sparkformBin), "sparkform-faultinject")
		out, err := exec.Command("go", "build", "-tags", "kmodsim,sparkform_faultinject", "-o", faultBin.path, "../cmd/sparkform").CombinedOutput()
		if err != nil {
			faultBin.err = fmt.Errorf("building sparkform with fault injection: %v\n%s", err, out)
		}
	})
	if faultBin.err != nil {
		t.Fatal(faultBin.err)
	}
	return faultBin.path
}

// restoreRoot is where the nodes' restore records go: the nodes become
// root, and all of them are this machine.
const restoreRoot = "/var/lib/sparkform/restore"

type faultNode struct {
	key string
	bed *testbed.Node
	sim *kernelsim.Sim
}

type nodeSnapshot struct{ files, modules map[string]string }

// faultBed is testdata/faults on sshd nodes with one simulated kernel
// each, the Docker Engine, a hub and a kit repo: what the fault tests kill
// sparkform in, and check afterwards.
type faultBed struct {
	t      *testing.T
	nodes  []*faultNode
	sf     *cli
	prefix string
	before map[string]nodeSnapshot
	// cgroupRoot is the machine's cgroup v2 root the kmod_cgroups go in.
	cgroupRoot string
}

func newFaultBed(t *testing.T, nodes, data int) *faultBed {
	t.Helper()
	requireParts(t)
	bin := faultBinary(t)
	bed := testbed.StartT(t, nodes)
	simBin, err := kernelsim.Binary()
	if err != nil {
		t.Fatal(err)
	}
	sims := sharedDir(t, "sparkform-faults-kernel-")
	fb := &faultBed{t: t, prefix: fmt.Sprintf("sf-faults-%d", os.Getpid()), cgroupRoot: realpart.Cgroup2Root(t)}
	pidsMax := "" // null: no pids controller to limit with
	if b, err := os.ReadFile(filepath.Join(fb.cgroupRoot, "cgroup.controllers")); err == nil && slices.Contains(strings.Fields(string(b)), "pids") {
		pidsMax = "SPARKFORM_VAR_cgroup_pids_max=64"
	}
	t.Cleanup(fb.removeCgroups)
	var entries []string
	for i := 0; i < nodes; i++ {
		key := "n" + strconv.Itoa(i+1)
		s, err := kernelsim.Create(filepath.Join(sims, key), kernelsim.SeedCatalog, simBin)
		if err != nil {
			t.Fatal(err)
		}
		n := &faultNode{key: key, bed: bed.Nodes[i], sim: s}
		fb.nodes = append(fb.nodes, n)
		entries = append(entries, fmt.Sprintf(`%q = { host = %q, port = %d, home = %q }`, key, n.bed.Host, n.bed.Port, n.bed.Root))
		name := fb.prefix + "-" + key
		t.Cleanup(func() { dockerRm(name) })
		dockerRm(name)
	}
	shared := sharedDir(t, "sparkform-faults-nas-")
	h := &hub{t: t, dir: filepath.Join(shared, "hub")}
	h.commit(modelRepo, rev("model-1"), map[string]string{
		"config.json":                      `{"model_type":"deepseek_v41"}`,
		"model-00001-of-00002.safetensors": "shard one",
		"model-00002-of-00002.safetensors": "shard two",
	})
	kitRepo, kitCommit := makeKitRepo(t, shared, bed.User)
	// Per test process: another run's cleanup (docker rmi) must not take
	// this one's image away mid-run.
	image := fmt.Sprintf("sparkform-e2e/faults:%d", os.Getpid())
	buildImage(t, image)

	work := t.TempDir()
	copyTree(t, "testdata/faults", work)
	env := append(os.Environ(),
		"NO_COLOR=1",
		"HOME="+t.TempDir(),
		"SPARKFORM_VAR_nodes={"+strings.Join(entries, ", ")+"}",
		"SPARKFORM_VAR_user="+bed.User,
		"SPARKFORM_VAR_identity_file="+bed.IdentityFile,
		"SPARKFORM_VAR_known_hosts="+bed.KnownHosts,
		"SPARKFORM_VAR_image="+image,
		"SPARKFORM_VAR_hub_dir="+h.dir,
		"SPARKFORM_VAR_kit_repo="+kitRepo,
		"SPARKFORM_VAR_kit_commit="+kitCommit,
		"SPARKFORM_VAR_prefix="+fb.prefix,
		"SPARKFORM_VAR_data_count="+strconv.Itoa(data),
		"SPARKFORM_KMOD_SYSFS_ROOT="+filepath.Join(sims, "{node}", "sys"),
		"SPARKFORM_KMOD_MODPROBE="+filepath.Join(sims, "{node}", "bin", "modprobe"),
		"SPARKFORM_KMOD_RMMOD="+filepath.Join(sims, "{node}", "bin", "rmmod"),
		"SPARKFORM_KMOD_CGROUP_ROOT="+fb.cgroupRoot,
	)
	if pidsMax != "" {
		env = append(env, pidsMax)
	}
	fb.sf = &cli{t: t, dir: work, env: env, bin: bin}
	fb.before = fb.snapshot()
	for _, n := range fb.nodes {
		if got := n.sim.Param("nvidia_drm", "modeset"); got != "N" {
			t.Fatalf("%s: simulated nvidia_drm starts with modeset=%q, want N", n.key, got)
		}
	}
	return fb
}

func (fb *faultBed) snapshot() map[string]nodeSnapshot {
	m := map[string]nodeSnapshot{}
	for _, n := range fb.nodes {
		m[n.key] = nodeSnapshot{listing(fb.t, n.bed.Root), listing(fb.t, n.sim.ModuleDir())}
	}
	return m
}

// problems compares the nodes with before the first apply: leaked is what
// was left behind (files, folders, restore records, containers), lost is
// what was not put back (module loaded state and parameters).
func (fb *faultBed) problems() (leaked, lost []string) {
	now := fb.snapshot()
	for _, n := range fb.nodes {
		for _, d := range diffListings(fb.before[n.key].files, now[n.key].files) {
			leaked = append(leaked, n.key+": node folder: "+d)
		}
		for _, d := range diffListings(fb.before[n.key].modules, now[n.key].modules) {
			lost = append(lost, n.key+": simulated /sys/module: "+d)
		}
		if m := n.sim.Param("nvidia_drm", "modeset"); !n.sim.Loaded("nvidia_drm") || m != "N" {
			lost = append(lost, fmt.Sprintf("%s: nvidia_drm loaded=%v modeset=%q, want loaded with N", n.key, n.sim.Loaded("nvidia_drm"), m))
		}
	}
	recs, _ := filepath.Glob(filepath.Join(restoreRoot, "*", "*"))
	for _, r := range recs {
		b, err := os.ReadFile(r)
		if err != nil {
			continue
		}
		for _, n := range fb.nodes {
			if fb.recordOf(n, b) {
				leaked = append(leaked, n.key+": restore record left: "+r+": "+strings.SplitN(string(b), "\n", 2)[0])
			}
		}
	}
	for _, g := range fb.cgroups() {
		leaked = append(leaked, "cgroup left: "+g)
	}
	out, _ := exec.Command("docker", "ps", "-a", "--filter", "name="+fb.prefix, "--format", "{{.Names}}").Output()
	for _, name := range strings.Fields(string(out)) {
		leaked = append(leaked, "container left: "+name)
	}
	return leaked, lost
}

// converge is what an operator does after a crash: one apply, then a
// plan that must show nothing to do and no interrupted operation.
func (fb *faultBed) converge() error {
	if r := fb.sf.run("state", "list"); r.code != 0 {
		return fmt.Errorf("state does not open after the kill: %s", r)
	}
	if r := fb.sf.run("apply", "-auto-approve"); r.code != 0 {
		return fmt.Errorf("apply after the kill: %s", r)
	}
	r := fb.sf.run("plan", "-detailed-exitcode")
	if r.code != 0 {
		return fmt.Errorf("plan after the converging apply: %s", r)
	}
	if strings.Contains(r.stdout+r.stderr, "was interrupted") {
		return fmt.Errorf("the journal has not settled after the converging apply: %s", r)
	}
	return nil
}

// proc is a sparkform run the test may kill.
type proc struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	done   chan struct{}
	code   int
	killed bool
}

func (fb *faultBed) start(extraEnv []string, args ...string) *proc {
	fb.t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(fb.sf.bin, args...)
	p.cmd.Dir = fb.sf.dir
	p.cmd.Env = append(append([]string{}, fb.sf.env...), extraEnv...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		fb.t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.done)
	}()
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the run to end, killing it after timeout.
func (p *proc) wait(timeout time.Duration) {
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.kill()
	}
}

// kill is kill -9 of the CLI. Its plugins get a moment to notice and exit
// as they do when their CLI dies; any still there then are killed too, so
// they do not run on beside the next command.
func (p *proc) kill() {
	plugins := testbed.ChildrenOf(p.cmd.Process.Pid)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.killed = true
	<-p.done
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range plugins {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// alive: pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// waitPaused waits for the provider to announce its pause in dir and
// returns the plugin's pid.
func waitPaused(dir string, p *proc, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dir, "paused")); err == nil {
			f := strings.Fields(string(b))
			if pid, err := strconv.Atoi(f[0]); err == nil {
				return pid, nil
			}
		}
		if p.exited() {
			return 0, fmt.Errorf("sparkform ended (exit %d) without pausing:\n%s", p.code, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.kill()
	return 0, fmt.Errorf("no pause within %s:\n%s", timeout, p.out.String())
}

// killPoint is one fixed kill: after ACTION of ADDRESS changed the node and
// before its reply, kill the CLI or the plugin. With store set, the kill
// comes later: the reply has reached the CLI and the result is queued for
// the next group commit (state.Store.Complete), not yet durable.
type killPoint struct {
	action, addr, kill string
	store              bool
	// unjournaled: the type's calls reach no node and write no journal
	// intent (LocalApply), so a result lost with the CLI is planned
	// again, not recovered.
	unjournaled bool
	// byDestroy: after a kill during destroy, the operator converges with
	// destroy (not apply, then destroy): it must exit 0 and leave the node
	// as before on its own. An apply first would re-create what the
	// interrupted destroy left and hide a leftover.
	byDestroy bool
}

// shortKillPoints hit every kind of window once: each resource type's
// create and delete, CLI and plugin kills.
var shortKillPoints = []killPoint{
	{action: "create", addr: `kmod_module.drm["n1"]`, kill: "cli", store: false},
	{action: "create", addr: `kmod_module.drm["n1"]`, kill: "plugin", store: false},
	{action: "delete", addr: `kmod_module.drm["n1"]`, kill: "cli", store: false},
	{action: "create", addr: `gitkit_checkout.kit["n1"]`, kill: "cli", store: false},
	{action: "delete", addr: `gitkit_checkout.kit["n1"]`, kill: "plugin", store: false},
	{action: "create", addr: `hubstage_manifest.model["n1"]`, kill: "plugin", store: false},
	{action: "delete", addr: `hubstage_manifest.model["n1"]`, kill: "cli", store: false},
	{action: "create", addr: `docker_image.img["n1"]`, kill: "cli", store: false},
	{action: "create", addr: `docker_container.c["n1"]`, kill: "cli", store: false},
	{action: "delete", addr: `docker_container.c["n1"]`, kill: "plugin", store: false},
	// The result returned and queued, the CLI killed before it is durable:
	// the intent it leaves is recovered like any other.
	{action: "create", addr: `kmod_module.drm["n1"]`, kill: "cli", store: true},
	{action: "delete", addr: `kmod_module.drm["n1"]`, kill: "cli", store: true},
	// sparkform_data runs in the CLI and writes no intent (it reaches no
	// node): killed with its result queued, the result is simply lost and
	// the next apply creates it again.
	{action: "create", addr: `sparkform_data.d[3]`, kill: "cli", store: true, unjournaled: true},
	// Inside a destroy (sdk.Step), between two of its node changes, and
	// converged by destroy alone: the tree is gone, its restore record and
	// (for kmod_cgroup) the ancestor group sparkform made are not.
	{action: "delete-tree-removed", addr: `gitkit_checkout.kit["n1"]`, kill: "cli", byDestroy: true},
	{action: "delete-tree-removed", addr: `gitkit_checkout.kit["n1"]`, kill: "sshd", byDestroy: true},
	{action: "delete-group-removed", addr: `kmod_cgroup.serve["n1"]`, kill: "sshd", byDestroy: true},
	{action: "delete-group-removed", addr: `kmod_cgroup.serve["n1"]`, kill: "plugin", byDestroy: true},
	{action: "delete", addr: `gitkit_checkout.kit["n1"]`, kill: "cli", byDestroy: true},
	{action: "delete", addr: `hubstage_manifest.model["n1"]`, kill: "cli", byDestroy: true},
	{action: "delete", addr: `node_command.marker["n1"]`, kill: "plugin", byDestroy: true},
}

// TestKillPoints is the short version of the torture suite (make
// torture): at each fixed kill point a provider pauses between its node
// change and its reply (the fault-injection build), the CLI or that
// plugin is killed, and then one apply must converge, a plan show no
// changes, and destroy leave the node exactly as before (module
// parameters put back, no folder, file, record or container left).
func TestKillPoints(t *testing.T) {
	fb := newFaultBed(t, 1, 10)
	for _, kp := range shortKillPoints {
		name := kp.action + " " + kp.addr + " kill " + kp.kill
		if kp.store {
			name += " result queued"
		}
		if kp.byDestroy {
			name += " converge by destroy"
		}
		t.Run(name, func(t *testing.T) {
			fb.t, fb.sf.t = t, t
			op := "apply"
			if strings.HasPrefix(kp.action, "delete") {
				fb.sf.must(0, "apply", "-auto-approve")
				op = "destroy"
			}
			dir := t.TempDir()
			fault := "SPARKFORM_FAULT_PAUSE=" + kp.action + ":" + kp.addr
			if kp.store {
				fault = "SPARKFORM_FAULT_STORE=" + kp.addr // state/fault_inject.go
			}
			p := fb.start([]string{fault, "SPARKFORM_FAULT_DIR=" + dir}, op, "-auto-approve")
			pid, err := waitPaused(dir, p, 3*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if kp.store && pid != p.cmd.Process.Pid {
				t.Fatalf("the pause before the commit was in pid %d, not the CLI (%d)", pid, p.cmd.Process.Pid)
			}
			switch kp.kill {
			case "cli":
				p.kill()
			case "plugin":
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				p.wait(4 * time.Minute)
				if p.code == 0 {
					t.Errorf("%s exit 0 although the plugin applying %s was killed:\n%s", op, kp.addr, p.out.String())
				}
			case "sshd":
				// The node's link drops under the paused provider, which
				// then goes on over it.
				fb.nodes[0].bed.DropConnections()
				if err := os.WriteFile(filepath.Join(dir, "resume"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
				p.wait(4 * time.Minute)
			}
			t.Logf("killed %s during %s %s:\n%s", kp.kill, kp.action, kp.addr, lastLines(p.out.String(), 8))
			switch {
			case kp.store && kp.unjournaled:
				// The result was lost with the CLI and nothing was
				// journaled: the plan simply creates the instance again.
				r := fb.sf.run("plan", "-no-color")
				out := r.stdout + r.stderr
				// (Other instances in flight when the CLI died may be
				// recovered from their intents; this one has none.)
				if want := kp.addr + " will be created"; !strings.Contains(out, want) {
					t.Errorf("plan after the kill does not say %q:\n%s", want, out)
				}
				if bad := kp.addr + " was interrupted"; strings.Contains(out, bad) {
					t.Errorf("plan after the kill says %q: it was journaled:\n%s", bad, out)
				}
			case kp.store:
				// The provider finished; its result never became durable:
				// the journal still says so, and plan recovers it.
				r := fb.sf.run("plan", "-no-color")
				out := r.stdout + r.stderr
				for _, want := range []string{kp.addr + " was interrupted during " + kp.action, kp.addr + ": "} {
					if !strings.Contains(out, want) {
						t.Errorf("plan after the kill does not say %q:\n%s", want, out)
					}
				}
			}
			if kp.byDestroy {
				if p.code == 0 && kp.kill == "sshd" && strings.HasPrefix(kp.action, "delete-") {
					t.Errorf("destroy exit 0 although the link to the node dropped inside %s's destroy:\n%s", kp.addr, p.out.String())
				}
			} else if err := fb.converge(); err != nil {
				t.Fatal(err)
			}
			fb.sf.must(0, "destroy", "-auto-approve")
			if st := fb.sf.must(0, "state", "list"); strings.TrimSpace(st.stdout) != "" {
				t.Errorf("state not empty after destroy:\n%s", st.stdout)
			}
			leaked, lost := fb.problems()
			for _, l := range leaked {
				t.Errorf("leaked: %s", l)
			}
			for _, l := range lost {
				t.Errorf("restore lost: %s", l)
			}
			if t.Failed() {
				fb.repair()
			}
		})
	}
}

// repair puts the nodes back by hand after a failed check, so the next
// kill point starts from the same place.
func (fb *faultBed) repair() {
	fb.sf.run("destroy", "-auto-approve")
	for _, n := range fb.nodes {
		_ = n.sim.Reboot()
		dockerRm(fb.prefix + "-" + n.key)
		now := listing(fb.t, n.bed.Root)
		for p := range now {
			if _, ok := fb.before[n.key].files[p]; !ok {
				os.RemoveAll(filepath.Join(n.bed.Root, p))
			}
		}
	}
	fb.removeCgroups()
	recs, _ := filepath.Glob(filepath.Join(restoreRoot, "*", "*"))
	for _, r := range recs {
		b, _ := os.ReadFile(r)
		for _, n := range fb.nodes {
			if fb.recordOf(n, b) {
				os.Remove(r)
			}
		}
	}
	_ = os.Remove(filepath.Join(fb.sf.dir, ".sparkform", "state.db"))
}

func lastLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// recordOf reports whether restore record b belongs to node n of this bed:
// it names n's folder, its simulated kernel or its cgroup.
func (fb *faultBed) recordOf(n *faultNode, b []byte) bool {
	return bytes.Contains(b, []byte(n.bed.Root)) || bytes.Contains(b, []byte(n.sim.Root)) ||
		bytes.Contains(b, []byte(filepath.Join(fb.cgroupRoot, fb.prefix+"-"+n.key)))
}

// cgroups lists the groups of this bed in the cgroup root, deepest first.
func (fb *faultBed) cgroups() []string {
	var out []string
	tops, _ := filepath.Glob(filepath.Join(fb.cgroupRoot, fb.prefix+"-*"))
	for _, top := range tops {
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out
}

// removeCgroups removes the groups of this bed (repair, and the end).
func (fb *faultBed) removeCgroups() {
	for _, g := range fb.cgroups() {
		_ = os.Remove(g)
	}
}
