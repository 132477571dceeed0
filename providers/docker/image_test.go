package docker

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/moby/moby/client"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

const itype = "docker_image"

// pushFresh builds an image with a random 4 MiB layer (so nothing of it is
// cached), pushes it to the registry as ref, and removes it locally.
func pushFresh(t *testing.T, api *client.Client, ref string) {
	t.Helper()
	ctx := context.Background()
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		realpart.Missing(t, "busybox-static at /bin/busybox: %v", err)
	}
	buildImage(t, api, ref, map[string][]byte{
		"Dockerfile": []byte("FROM scratch\nCOPY busybox /bin/busybox\nCOPY weights.bin /weights.bin\n"),
		"busybox":    bb, "weights.bin": randomBytes(t, 4<<20),
	}, map[string]int64{"busybox": 0o755})
	// Docker 20.10 wants an X-Registry-Auth header on push, even if empty.
	resp, err := api.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: "e30="})
	if err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	if err := resp.Wait(ctx); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	if _, err := api.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
		t.Fatalf("remove %s: %v", ref, err)
	}
}

// TestImagePullFromRegistry: docker_image pulls from a local registry with
// per-layer progress, plans no changes after, notices a moved tag with
// pull = "always", and removes the image on destroy (keep_locally = false).
func TestImagePullFromRegistry(t *testing.T) {
	api := engine(t)
	reg := startRegistry(t)
	for _, n := range testNodes(t) {
		t.Run(n.Name, func(t *testing.T) {
			ctx := context.Background()
			ref := reg + "/sparkform/weights-" + n.Name + ":1"
			pushFresh(t, api, ref)
			t.Cleanup(func() { api.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true}) })

			p := sdktest.GRPC(t, New())
			rs := sdktest.Schema(t, p, itype)
			config := sdktest.Object(t, rs.Block, map[string]cty.Value{
				"name": cty.StringVal(ref), "pull": cty.StringVal("always"), "keep_locally": cty.False})
			null := cty.NullVal(rs.Block.ImpliedType())
			plan := sdktest.Plan(t, p, itype, n, null, nil, config)
			applied, events := sdktest.Apply(t, p, itype, n, null, plan.Planned, config, nil)
			var withBytes int
			first := ""
			for _, ev := range events {
				if ev.Total > 0 && ev.Current > 0 && ev.Current <= ev.Total && strings.Contains(ev.Message, "layers") {
					withBytes++
					if first == "" {
						first = ev.Message
					}
				}
			}
			if withBytes == 0 {
				t.Errorf("no progress event with per-layer byte counts: %+v", events)
			}
			last := events[len(events)-1]
			t.Logf("pull progress: %d events, %d with byte counts; first %q; last %q", len(events), withBytes, first, last.Message)
			if last.Current != last.Total || last.Total < 4<<20 {
				t.Errorf("last progress event %+v: want all of >= 4 MiB done", last)
			}
			st := applied.NewState
			id, digest := st.GetAttr("image_id").AsString(), st.GetAttr("repo_digest").AsString()
			if !strings.HasPrefix(id, "sha256:") || !strings.HasPrefix(digest, reg+"/sparkform/weights-"+n.Name+"@sha256:") {
				t.Fatalf("image_id %q repo_digest %q", id, digest)
			}
			// The first pull is left untagged when the tag moves below.
			t.Cleanup(func() { api.ImageRemove(ctx, id, client.ImageRemoveOptions{Force: true}) })
			read := sdktest.Read(t, p, itype, n, st, nil)
			if !read.NewState.RawEquals(st) {
				t.Fatalf("Read after Apply differs:\n%#v\n%#v", st, read.NewState)
			}
			// Same digest in the registry: no changes, even with pull = "always".
			if again := sdktest.Plan(t, p, itype, n, read.NewState, nil, config); !again.Planned.RawEquals(read.NewState) {
				t.Fatalf("second plan has changes: %#v", again.Planned)
			}
			// The tag moves in the registry: pull = "always" plans a pull.
			pushFresh(t, api, ref)
			moved := sdktest.Plan(t, p, itype, n, read.NewState, nil, config)
			if moved.Planned.GetAttr("repo_digest").IsKnown() {
				t.Fatalf("tag moved but plan keeps repo_digest %#v", moved.Planned.GetAttr("repo_digest"))
			}
			pulled, _ := sdktest.Apply(t, p, itype, n, read.NewState, moved.Planned, config, nil)
			if got := pulled.NewState.GetAttr("repo_digest").AsString(); got == digest {
				t.Errorf("after pulling the moved tag repo_digest is still %s", got)
			}
			sdktest.Destroy(t, p, itype, n, pulled.NewState, nil)
			if _, err := api.ImageInspect(ctx, ref); !isNotFound(err) {
				t.Errorf("image %s still on the node after destroy with keep_locally = false (err %v)", ref, err)
			}
		})
	}
}

// TestImagePullNever: pull = "never" and no image is a clear error.
func TestImagePullNever(t *testing.T) {
	engine(t)
	p := New()
	rs := sdktest.Schema(t, p, itype)
	n := sdk.Node{Name: "local", Transport: "local"}
	config := sdktest.Object(t, rs.Block, map[string]cty.Value{"name": cty.StringVal("127.0.0.1:1/sparkform/absent:1"), "pull": cty.StringVal("never")})
	null := cty.NullVal(rs.Block.ImpliedType())
	plan := sdktest.Plan(t, p, itype, n, null, nil, config)
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: itype, Address: itype + ".test", Node: n,
		Prior: null, Planned: plan.Planned, Config: config}, func(sdk.Progress) {})
	if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), `pull = "never"`) {
		t.Fatalf("apply error %v; want one that names pull = \"never\"", err)
	}
	if !resp.NewState.IsNull() {
		t.Errorf("state %#v, want null (nothing on the node)", resp.NewState)
	}
}
