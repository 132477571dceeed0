package gitkit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/nodehelper/helpertest"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// BenchmarkReadBatch50 reads 50 staged checkouts on one node in one
// ReadResources call, on the local node and on a real sshd node; the
// round-trip count is reported and must be 1.
func BenchmarkReadBatch50(b *testing.B) {
	fx := newFixture(b, b.TempDir())
	b.Run("local", func(b *testing.B) {
		benchRead(b, fx, sdk.Node{Name: "node.local", Transport: "local"}, b.TempDir())
	})
	b.Run("sshd", func(b *testing.B) {
		bn := testbed.StartT(b, 1).Nodes[0]
		benchRead(b, fx, bn.SDK(), bn.Root)
	})
}

func benchRead(b *testing.B, fx fixture, nd sdk.Node, dir string) {
	const n = 50
	p := gitkit.New()
	pool := node.NewPool()
	defer pool.Close()
	conn, err := pool.Get(context.Background(), nd)
	if err != nil {
		b.Fatal(err)
	}
	first := filepath.Join(dir, "kits", "k00")
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{
		TypeName: gitkit.TypeCheckout, Node: nd, Prior: nullObj(), Planned: config(fx.bare, fx.c1, "release/runtime", first),
	}, nil)
	if resp.Diagnostics.HasErrors() {
		b.Fatal(resp.Diagnostics.Err())
	}
	items := make([]sdk.ReadItem, n)
	for i := range items {
		path := filepath.Join(dir, "kits", fmt.Sprintf("k%02d", i))
		if i > 0 { // same tree, copied: staging 50 clones would time git, not Read
			if _, err := conn.Run(context.Background(), node.Cmd{Argv: []string{"cp", "-a", first, path}}); err != nil {
				b.Fatal(err)
			}
		}
		items[i] = sdk.ReadItem{TypeName: gitkit.TypeCheckout, Address: fmt.Sprintf("k[%d]", i),
			Prior: withPath(resp.NewState, path), Private: resp.Private}
	}
	want := digestOf(resp.NewState)
	b.ResetTimer()
	var trips int
	for b.Loop() {
		rr := p.ReadResources(context.Background(), sdk.ReadRequest{Node: nd, Resources: items})
		if rr.Diagnostics.HasErrors() {
			b.Fatal(rr.Diagnostics.Err())
		}
		for i, r := range rr.Results {
			if digestOf(r.NewState) != want {
				b.Fatalf("item %d digest %s, want %s", i, digestOf(r.NewState), want)
			}
		}
		trips = rr.RoundTrips
	}
	if trips != 1 {
		b.Fatalf("round trips = %d, want 1", trips)
	}
	b.ReportMetric(float64(trips), "roundtrips/op")
}

// BenchmarkReadKit200 reads one checkout of 200 small files in 10 folders
// (the no-op plan's kit of issue 32, e2e/nodecost_test.go) on an sshd node
// through a held connection, with walk.sh (find and sha256sum) and with
// the node helper's walk. ns/op is the wall time of a read;
// node-cpu-ms/op the CPU that the node's sshd and everything it started
// used per read (reaped when the connection closes after the last read,
// so it includes 1/N of the connection's own setup).
func BenchmarkReadKit200(b *testing.B) {
	bn := testbed.StartT(b, 1).Nodes[0]
	nd := bn.SDK()
	kit := filepath.Join(bn.Root, "kit200")
	for i := 0; i < 200; i++ {
		writeFile(b, filepath.Join(kit, fmt.Sprintf("d%d/f%d.py", i%10, i)), fmt.Sprintf("print(%d)\n", i), 0o644)
	}
	prior := config("/srv/git/kit.git", goodCommit, "", kit)
	prior = cty.ObjectVal(map[string]cty.Value{"repo": prior.GetAttr("repo"), "commit": prior.GetAttr("commit"),
		"subdir": prior.GetAttr("subdir"), "path": prior.GetAttr("path"), "tree_digest": cty.StringVal("sha256:0")})
	items := []sdk.ReadItem{{TypeName: gitkit.TypeCheckout, Address: "gitkit_checkout.kit", Prior: prior}}
	var digests []string
	for _, mode := range []string{"script", "helper"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "helper" {
				helpertest.Install(b, nd)
			} else {
				b.Setenv(node.HelperEnv, "-")
			}
			if !bn.WaitIdle(10 * time.Second) {
				b.Fatal("a connection to the node is still open")
			}
			before, err := bn.ChildCPU()
			if err != nil {
				b.Fatal(err)
			}
			pool := node.NewPool()
			p := gitkit.NewWithPool(pool)
			read := func() string {
				rr := p.ReadResources(context.Background(), sdk.ReadRequest{Node: nd, Resources: items})
				if rr.Diagnostics.HasErrors() || rr.RoundTrips != 1 {
					b.Fatalf("read: %d round trips, %v", rr.RoundTrips, rr.Diagnostics.Err())
				}
				return digestOf(rr.Results[0].NewState)
			}
			digests = append(digests, read()) // connect
			n := 0
			for b.Loop() {
				read()
				n++
			}
			pool.Close()
			if !bn.WaitIdle(10 * time.Second) {
				b.Fatal("the connection did not end")
			}
			after, err := bn.ChildCPU()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64((after-before).Microseconds())/1000/float64(n+1), "node-cpu-ms/op")
		})
	}
	if len(digests) == 2 && digests[0] != digests[1] {
		b.Errorf("digests differ: script %s, helper %s", digests[0], digests[1])
	}
}
