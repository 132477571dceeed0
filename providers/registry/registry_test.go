package registry

import (
	"slices"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
)

// Every built-in builds a provider, on a shared pool where it takes one;
// the plugin host is told the right split between plugins and in-process.
func TestBuiltins(t *testing.T) {
	for _, name := range Names() {
		b, _ := Lookup(name)
		if b.New() == nil {
			t.Errorf("%s: New built no provider", name)
		}
		if b.NewWithPool != nil && b.NewWithPool(node.NewPool()) == nil {
			t.Errorf("%s: NewWithPool built no provider", name)
		}
		if inPlugin, inProc := slices.Contains(PluginNames(), name), InProcess()[name] != nil; inPlugin == inProc {
			t.Errorf("%s: served as a plugin %v, in process %v: want exactly one", name, inPlugin, inProc)
		}
	}
	if got := Names(); !slices.Equal(got, []string{"docker", "gitkit", "hubstage", "kmod", "node", "sparkform"}) {
		t.Errorf("Names() = %v", got)
	}
	if f := Frames()["gitkit"]; !strings.HasSuffix(f, "/providers/gitkit.") {
		t.Errorf("Frames()[gitkit] = %q", f)
	}
	if err := Serve([]string{"nosuch"}, node.Options{}); err == nil || !strings.Contains(err.Error(), `no built-in provider "nosuch"`) {
		t.Errorf("Serve(nosuch) = %v", err)
	}
}
