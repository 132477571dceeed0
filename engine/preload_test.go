package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// sameData reports whether a and b hold the very same decoded object (one
// decoding shared), not two equal ones.
func sameData(a, b cty.Value) bool {
	va, vb := reflect.ValueOf(a).FieldByName("v"), reflect.ValueOf(b).FieldByName("v")
	return va.Elem().Kind() == reflect.Map && va.Elem().Pointer() == vb.Elem().Pointer()
}

// PreloadState decodes a read-only view of the state (no lock) ahead of
// the plan; the plan's own read of the locked state then takes each value
// whose record bytes did not change from it, and reads what changed in
// between (a new value, a record removed, one added) as it is now.
func TestPreloadStateDecodesAheadOnlyWhatStaysTheSame(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := state.Open(path, state.Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := New(Options{Store: s})
	put := func(addr, id string) {
		t.Helper()
		m := stateValues()["data"].AsValueMap()
		m["id"] = cty.StringVal(id)
		obj := &stateObject{Addr: addr, Type: "sparkform_data", Provider: "sparkform", Value: cty.ObjectVal(m), Node: sdk.Node{Name: "n"}}
		if err := e.putObject(obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []string{"a", "b", "c"} {
		put("sparkform_data."+a, a+"1")
	}
	ro, err := state.OpenReadOnly(path) // the writer holds the lock
	if err != nil {
		t.Fatal(err)
	}
	e.PreloadState(ro)
	ro.Close()
	pre := map[string]cty.Value{}
	for addr, d := range e.values {
		pre[addr] = d.v
	}
	if len(pre) != 3 {
		t.Fatalf("preloaded %d values, want 3", len(pre))
	}

	put("sparkform_data.a", "a2")
	put("sparkform_data.d", "d1")
	if err := s.DeleteResource("sparkform_data.c"); err != nil {
		t.Fatal(err)
	}
	objs, diags := e.loadState()
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for addr, want := range map[string]string{"sparkform_data.a": "a2", "sparkform_data.b": "b1", "sparkform_data.d": "d1"} {
		if objs[addr] == nil {
			t.Fatalf("%s not loaded", addr)
		}
		if got := objs[addr].Value.GetAttr("id"); !got.RawEquals(cty.StringVal(want)) {
			t.Errorf("%s id = %#v, want %q", addr, got, want)
		}
	}
	if len(objs) != 3 {
		t.Errorf("loaded %d objects, want 3", len(objs))
	}
	if !sameData(objs["sparkform_data.b"].Value, pre["sparkform_data.b"]) {
		t.Error("the unchanged record was decoded again, not taken from the preload")
	}
	if sameData(objs["sparkform_data.a"].Value, pre["sparkform_data.a"]) {
		t.Error("the changed record kept the preloaded value")
	}
	// The stored bytes are the locked read's: what a write compares with.
	if d := e.storedValue("sparkform_data.a", objs["sparkform_data.a"].Value); d == nil {
		t.Error("no stored bytes for the changed record")
	}

	// After the plan's read a preload changes nothing.
	e.PreloadState(s)
	if got := e.values["sparkform_data.a"].v; !sameData(got, objs["sparkform_data.a"].Value) {
		t.Error("a preload after the read replaced its values")
	}
}

// reach takes the nodes in their order, Parallelism at a time: the first
// ones (those the CLI starts dialling early, NodesFromVariables' first
// Parallelism) are checked first and hold the slots until they are done;
// each later node starts only as one before it finishes.
func TestReachTakesNodesInOrder(t *testing.T) {
	const n, par = 16, 3
	nodes := make([]sdk.Node, n)
	for i := range nodes {
		nodes[i] = sdk.Node{Name: fmt.Sprintf("node.n[%02d]", i), Host: fmt.Sprintf("10.0.0.%d", i+1)}
	}
	started := make(chan string, n)
	release := map[string]chan struct{}{}
	for _, nd := range nodes {
		release[nd.Name] = make(chan struct{})
	}
	e := New(Options{Parallelism: par, NodeCheck: func(_ context.Context, nd sdk.Node) error {
		started <- nd.Name
		<-release[nd.Name]
		return nil
	}})
	done := make(chan []error)
	go func() { done <- e.reach(t.Context(), nodes) }()
	first := map[string]bool{}
	for range par {
		first[<-started] = true
	}
	for _, nd := range nodes[:par] {
		if !first[nd.Name] {
			t.Fatalf("first checks %v, want the first %d nodes", first, par)
		}
	}
	for i := par; i < n; i++ {
		close(release[nodes[i-par].Name])
		if got := <-started; got != nodes[i].Name {
			t.Fatalf("after %s finished, %s started, want %s", nodes[i-par].Name, got, nodes[i].Name)
		}
	}
	for _, nd := range nodes[n-par:] {
		close(release[nd.Name])
	}
	for i, err := range <-done {
		if err != nil {
			t.Errorf("%s: %v", nodes[i].Name, err)
		}
	}
}
