package gitkit_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

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
