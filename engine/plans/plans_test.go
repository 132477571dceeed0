package plans

import (
	"bytes"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

func TestPlanNodeShared(t *testing.T) {
	var p Plan
	a := sdk.Node{Name: "node.a", Transport: "ssh", Host: "10.0.0.1", Port: 22, IdentityFiles: []string{"k"}}
	a2 := a
	a2.IdentityFiles = []string{"k"} // equal, not the same slice
	b := a
	b.Host = "10.0.0.2"
	if p.Node(sdk.Node{}) != nil {
		t.Error("the zero Node gave a pointer, want nil (no node)")
	}
	pa := p.Node(a)
	if pa == nil || pa.Host != "10.0.0.1" {
		t.Fatalf("Node(a) = %v", pa)
	}
	if p.Node(a2) != pa {
		t.Error("an equal Node got a pointer of its own")
	}
	if pb := p.Node(b); pb == pa || pb.Host != "10.0.0.2" {
		t.Errorf("Node(b) = %v, want b's own", pb)
	}
	a.Host = "changed" // the plan keeps its own copy
	if pa.Host != "10.0.0.1" {
		t.Error("the plan's node follows the caller's variable")
	}

	// Changes planned at once share one node.
	var q Plan
	got := make([]*sdk.Node, 16)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = q.Node(b)
		}()
	}
	wg.Wait()
	for i, n := range got {
		if n != got[0] {
			t.Fatalf("goroutine %d got %p, goroutine 0 %p", i, n, got[0])
		}
	}
}

// roundTrip is p written to a plan file and read back.
func roundTrip(t *testing.T, p *Plan) *Plan {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A plan read from a file shares one *sdk.Node per node among its
// changes, and a change without a prior node reads back without one.
func TestReadSharesNodes(t *testing.T) {
	n := sdk.Node{Name: "node.a", Transport: "local"}
	p := &Plan{Lineage: "L", Mode: NormalMode, ConfigDigest: testDigest, Created: testCreated}
	for _, addr := range []string{"sparkform_data.a", "sparkform_data.b"} {
		p.Changes = append(p.Changes, &ResourceChange{Addr: addr, Resource: addr, Type: "sparkform_data", Provider: "sparkform",
			Node: &sdk.Node{Name: n.Name, Transport: n.Transport}, Action: Create,
			Before: cty.NullVal(cty.String), After: cty.StringVal("x")})
	}
	got := roundTrip(t, p)
	a, b := got.Change("sparkform_data.a"), got.Change("sparkform_data.b")
	if a == nil || b == nil || a.Node == nil || a.Node != b.Node || a.Node.Name != n.Name || a.Node.Transport != n.Transport {
		t.Fatalf("nodes read back: %v %v", a, b)
	}
	if a.PriorNode != nil || a.NodeName() != "node.a" {
		t.Errorf("PriorNode %v, NodeName %q", a.PriorNode, a.NodeName())
	}
	if (&ResourceChange{}).NodeName() != "" {
		t.Error("NodeName of a change without a node")
	}
}

// Looking up a node the plan has allocates nothing: a plan asks once or
// twice per change.
func TestPlanNodeFoundAllocatesNothing(t *testing.T) {
	var p Plan
	n := sdk.Node{Name: "node.a", Transport: "ssh", Host: "h", IdentityFiles: []string{"k"}}
	p.Node(n)
	if allocs := testing.AllocsPerRun(100, func() { p.Node(n) }); allocs != 0 {
		t.Errorf("Node of a known node allocates %.0f times, want 0", allocs)
	}
}
