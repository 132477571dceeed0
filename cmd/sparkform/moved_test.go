package main

import (
	"testing"
)

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
