package plugin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// sharedHost has three built-ins, which one process serves.
func sharedHost(t *testing.T, frames map[string]string) *Host {
	h := NewHost(Options{SelfExe: selfExe, Builtins: []string{"sparkform", "slow", "crashy"}, BuiltinFrames: frames,
		PluginDirs: []string{pluginDir}})
	t.Cleanup(h.Close)
	return h
}

// Built-in providers share one plugin process, started when the first is
// asked for; each is still its own provider, with its own calls counted.
func TestBuiltinsShareOneProcess(t *testing.T) {
	starts := startLog(t)
	h := sharedHost(t, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, name := range []string{"sparkform", "slow", "sparkform", "slow"} {
		wg.Go(func() {
			if _, err := h.Schema(ctx, name); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := starts(); fmt.Sprint(got) != "[crashy+slow+sparkform]" {
		t.Fatalf("started %v; want one process for the three built-ins", got)
	}
	if h.plugins["sparkform"].proc != h.plugins["slow"].proc {
		t.Error("sparkform and slow run in different processes")
	}
	// The external batch provider still runs on its own.
	if _, err := h.Schema(ctx, "batch"); err != nil {
		t.Fatal(err)
	}
	if got := starts(); fmt.Sprint(got) != "[crashy+slow+sparkform batch]" {
		t.Errorf("started %v; want the shared process and batch", got)
	}
	p, err := h.Provider(ctx, "sparkform")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := h.Schema(ctx, "sparkform")
	rs := s.ResourceTypes["sparkform_data"]
	cfg := sdktest.Object(t, rs.Block, map[string]cty.Value{"input": cty.MapVal(map[string]cty.Value{"a": cty.StringVal("b")})})
	state, _ := sdktest.Create(t, p, "sparkform_data", local, cfg)
	if got := state.GetAttr("output"); !got.RawEquals(cfg.GetAttr("input")) {
		t.Errorf("output = %#v", got)
	}
	if s, _ := h.Schema(ctx, "slow"); s.ResourceTypes["slow_thing"] == nil || s.ResourceTypes["sparkform_data"] != nil {
		t.Errorf("slow's schema is not slow's: %v", s.ResourceTypes)
	}
	want := map[string]map[string]int64{
		"sparkform": {"GetSchema": 1, "PlanResourceChanges": 1, "PlanResourceChanges messages": 1, "PlanResourceChanges items": 1,
			"ApplyResourceChanges": 1, "ApplyResourceChanges messages": 1, "ApplyResourceChanges items": 1, "ReadResources": 1},
		"slow":  {"GetSchema": 1},
		"batch": {"GetSchema": 1},
	}
	if got := h.Stats(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Stats = %v; want %v", got, want)
	}
}

// When one built-in panics, the shared process ends for all: a call of
// another built-in that was in flight says which provider crashed (found
// in the panic's stack) and that the process was shared.
func TestSharedProcessCrashNamesCulprit(t *testing.T) {
	h := sharedHost(t, map[string]string{"crashy": "main.crashy.", "slow": "main.slow.", "sparkform": "github.com/sparkform/sparkform/providers/builtin."})
	ctx := context.Background()
	slowP, err := h.Provider(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	done := applySlow(t, ctx, slowP)
	crashyP, err := h.Provider(ctx, "crashy")
	if err != nil {
		t.Fatal(err)
	}
	cr := crashyP.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: "crashy_thing", Address: "crashy_thing.x", Node: local, Prior: nullThing, Planned: thing("a")},
		func(sdk.Progress) {})
	sr := waitApply(t, done)
	for _, c := range []struct {
		what string
		resp sdk.ApplyResponse
		want []string
	}{
		{"crashy's own call", cr, []string{"ApplyResourceChange of crashy_thing.x", `crashy_thing.x (provider "crashy")`, `Provider "crashy" panicked`, "panic: crashy: boom"}},
		{"slow's call in flight", sr, []string{"ApplyResourceChange of slow_thing.x", `slow_thing.x (provider "slow")`, `Provider "crashy" panicked`, "crashy, slow, sparkform"}},
	} {
		if len(c.resp.Diagnostics) != 1 {
			t.Fatalf("%s: diagnostics %v; want one", c.what, c.resp.Diagnostics)
		}
		d := c.resp.Diagnostics[0]
		t.Logf("%s: %s\n%s", c.what, d.Summary, d.Detail)
		if d.Summary != `Provider "crashy" crashed` {
			t.Errorf("%s: summary %q", c.what, d.Summary)
		}
		for _, w := range c.want {
			if !strings.Contains(d.Detail, w) {
				t.Errorf("%s: detail does not say %q", c.what, w)
			}
		}
	}
}

// A kill of the shared process is reported by each provider whose call
// it ended, as a kill, not a bug.
func TestSharedProcessKilled(t *testing.T) {
	starts := startLog(t)
	h := sharedHost(t, nil)
	p, err := h.Provider(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	done := applySlow(t, context.Background(), p)
	pid := 0
	for _, l := range starts() {
		fmt.Sscanf(l, "slow-pid %d", &pid)
	}
	if pid == 0 || pid != h.plugins["slow"].proc.client.ReattachConfig().Pid {
		t.Fatalf("slow's pid %d is not the shared process's: %v", pid, starts())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := waitApply(t, done)
	if len(r.Diagnostics) == 0 {
		t.Fatal("no diagnostic after the plugin was killed")
	}
	d := r.Diagnostics[0]
	t.Logf("%s\n%s", d.Summary, d.Detail)
	if d.Summary != `Provider "slow" was killed` {
		t.Errorf("summary %q", d.Summary)
	}
	for _, w := range []string{fmt.Sprintf(`The shared plugin process of the built-in providers crashy, slow, sparkform (pid %d) was killed by signal SIGKILL (killed, 9) during ApplyResourceChange of slow_thing.x (provider "slow")`, pid)} {
		if !strings.Contains(d.Detail, w) {
			t.Errorf("detail does not say %q", w)
		}
	}
	if strings.Contains(d.Detail, "bug in") {
		t.Errorf("a killed plugin is blamed as a bug:\n%s", d.Detail)
	}
}
