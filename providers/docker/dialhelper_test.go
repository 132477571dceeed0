package docker

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/nodehelper/helpertest"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// TestDialThroughHelper: a node user who reaches the Docker socket only
// through sudo (become) gets the Engine API from the node helper's dial
// when the helper is on the node (one process, no Docker CLI), and from
// `docker system dial-stdio` when it is not; the values read are the
// same, and the stream's processes end with the Read's connections.
func TestDialThroughHelper(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	bed := testbed.StartT(t, 1)
	running := "sparkform-test-dialhelper"
	cleanupContainer(t, api, running)
	byHand(t, "run", "-d", "--name", running, "--entrypoint", "/bin/busybox", guardImage, "sleep", "600")
	for _, tc := range []struct {
		name   string
		helper bool
		want   string // the program that carried the API
	}{
		{"helper", true, "dial"},
		{"no helper", false, "docker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := bed.Nodes[0].SDK()
			n.Become = true
			t.Setenv(node.HelperDirEnv, bed.HelperDir)
			if tc.helper {
				helpertest.Install(t, n)
			} else {
				t.Setenv(node.HelperEnv, "-")
			}
			tr, err := bed.Nodes[0].Trace()
			if err != nil {
				t.Fatal(err)
			}
			p := New()
			rs := sdktest.Schema(t, p, ctype)
			items := []sdk.ReadItem{{TypeName: ctype, Address: ctype + ".c",
				Prior: sdktest.Object(t, rs.Block, map[string]cty.Value{"name": cty.StringVal(running), "image": cty.StringVal(guardImage)})}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp := p.ReadResources(ctx, sdk.ReadRequest{Node: n, Resources: items})
			p.(*provider).clients.close()
			if resp.Diagnostics.HasErrors() || resp.Results[0].Diagnostics.HasErrors() {
				t.Fatal(resp.Diagnostics.Err(), resp.Results[0].Diagnostics)
			}
			if st := resp.Results[0].NewState; st.IsNull() || ctyval.Str(st.GetAttr("id")) == "" {
				t.Fatalf("the running container reads as %#v", st)
			} else {
				wantAttr(t, st, "running", cty.True)
			}
			ps, err := tr.Stop(10 * time.Second)
			if err != nil {
				t.Fatalf("%v (the API stream's processes outlived the Read)", err)
			}
			var dial, cli int
			for _, p := range ps {
				for _, a := range p.Execs {
					switch {
					case len(a) >= 2 && strings.HasPrefix(filepath.Base(a[0]), "sparkform-node-") && a[1] == "dial":
						dial++
						if a[len(a)-1] != "unix://"+socketPath {
							t.Errorf("the helper dialled %q, want unix://%s", a[len(a)-1], socketPath)
						}
					case len(a) > 0 && filepath.Base(a[0]) == "docker":
						cli++
					}
				}
			}
			if got := map[bool]string{true: "dial", false: "docker"}[dial > 0 && cli == 0]; got != tc.want || dial+cli != 1 {
				t.Errorf("helper dial %d, docker CLI %d; want one %s (%s)", dial, cli, tc.want, ps.Programs())
			}
		})
	}
}
