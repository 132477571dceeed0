package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// sparkProbe runs in the container and prints what the process really
// got: its ulimits, its IPC namespace, its effective capabilities, the
// device cgroup (v1; v2 enforces devices with eBPF, which cannot be read
// back) and what opening the stand-in RDMA device says; then "ready".
const sparkProbe = `B=/bin/busybox
$B grep -E '^Max (locked memory|stack size)' /proc/self/limits
echo "ipc $($B readlink /proc/self/ns/ipc)"
$B grep '^CapEff' /proc/self/status
[ -f /sys/fs/cgroup/devices/devices.list ] && $B sed 's/^/devcg /' /sys/fs/cgroup/devices/devices.list
$B ls -l /dev/infiniband/ 2>&1 | $B sed 's/^/ib /'
echo "open $($B head -c1 /dev/infiniband/uverbs0 2>&1)"
echo ready
exec $B sleep 600`

// standInRDMA makes a folder holding a character device with the numbers
// of the first RDMA verbs device (uverbs0: major 231, minor 192). It is a
// stand-in for a node's /dev/infiniband: this machine has no RDMA NIC, so
// no driver answers the numbers and an open that the device cgroup allows
// fails with ENXIO, one it denies with EPERM.
func standInRDMA(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "infiniband")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mknod", filepath.Join(dir, "uverbs0"), "c", "231", "192").CombinedOutput(); err != nil {
		t.Fatalf("mknod (the tests run as root): %v\n%s", err, out)
	}
	return dir
}

// engineProc is the /proc entry of the local Docker Engine's process
// ("self" when it cannot be seen: an engine we cannot see runs as we do).
func engineProc() string {
	if ents, err := os.ReadDir("/proc"); err == nil {
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(b)) == "dockerd" {
				return e.Name()
			}
		}
	}
	return "self"
}

// engineCaps says whether the local Docker Engine has CAP_SYS_RESOURCE
// (it can raise a ulimit above its own hard limit) and every capability
// the kernel knows (it can start a privileged container). This machine's
// root lacks CAP_SYS_RESOURCE.
func engineCaps(t *testing.T) (sysResource, all bool) {
	t.Helper()
	status, err := os.ReadFile(filepath.Join("/proc", engineProc(), "status"))
	if err != nil {
		t.Fatal(err)
	}
	last, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(last)))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:\t"); ok {
			caps, err := strconv.ParseUint(hex, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return caps&(1<<24) != 0, caps == 1<<(n+1)-1
		}
	}
	t.Fatalf("no CapEff in /proc/%s/status", engineProc())
	return false, false
}

// engineMemlock is the memlock ulimit the local Docker Engine can give a
// container: "-1" (unlimited, the Spark standard) when it has
// CAP_SYS_RESOURCE, else its own hard limit, which it cannot go above.
// The second result says which.
func engineMemlock(t *testing.T) (string, bool) {
	t.Helper()
	if sr, _ := engineCaps(t); sr {
		return "-1", true
	}
	limits, err := os.ReadFile(filepath.Join("/proc", engineProc(), "limits"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(limits), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && strings.HasPrefix(line, "Max locked memory") {
			return f[4], false
		}
	}
	t.Fatalf("no 'Max locked memory' in /proc/%s/limits:\n%s", engineProc(), limits)
	return "", false
}

// sparkAttrs is a container with the community-standard flags of a vLLM
// serving container on DGX Spark clusters (docker run --gpus all
// --ipc=host --network host --ulimit memlock=-1 --ulimit stack=67108864
// --device /dev/infiniband), gpus left to the caller.
func sparkAttrs(name, ib, memlock string) map[string]cty.Value {
	return map[string]cty.Value{
		"name":         cty.StringVal(name),
		"image":        cty.StringVal(guardImage),
		"entrypoint":   ctyval.ListOrNull([]string{"/bin/busybox", "sh", "-c", sparkProbe}),
		"network_mode": cty.StringVal("host"),
		"ipc_mode":     cty.StringVal("host"),
		"ulimits":      ctyval.MapOrNull(map[string]string{"memlock": memlock, "stack": "67108864"}),
		"devices":      ctyval.ListOrNull([]string{ib + ":/dev/infiniband"}),
		"privileged":   cty.False,
		"stop_timeout": cty.NumberIntVal(0),
		"wait": cty.ObjectVal(map[string]cty.Value{"http": cty.NullVal(cty.String), "tcp": cty.NullVal(cty.String),
			"log_line": cty.StringVal("^ready$"), "timeout": cty.StringVal("60s")}),
	}
}

func containerLogs(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("docker", "logs", name).CombinedOutput()
	if err != nil {
		t.Fatalf("docker logs %s: %v\n%s", name, err, out)
	}
	return string(out)
}

// TestContainerSparkFlags: the flags a Spark's serving container needs
// reach the running process, as the real engine applies them: the
// inspected HostConfig, and inside the container /proc/self/limits
// (memlock and stack), the IPC namespace (the host's), the device cgroup
// and an open of the RDMA device (allowed: ENXIO, not EPERM), the
// capabilities (none extra unless privileged). A second plan shows no
// changes; privileged = true replaces the container and gives every
// capability.
func TestContainerSparkFlags(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	ctx := context.Background()
	n := sdk.Node{Name: "local", Transport: "local"}
	p := sdktest.GRPC(t, New())
	rs := sdktest.Schema(t, p, ctype)
	ib := standInRDMA(t)
	name := "sparkform-test-spark-flags"
	cleanupContainer(t, api, name)
	hostIPC, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		t.Fatal(err)
	}

	memlock, unlimited := engineMemlock(t)
	if !unlimited {
		// memlock = -1 cannot be had here: apply says why and what to do.
		t.Logf("the engine lacks CAP_SYS_RESOURCE: memlock = -1 must be refused; the rest is shown with memlock = %s, its hard limit", memlock)
		config := sdktest.Object(t, rs.Block, sparkAttrs(name, ib, "-1"))
		null := cty.NullVal(rs.Block.ImpliedType())
		plan := sdktest.Plan(t, p, ctype, n, null, nil, config)
		resp := p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: ctype, Address: ctype + ".spark", Node: n,
			Prior: null, Planned: plan.Planned, Config: config}, func(sdk.Progress) {})
		err := resp.Diagnostics.Err()
		for _, w := range []string{"ulimits.memlock = \"-1:-1\"", "CAP_SYS_RESOURCE", "'locked memory'"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("apply with memlock = -1 on an engine without CAP_SYS_RESOURCE: error %v does not say %q", err, w)
			}
		}
		sdktest.Destroy(t, p, ctype, n, resp.NewState, nil)
	}
	// A node without the RDMA device: apply says which and why.
	absent := filepath.Join(filepath.Dir(ib), "absent", "infiniband")
	missing := sdktest.Object(t, rs.Block, sparkAttrs(name, absent, memlock))
	null := cty.NullVal(rs.Block.ImpliedType())
	mp := sdktest.Plan(t, p, ctype, n, null, nil, missing)
	mresp := p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: ctype, Address: ctype + ".spark", Node: n,
		Prior: null, Planned: mp.Planned, Config: missing}, func(sdk.Progress) {})
	for _, w := range []string{"the device " + absent + " does not exist on local", "ib_uverbs", "infiniband = true"} {
		if err := mresp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("apply with a missing /dev/infiniband: error %v does not say %q", err, w)
		}
	}
	sdktest.Destroy(t, p, ctype, n, mresp.NewState, nil)

	config := sdktest.Object(t, rs.Block, sparkAttrs(name, ib, memlock))
	st, priv := sdktest.Create(t, p, ctype, n, config)
	wantAttr(t, st, "running", cty.True)
	wantAttr(t, st, "privileged", cty.False)

	ins, err := api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc := ins.Container.HostConfig
	ul := map[string][2]int64{}
	for _, u := range hc.Ulimits {
		ul[u.Name] = [2]int64{u.Soft, u.Hard}
	}
	ml, _ := strconv.ParseInt(memlock, 10, 64)
	if want := map[string][2]int64{"memlock": {ml, ml}, "stack": {67108864, 67108864}}; !reflect.DeepEqual(ul, want) {
		t.Errorf("HostConfig.Ulimits = %v, want %v", ul, want)
	}
	if hc.IpcMode != "host" || hc.NetworkMode != "host" || hc.Privileged {
		t.Errorf("HostConfig: ipc %q network %q privileged %v; want host, host, false", hc.IpcMode, hc.NetworkMode, hc.Privileged)
	}
	if len(hc.Devices) != 1 || hc.Devices[0].PathOnHost != ib || hc.Devices[0].PathInContainer != "/dev/infiniband" {
		t.Errorf("HostConfig.Devices = %+v, want %s -> /dev/infiniband", hc.Devices, ib)
	}

	wantMemlock := "unlimited            unlimited"
	if !unlimited {
		wantMemlock = fmt.Sprintf("%-20s %-20s", memlock, memlock)
	}
	logs := containerLogs(t, name)
	for _, want := range []string{
		"Max locked memory         " + wantMemlock + " bytes",
		"Max stack size            67108864             67108864             bytes",
		"ipc " + hostIPC,
		"CapEff:\t00000000a80425fb", // the engine's default set: nothing more
		"ib crw-",                   // the device node under /dev/infiniband
		"No such device or address", // the cgroup lets the open through to a driver-less device
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the container does not show %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "Operation not permitted") {
		t.Errorf("the device cgroup refused the RDMA device:\n%s", logs)
	}
	if _, err := os.Stat("/sys/fs/cgroup/devices"); err == nil && !strings.Contains(logs, "devcg c 231:192 rwm") {
		t.Errorf("cgroup v1: devices.list does not allow c 231:192 rwm:\n%s", logs)
	}

	// The flags read back as configured: a second plan shows no changes.
	read := sdktest.Read(t, p, ctype, n, st, priv)
	if again := sdktest.Plan(t, p, ctype, n, read.NewState, read.Private, config); !again.Planned.RawEquals(read.NewState) || len(again.RequiresReplace) > 0 {
		t.Fatalf("second plan has changes (replace %v):\nprior:   %#v\nplanned: %#v", replacePaths(again.RequiresReplace), read.NewState, again.Planned)
	}

	// privileged = true: a replace, and every capability.
	attrs := sparkAttrs(name, ib, memlock)
	attrs["privileged"] = cty.True
	config2 := sdktest.Object(t, rs.Block, attrs)
	repl := sdktest.Plan(t, p, ctype, n, read.NewState, read.Private, config2)
	if got := replacePaths(repl.RequiresReplace); len(got) != 1 || got[0] != "privileged" {
		t.Fatalf("privileged change: replace paths %v, want [privileged]", got)
	}
	resp := p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: ctype, Address: ctype + ".spark", Node: n,
		Prior: read.NewState, Planned: repl.Planned, Config: config2, Private: read.Private}, func(sdk.Progress) {})
	ins, err = api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !ins.Container.HostConfig.Privileged {
		t.Errorf("HostConfig.Privileged = false after privileged = true")
	}
	if _, all := engineCaps(t); all {
		if err := resp.Diagnostics.Err(); err != nil {
			t.Fatal(err)
		}
		// CAP_SYS_ADMIN (21) and CAP_SYS_RESOURCE (24), which the default set lacks.
		logs := containerLogs(t, name)
		m := regexp.MustCompile(`CapEff:\t([0-9a-f]+)`).FindStringSubmatch(logs)
		if m == nil {
			t.Fatalf("no CapEff in the container's output:\n%s", logs)
		}
		if caps, err := strconv.ParseUint(m[1], 16, 64); err != nil || caps&(1<<21) == 0 || caps&(1<<24) == 0 {
			t.Errorf("privileged container lacks CAP_SYS_ADMIN or CAP_SYS_RESOURCE:\n%s", logs)
		}
	} else {
		// An engine short of capabilities cannot start it: apply says so.
		err := resp.Diagnostics.Err()
		for _, w := range []string{"privileged = true", "without some of them", "cap_add"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("privileged apply on an engine without every capability: error %v does not say %q", err, w)
			}
		}
	}
	wantAttr(t, resp.NewState, "privileged", cty.True)
	sdktest.Destroy(t, p, ctype, n, resp.NewState, nil)
}

// TestContainerGPURequest: gpus reaches the engine as the device request
// `docker run --gpus` makes (driver "", count -1 for all or N, capability
// "gpu"), seen in the created container's HostConfig.DeviceRequests.
//
// What this machine cannot show: it has no GPU and its engine no NVIDIA
// Container Toolkit, so no driver takes the request and the container
// cannot start. What the toolkit then does (its hook adds /dev/nvidia*,
// the device cgroup rules and the driver libraries) is not tested here.
// What is tested is that apply says so in words that name the fix, keeps
// the created container in state (its device request read back, so the
// plan shows no change of gpus), and destroy removes it.
func TestContainerGPURequest(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	ctx := context.Background()
	n := sdk.Node{Name: "local", Transport: "local"}
	p := New()
	rs := sdktest.Schema(t, p, ctype)
	ib := standInRDMA(t)
	for _, tc := range []struct {
		gpus  string
		count int
	}{{"all", -1}, {"2", 2}} {
		t.Run(tc.gpus, func(t *testing.T) {
			name := "sparkform-test-gpus-" + tc.gpus
			cleanupContainer(t, api, name)
			memlock, _ := engineMemlock(t)
			attrs := sparkAttrs(name, ib, memlock)
			attrs["gpus"] = cty.StringVal(tc.gpus)
			config := sdktest.Object(t, rs.Block, attrs)
			null := cty.NullVal(rs.Block.ImpliedType())
			plan := sdktest.Plan(t, p, ctype, n, null, nil, config)
			resp := p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: ctype, Address: ctype + ".gpu", Node: n,
				Prior: null, Planned: plan.Planned, Config: config}, func(sdk.Progress) {})

			ins, ierr := api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
			if ierr != nil {
				t.Fatalf("the container was not created: %v (apply: %v)", ierr, resp.Diagnostics.Err())
			}
			want := []container.DeviceRequest{{Count: tc.count, Capabilities: [][]string{{"gpu"}}}}
			if got := ins.Container.HostConfig.DeviceRequests; !reflect.DeepEqual(got, want) {
				t.Errorf("HostConfig.DeviceRequests = %+v, want %+v", got, want)
			}

			err := resp.Diagnostics.Err()
			if ins.Container.State != nil && ins.Container.State.Running {
				// An engine with a GPU driver: the request was served.
				if err != nil {
					t.Fatal(err)
				}
			} else {
				if err == nil {
					t.Fatal("apply succeeded but the container is not running")
				}
				for _, w := range []string{"could not select device driver", "NVIDIA Container Toolkit", "nvidia-ctk runtime configure", "gpus"} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("apply error does not say %q:\n%v", w, err)
					}
				}
				if !errors.Is(gpuDriverHint(errors.New("could not select device driver \"\" with capabilities: [[gpu]]"), tc.gpus, "n"), ErrNoGPUDriver) {
					t.Error("the hint does not wrap ErrNoGPUDriver")
				}
				if resp.NewState.IsNull() {
					t.Fatal("apply forgot the container it created")
				}
			}
			wantAttr(t, resp.NewState, "gpus", cty.StringVal(tc.gpus))
			sdktest.Destroy(t, p, ctype, n, resp.NewState, nil)
			if _, err := api.ContainerInspect(ctx, name, client.ContainerInspectOptions{}); !isNotFound(err) {
				t.Errorf("container %s still there after destroy (err %v)", name, err)
			}
		})
	}
}
