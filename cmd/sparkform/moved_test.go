package main

import (
	"testing"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
)

// TestMovedAddressKeysWithHash: a moved block of a resource moves its
// instances whose keys hold '#' too, and leaves a deposed object where it
// is. Before, any '#' in an address kept it from moving: the plan then
// destroyed those instances and created them again under the new name.
func TestMovedAddressKeysWithHash(t *testing.T) {
	from := addrs.Resource{Type: "sparkform_data", Name: "a"}
	to := addrs.Resource{Type: "sparkform_data", Name: "b"}
	mv := &config.Moved{From: addrs.Target{Resource: &from}, To: addrs.Target{Resource: &to}}
	for _, tc := range []struct {
		addr, want string
		ok         bool
	}{
		{`sparkform_data.a["llama#2"]`, `sparkform_data.b["llama#2"]`, true},
		{`sparkform_data.a["#deposed"]`, `sparkform_data.b["#deposed"]`, true},
		{`sparkform_data.a[3]`, `sparkform_data.b[3]`, true},
		{`sparkform_data.a`, `sparkform_data.b`, true},
		{`sparkform_data.a["x"]#deposed`, ``, false},
		{`sparkform_data.ab["x#y"]`, ``, false},
	} {
		got, ok := movedAddress(tc.addr, mv, targetString(mv.From), targetString(mv.To))
		if got != tc.want || ok != tc.ok {
			t.Errorf("movedAddress(%s) = %q, %v; want %q, %v", tc.addr, got, ok, tc.want, tc.ok)
		}
	}
}

// TestNameOfKeysWithHash: the resource name of a module instance address
// whose keys hold '#' (the plan's rendering groups instances by it).
// Before, the address was cut at its first '#' and read as the module's
// name.
func TestNameOfKeysWithHash(t *testing.T) {
	for addr, want := range map[string]string{
		`module.m["llama#2"].sparkform_data.t["a#b"]`:         "t",
		`module.m["llama#2"].sparkform_data.t["a#b"]#deposed`: "t",
		`module.m["x"].module.n["#"].node_command.step`:       "step",
		`sparkform_data.t["a#b"]`:                             "t",
	} {
		if got := nameOf(addr); got != want {
			t.Errorf("nameOf(%s) = %q; want %q", addr, got, want)
		}
	}
}
