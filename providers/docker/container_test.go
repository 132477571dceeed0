package docker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/moby/moby/client"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

const ctype = "docker_container"

// fakeHub lays out a Hugging Face hub snapshot under dir (blobs + a
// snapshot of relative symlinks) and returns the hub dir and the per-file
// binds a hubstage manifest would give: each resolved to its real blob.
func fakeHub(t *testing.T, dir string) (string, []bindFile) {
	t.Helper()
	repo := filepath.Join(dir, "hub", "models--org--m")
	snap := filepath.Join(repo, "snapshots", "0123abcd")
	for _, d := range []string{filepath.Join(repo, "blobs"), filepath.Join(snap, "tokenizer")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"config.json": "b1", "model-00001-of-00001.safetensors": "b2", "tokenizer/vocab.json": "b3"}
	var binds []bindFile
	for _, name := range []string{"config.json", "model-00001-of-00001.safetensors", "tokenizer/vocab.json"} {
		blob := filepath.Join(repo, "blobs", files[name])
		if err := os.WriteFile(blob, []byte("data of "+name), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(snap, name)
		rel, _ := filepath.Rel(filepath.Dir(link), blob)
		if err := os.Symlink(rel, link); err != nil {
			t.Fatal(err)
		}
		real, err := filepath.EvalSymlinks(link)
		if err != nil {
			t.Fatal(err)
		}
		binds = append(binds, bindFile{Source: real, Target: "/model/" + name})
	}
	return filepath.Join(dir, "hub"), binds
}

func bindList(bs []bindFile) cty.Value {
	vs := make([]cty.Value, len(bs))
	for i, b := range bs {
		vs[i] = cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal(b.Source), "target": cty.StringVal(b.Target)})
	}
	return cty.ListVal(vs)
}

// seedAttrs is a container shaped like the seed recipe's.
func seedAttrs(name string, port int, hub, cache string, binds []bindFile) map[string]cty.Value {
	var targets []string
	for _, b := range binds {
		targets = append(targets, b.Target)
	}
	mount := func(src, dst string, ro, create bool) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal(src), "target": cty.StringVal(dst),
			"read_only": cty.BoolVal(ro), "create_host_path": cty.BoolVal(create)})
	}
	return map[string]cty.Value{
		"name":         cty.StringVal(name),
		"image":        cty.StringVal(guardImage),
		"command":      ctyval.ListOrNull([]string{"--served-model-name", "deepseek-v41-flash-exl3"}),
		"memory":       cty.StringVal("9g"),
		"memory_swap":  cty.StringVal("9g"),
		"cpus":         cty.NumberIntVal(6),
		"shm_size":     cty.StringVal("2g"),
		"devices":      ctyval.ListOrNull([]string{"/dev/zero:/dev/dri/card0:rw"}),
		"ulimits":      ctyval.MapOrNull(map[string]string{"memlock": "65536"}),
		"cap_add":      ctyval.SetOrNull([]string{"sys_nice"}),
		"labels":       ctyval.MapOrNull(map[string]string{"recipe": "dsv41-flash-exl3-2x"}),
		"network_mode": cty.StringVal("host"),
		"stop_timeout": cty.NumberIntVal(3),
		"env": ctyval.MapOrNull(map[string]string{
			"DS41_MAX_MODEL_LEN": "1048576", "VLLM_CACHE_ROOT": "/cache/vllm",
			"PORT": strconv.Itoa(port), "GUARD_FILES": strings.Join(targets, " "),
		}),
		"mount":      cty.SetVal([]cty.Value{mount(hub, "/hub", true, false), mount(cache, "/cache", false, true)}),
		"bind_files": bindList(binds),
		"wait": cty.ObjectVal(map[string]cty.Value{
			"http": cty.StringVal("http://127.0.0.1:" + strconv.Itoa(port) + "/health"), "tcp": cty.NullVal(cty.String),
			"log_line": cty.NullVal(cty.String), "timeout": cty.StringVal("60s"),
		}),
	}
}

func wantAttr(t *testing.T, state cty.Value, name string, want cty.Value) {
	t.Helper()
	if got := state.GetAttr(name); !got.RawEquals(want) {
		t.Errorf("%s = %#v, want %#v", name, got, want)
	}
}

func replacePaths(ps []cty.Path) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p[0].(cty.GetAttrStep).Name)
	}
	return out
}

func cleanupContainer(t *testing.T, api *client.Client, name string) {
	t.Cleanup(func() {
		api.ContainerRemove(context.Background(), name, client.ContainerRemoveOptions{Force: true})
	})
}

// TestContainerSeedLifecycle applies a container shaped like the seed's
// whose entrypoint is the serving guard, then checks: no changes on a
// second plan, `docker update` and `docker stop` by hand are drift that
// apply repairs in place, a command change replaces, removal is drift,
// destroy removes. On the local node and an sshd node, through gRPC.
func TestContainerSeedLifecycle(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	for _, n := range testNodes(t) {
		t.Run(n.Name, func(t *testing.T) {
			ctx := context.Background()
			p := sdktest.GRPC(t, New())
			rs := sdktest.Schema(t, p, ctype)
			dir := t.TempDir()
			hub, binds := fakeHub(t, dir)
			name := "sparkform-test-seed-" + n.Name
			cleanupContainer(t, api, name)
			port := freePort(t)
			config := sdktest.Object(t, rs.Block, seedAttrs(name, port, hub, filepath.Join(dir, "cache"), binds))
			null := cty.NullVal(rs.Block.ImpliedType())

			// Create: the guard only serves when the limits, files and env are right.
			plan := sdktest.Plan(t, p, ctype, n, null, nil, config)
			applied, events := sdktest.Apply(t, p, ctype, n, null, plan.Planned, config, plan.PlannedPrivate)
			st := applied.NewState
			if !st.IsWhollyKnown() {
				t.Fatalf("applied state has unknowns: %#v", st)
			}
			ready := false
			for _, ev := range events {
				if strings.Contains(ev.Message, "ready") && ev.Elapsed > 0 {
					ready = true
				}
			}
			if !ready {
				t.Errorf("no 'ready' progress event with elapsed time: %+v", events)
			}
			wantAttr(t, st, "running", cty.True)
			wantAttr(t, st, "memory", cty.StringVal("9g"))
			wantAttr(t, st, "cgroup_memory_max", cty.StringVal("9663676416"))
			wantAttr(t, st, "cgroup_memory_swap_max", cty.StringVal("0"))
			wantAttr(t, st, "cgroup_cpu_max", cty.StringVal("600000 100000"))
			read := sdktest.Read(t, p, ctype, n, st, applied.Private)
			if !read.NewState.RawEquals(st) {
				t.Fatalf("Read after Apply differs:\napplied: %#v\nread:    %#v", st, read.NewState)
			}

			// Second plan: no changes (image ENV, default perms, ordering are not drift).
			if again := sdktest.Plan(t, p, ctype, n, read.NewState, read.Private, config); !again.Planned.RawEquals(read.NewState) || len(again.RequiresReplace) > 0 {
				t.Fatalf("second plan has changes:\nprior:   %#v\nplanned: %#v", read.NewState, again.Planned)
			}

			// docker update by hand: drift, repaired in place.
			byHand(t, "update", "--memory", "10g", "--memory-swap", "10g", name)
			drift := sdktest.Read(t, p, ctype, n, st, applied.Private).NewState
			wantAttr(t, drift, "memory", cty.StringVal("10g"))
			wantAttr(t, drift, "cgroup_memory_max", cty.StringVal("10737418240"))
			fix := sdktest.Plan(t, p, ctype, n, drift, nil, config)
			if len(fix.RequiresReplace) > 0 || fix.Planned.RawEquals(drift) {
				t.Fatalf("docker update by hand: plan %v replace %v; want an in-place update", fix.Planned.GetAttr("memory"), replacePaths(fix.RequiresReplace))
			}
			wantAttr(t, fix.Planned, "id", drift.GetAttr("id"))
			fixed, _ := sdktest.Apply(t, p, ctype, n, drift, fix.Planned, config, nil)
			wantAttr(t, fixed.NewState, "id", drift.GetAttr("id"))
			wantAttr(t, fixed.NewState, "memory", cty.StringVal("9g"))
			wantAttr(t, fixed.NewState, "cgroup_memory_max", cty.StringVal("9663676416"))

			// docker stop by hand: drift, repaired by starting it again.
			byHand(t, "stop", "-t", "1", name)
			stopped := sdktest.Read(t, p, ctype, n, fixed.NewState, nil).NewState
			wantAttr(t, stopped, "running", cty.False)
			restart := sdktest.Plan(t, p, ctype, n, stopped, nil, config)
			if len(restart.RequiresReplace) > 0 || !restart.Planned.GetAttr("running").RawEquals(cty.True) {
				t.Fatalf("docker stop by hand: planned running=%#v replace %v; want running=true in place",
					restart.Planned.GetAttr("running"), replacePaths(restart.RequiresReplace))
			}
			started, _ := sdktest.Apply(t, p, ctype, n, stopped, restart.Planned, config, nil)
			wantAttr(t, started.NewState, "running", cty.True)
			wantAttr(t, started.NewState, "id", stopped.GetAttr("id"))

			// Changing command replaces the container.
			attrs2 := seedAttrs(name, port, hub, filepath.Join(dir, "cache"), binds)
			attrs2["command"] = ctyval.ListOrNull([]string{"--served-model-name", "renamed"})
			config2 := sdktest.Object(t, rs.Block, attrs2)
			repl := sdktest.Plan(t, p, ctype, n, started.NewState, nil, config2)
			if got := replacePaths(repl.RequiresReplace); len(got) != 1 || got[0] != "command" {
				t.Fatalf("command change: replace paths %v, want [command]", got)
			}
			replaced, _ := sdktest.Apply(t, p, ctype, n, started.NewState, repl.Planned, config2, nil)
			if replaced.NewState.GetAttr("id").RawEquals(started.NewState.GetAttr("id")) {
				t.Errorf("replace kept the container id %v", replaced.NewState.GetAttr("id"))
			}
			wantAttr(t, replaced.NewState, "running", cty.True)
			if _, err := api.ContainerInspect(ctx, started.NewState.GetAttr("id").AsString(), client.ContainerInspectOptions{}); !isNotFound(err) {
				t.Errorf("old container still there after replace: %v", err)
			}

			// Destroy removes it.
			sdktest.Destroy(t, p, ctype, n, replaced.NewState, nil)
			if _, err := api.ContainerInspect(ctx, name, client.ContainerInspectOptions{}); !isNotFound(err) {
				t.Errorf("container %s still there after destroy (err %v)", name, err)
			}
			// And a removed container reads as gone (drift: planned as a create).
			if gone := sdktest.Read(t, p, ctype, n, replaced.NewState, nil); !gone.NewState.IsNull() {
				t.Errorf("Read of a removed container = %#v, want null", gone.NewState)
			}
		})
	}
}

// TestContainerGuardRefusesWrongLimits shows the guard really checks: with
// 8g instead of 9g it exits, and apply says why (the container's output)
// and still returns the container that is there.
func TestContainerGuardRefusesWrongLimits(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	n := sdk.Node{Name: "local", Transport: "local"}
	p := New()
	rs := sdktest.Schema(t, p, ctype)
	dir := t.TempDir()
	hub, binds := fakeHub(t, dir)
	name := "sparkform-test-guard-fail"
	cleanupContainer(t, api, name)
	attrs := seedAttrs(name, freePort(t), hub, filepath.Join(dir, "cache"), binds)
	attrs["memory"], attrs["memory_swap"] = cty.StringVal("8g"), cty.StringVal("8g")
	config := sdktest.Object(t, rs.Block, attrs)
	null := cty.NullVal(rs.Block.ImpliedType())
	plan := sdktest.Plan(t, p, ctype, n, null, nil, config)
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: ctype, Address: ctype + ".test", Node: n,
		Prior: null, Planned: plan.Planned, Config: config}, func(sdk.Progress) {})
	err := resp.Diagnostics.Err()
	if err == nil || !strings.Contains(err.Error(), "GUARD FAIL: memory.max is 8589934592") {
		t.Fatalf("apply error = %v; want the guard's memory complaint", err)
	}
	if resp.NewState.IsNull() || resp.NewState.GetAttr("running").True() {
		t.Fatalf("apply must return the exited container that is really there, got %#v", resp.NewState)
	}
	sdktest.Destroy(t, p, ctype, n, resp.NewState, nil)
}

// TestContainerPlanRefusals: what plan refuses after looking at the node.
func TestContainerPlanRefusals(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	ctx := context.Background()
	foreign := "sparkform-test-foreign"
	cleanupContainer(t, api, foreign)
	api.ContainerRemove(ctx, foreign, client.ContainerRemoveOptions{Force: true})
	if _, err := api.ContainerCreate(ctx, client.ContainerCreateOptions{Name: foreign, Image: guardImage}); err != nil {
		t.Fatal(err)
	}
	for _, n := range testNodes(t) {
		t.Run(n.Name, func(t *testing.T) {
			p := New()
			rs := sdktest.Schema(t, p, ctype)
			dir := t.TempDir()
			hub, binds := fakeHub(t, dir)
			snapLink := filepath.Join(hub, "models--org--m", "snapshots", "0123abcd", "config.json")
			for _, tc := range []struct {
				name  string
				edit  func(map[string]cty.Value)
				words []string
			}{
				{"symlink bind source", func(a map[string]cty.Value) {
					a["bind_files"] = bindList(append(binds, bindFile{Source: snapLink, Target: "/model/link.json"}))
				}, []string{"symlink " + snapLink, "regular file"}},
				{"directory bind source", func(a map[string]cty.Value) {
					a["bind_files"] = bindList(append(binds, bindFile{Source: hub, Target: "/model/dir"}))
				}, []string{"directory " + hub}},
				{"same-named container not ours", func(a map[string]cty.Value) {
					a["name"] = cty.StringVal(foreign)
				}, []string{"not created by sparkform", "sparkform import"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					attrs := seedAttrs("sparkform-test-refuse", 1, hub, filepath.Join(dir, "cache"), binds)
					tc.edit(attrs)
					config := sdktest.Object(t, rs.Block, attrs)
					null := cty.NullVal(rs.Block.ImpliedType())
					resp := p.PlanResourceChange(ctx, sdk.PlanRequest{TypeName: ctype, Address: ctype + ".test", Node: n,
						Prior: null, Config: config, Proposed: sdk.ProposedNew(rs.Block, null, config)})
					err := resp.Diagnostics.Err()
					if err == nil {
						t.Fatal("plan accepted it")
					}
					for _, w := range tc.words {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("plan error %q does not say %q", err, w)
						}
					}
				})
			}
		})
	}
}

// TestContainerReadBatch: one Read of a node's docker resources (an image
// and several containers) costs two sequential round trips: one wave of
// image and container inspects together, then one cgroup command. Results
// are those of the Router's type-after-type read (three round trips), and
// a missing container reads as gone.
func TestContainerReadBatch(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	n := sdk.Node{Name: "local", Transport: "local"}
	p := New()
	rs := sdktest.Schema(t, p, ctype)
	var items []sdk.ReadItem
	var states []cty.Value
	for i := 0; i < 3; i++ {
		name := "sparkform-test-batch-" + strconv.Itoa(i)
		cleanupContainer(t, api, name)
		config := sdktest.Object(t, rs.Block, map[string]cty.Value{
			"name": cty.StringVal(name), "image": cty.StringVal(guardImage), "memory": cty.StringVal("64m"), "cpus": cty.NumberFloatVal(0.5),
			"entrypoint":   ctyval.ListOrNull([]string{"/bin/busybox", "sh", "-c", "echo booting; echo ready; exec /bin/busybox sleep 600"}),
			"stop_timeout": cty.NumberIntVal(0),
			"wait": cty.ObjectVal(map[string]cty.Value{"http": cty.NullVal(cty.String), "tcp": cty.NullVal(cty.String),
				"log_line": cty.StringVal("^ready$"), "timeout": cty.StringVal("30s")}),
		})
		st, priv := sdktest.Create(t, p, ctype, n, config)
		wantAttr(t, st, "cgroup_memory_max", cty.StringVal("67108864"))
		wantAttr(t, st, "cgroup_cpu_max", cty.StringVal("50000 100000"))
		items = append(items, sdk.ReadItem{TypeName: ctype, Address: ctype + ".b" + strconv.Itoa(i), Prior: st, Private: priv})
		states = append(states, st)
	}
	byHand(t, "rm", "-f", "sparkform-test-batch-2")

	// The image sits between the containers: results must come back in order.
	img, err := api.ImageInspect(context.Background(), guardImage)
	if err != nil {
		t.Fatal(err)
	}
	is := sdktest.Schema(t, p, "docker_image")
	imgPrior := sdktest.Object(t, is.Block, map[string]cty.Value{"name": cty.StringVal(guardImage)})
	imgWant := sdktest.Object(t, is.Block, map[string]cty.Value{"name": cty.StringVal(guardImage),
		"image_id": cty.StringVal(img.ID), "repo_digest": cty.StringVal("")})
	items = append(items[:1], append([]sdk.ReadItem{{TypeName: "docker_image", Address: "docker_image.guard", Prior: imgPrior}}, items[1:]...)...)
	want := []cty.Value{states[0], imgWant, states[1], cty.NullVal(rs.Block.ImpliedType())}

	for _, tc := range []struct {
		name  string
		read  func(context.Context, sdk.ReadRequest) sdk.ReadResponse
		trips int
	}{
		{"provider", p.ReadResources, 2},
		{"router, type after type", p.(*provider).Router.ReadResources, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := tc.read(context.Background(), sdk.ReadRequest{Node: n, Resources: items})
			if resp.Diagnostics.HasErrors() {
				t.Fatal(resp.Diagnostics.Err())
			}
			if resp.RoundTrips != tc.trips {
				t.Errorf("RoundTrips = %d, want %d", resp.RoundTrips, tc.trips)
			}
			if len(resp.Results) != len(want) {
				t.Fatalf("%d results for %d items", len(resp.Results), len(want))
			}
			for i, w := range want {
				if r := resp.Results[i]; !r.NewState.RawEquals(w) || len(r.Diagnostics) > 0 || string(r.Private) != string(items[i].Private) {
					t.Errorf("item %d (%s): %#v %v, want %#v", i, items[i].Address, r.NewState, r.Diagnostics, w)
				}
			}
		})
	}

	// Containers alone: still one wave of inspects and one cgroup command.
	only := []sdk.ReadItem{items[0], items[2]}
	if resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n, Resources: only}); resp.RoundTrips != 2 || resp.Diagnostics.HasErrors() {
		t.Errorf("containers alone: RoundTrips = %d (want 2), %v", resp.RoundTrips, resp.Diagnostics.Err())
	}
	for i := 0; i < 2; i++ {
		sdktest.Destroy(t, p, ctype, n, states[i], nil)
	}
}

// TestSSHNodeWithoutSocketAccess: over SSH without become, a user outside
// the docker group gets an error that says what to do.
func TestSSHNodeWithoutSocketAccess(t *testing.T) {
	engine(t)
	nodes := testNodes(t)
	if len(nodes) < 2 {
		realpart.Missing(t, "an sshd node (see the log above)")
	}
	n := nodes[1]
	n.Become = false
	p := New()
	resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n, Resources: []sdk.ReadItem{{
		TypeName: ctype, Address: ctype + ".x", Prior: sdktest.Object(t, sdktest.Schema(t, p, ctype).Block, map[string]cty.Value{
			"name": cty.StringVal("sparkform-test-nobody"), "image": cty.StringVal(guardImage), "id": cty.StringVal("0123456789ab")}),
	}}})
	var msgs []string
	for _, r := range resp.Results {
		for _, d := range r.Diagnostics {
			msgs = append(msgs, d.Summary+": "+d.Detail)
		}
	}
	for _, d := range resp.Diagnostics {
		msgs = append(msgs, d.Summary+": "+d.Detail)
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, "docker group") || !strings.Contains(all, "become") {
		t.Fatalf("diagnostics %q do not say to join the docker group or use become", all)
	}
}

// TestContainerMissingMountSourceAtApply: a mount source that does not
// exist yet passes plan (another resource may make it first) and fails the
// create with its path and what to do; nothing is left behind.
func TestContainerMissingMountSourceAtApply(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	n := sdk.Node{Name: "local", Transport: "local"}
	p := New()
	rs := sdktest.Schema(t, p, ctype)
	dir := t.TempDir()
	hub, binds := fakeHub(t, dir)
	name := "sparkform-test-nomount"
	cleanupContainer(t, api, name)
	attrs := seedAttrs(name, 1, hub, filepath.Join(dir, "cache"), binds)
	attrs["mount"] = cty.SetVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal(dir + "/made-later"),
		"target": cty.StringVal("/kit"), "read_only": cty.True, "create_host_path": cty.NullVal(cty.Bool)})})
	config := sdktest.Object(t, rs.Block, attrs)
	null := cty.NullVal(rs.Block.ImpliedType())
	plan := sdktest.Plan(t, p, ctype, n, null, nil, config)
	if plan.Diagnostics.HasErrors() {
		t.Fatalf("plan refused a mount source that is made later: %v", plan.Diagnostics.Err())
	}
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: ctype, Address: ctype + ".test", Node: n,
		Prior: null, Planned: plan.Planned, Config: config}, nil)
	err := resp.Diagnostics.Err()
	if err == nil {
		t.Fatal("apply created a container with a missing mount source")
	}
	for _, w := range []string{dir + "/made-later", "create_host_path"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("apply error %q does not say %q", err, w)
		}
	}
	if !resp.NewState.IsNull() {
		t.Errorf("state after a failed create = %#v, want null", resp.NewState)
	}
}

// TestReadSessionsOnTheNode: what one Read of an image, a running
// container and two missing ones costs an sshd node, counted as sshd saw
// it (command sessions), for the two ways its user reaches the Docker
// socket, and the values read either way are the kernel's:
//
//   - only through sudo (become): ONE `sudo -n docker system dial-stdio`
//     per Read, however many images and containers it reads (each
//     concurrent API call used to start one more: sudo and the docker CLI
//     on the node, tens of milliseconds each);
//   - as a member of the docker group (the user of a DGX Spark): the
//     socket itself, forwarded by sshd (direct-streamlocal), no session.
//
// The cgroup values come from one command run as the login user (no sudo:
// the files are world-readable).
func TestReadSessionsOnTheNode(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	bed := testbed.StartT(t, 1) // fails under CI, skips elsewhere, without a test bed
	for _, tc := range []struct {
		name, user string
		socket     bool // the user opens the socket through its group
		sessions   int
	}{
		{"sudo dial-stdio", bed.Nodes[0].User, false, 2},
		{"docker group socket", bed.Nodes[0].DockerUser, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := bed.Nodes[0].SDK()
			n.User, n.Become = tc.user, true
			if tc.socket {
				needSocketGroup(t, tc.user)
			}
			running := "sparkform-test-sessions-running"
			cleanupContainer(t, api, running)
			byHand(t, "run", "-d", "--name", running, "--memory", "64m", "--memory-swap", "64m", "--cpus", "0.5",
				"--entrypoint", "/bin/busybox", guardImage, "sleep", "600")
			p := New()
			rs := sdktest.Schema(t, p, ctype)
			is := sdktest.Schema(t, p, "docker_image")
			items := []sdk.ReadItem{{TypeName: "docker_image", Address: "docker_image.guard",
				Prior: sdktest.Object(t, is.Block, map[string]cty.Value{"name": cty.StringVal(guardImage)})}}
			for _, name := range []string{running, "sparkform-test-sessions-gone-1", "sparkform-test-sessions-gone-2"} {
				items = append(items, sdk.ReadItem{TypeName: ctype, Address: ctype + "." + name,
					Prior: sdktest.Object(t, rs.Block, map[string]cty.Value{"name": cty.StringVal(name), "image": cty.StringVal(guardImage)})})
			}

			sessions := func() int { return strings.Count(bed.Nodes[0].Log(), "Starting session: command for "+tc.user+" ") }
			before := sessions()
			resp := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n, Resources: items})
			if resp.Diagnostics.HasErrors() {
				t.Fatal(resp.Diagnostics.Err())
			}
			if got := sessions() - before; got != tc.sessions {
				t.Errorf("%d command sessions on the node for one Read, want %d\nsshd log:\n%s", got, tc.sessions, bed.Nodes[0].Log())
			}
			for i, r := range resp.Results {
				if r.Diagnostics.HasErrors() || len(r.Diagnostics) > 0 {
					t.Errorf("%s: %v", items[i].Address, r.Diagnostics)
				}
			}
			if v := resp.Results[0].NewState; v.IsNull() || ctyval.Str(v.GetAttr("image_id")) == "" {
				t.Errorf("image: %#v, want its id", v)
			}
			st := resp.Results[1].NewState
			if st.IsNull() {
				t.Fatal("the running container reads as gone")
			}
			wantAttr(t, st, "running", cty.True)
			wantAttr(t, st, "cgroup_memory_max", cty.StringVal("67108864"))
			wantAttr(t, st, "cgroup_memory_swap_max", cty.StringVal("0"))
			wantAttr(t, st, "cgroup_cpu_max", cty.StringVal("50000 100000"))
			for _, r := range resp.Results[2:] {
				if !r.NewState.IsNull() {
					t.Errorf("a missing container reads as %#v, want gone", r.NewState)
				}
			}
			p.(*provider).clients.close()
		})
	}
}

// needSocketGroup checks that user may open the Docker socket through its
// group (the docker group of a stock install).
func needSocketGroup(t *testing.T, user string) {
	t.Helper()
	fi, err := os.Stat(socketPath)
	if err == nil {
		out, gerr := exec.Command("id", "-G", user).Output()
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case gerr != nil:
			err = gerr
		case st == nil || fi.Mode().Perm()&0o060 != 0o060 ||
			!slices.Contains(strings.Fields(string(out)), strconv.FormatUint(uint64(st.Gid), 10)):
			err = fmt.Errorf("%s (mode %v) is not group read-writable by a group of %s (%s)", socketPath, fi.Mode(), user, strings.TrimSpace(string(out)))
		}
	}
	realpart.Need(t, "a Docker socket the docker group opens", err)
}
