package plugin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// selfExe is the test plugin built once by TestMain; pluginDir holds it
// under the external plugin names.
var selfExe, pluginDir string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "plugintest")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		selfExe = filepath.Join(dir, "sparkform")
		build := exec.Command("go", "build", "-o", selfExe, "./testdata/testplugin")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building the test plugin: %v\n%s", err, out)
			return 1
		}
		pluginDir = filepath.Join(dir, "plugins")
		if err := os.Mkdir(pluginDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, name := range []string{"crashy", "slow", "broken", "batch", "oldproto"} {
			if err := os.Symlink(selfExe, filepath.Join(pluginDir, ExecPrefix+name)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return m.Run()
	}())
}

func newHost(t testing.TB, log hclog.Logger) *Host {
	h := NewHost(Options{SelfExe: selfExe, Builtins: []string{"sparkform"}, PluginDirs: []string{t.TempDir(), pluginDir}, Logger: log})
	t.Cleanup(h.Close)
	return h
}

// startLog makes every plugin start append its name to a file and returns
// a function that reads the names.
func startLog(t *testing.T) func() []string {
	path := filepath.Join(t.TempDir(), "starts")
	t.Setenv("TESTPLUGIN_LOG", path)
	return func() []string {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

var local = sdk.Node{Name: "node.local", Transport: "local"}

// The built-in provider runs as `SelfExe internal-plugin sparkform`, and a
// create/read cycle costs exactly one RPC per step (the schema is cached).
func TestBuiltinThroughRealProcess(t *testing.T) {
	h := newHost(t, nil)
	ctx := context.Background()
	s, err := h.Schema(ctx, "sparkform")
	if err != nil {
		t.Fatal(err)
	}
	rs := s.ResourceTypes["sparkform_data"]
	if rs == nil || !rs.Block.Attributes["triggers_replace"].ForceNew {
		t.Fatalf("schema %+v lacks sparkform_data with a force-new triggers_replace", s.ResourceTypes)
	}
	p, err := h.Provider(ctx, "sparkform")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sdktest.Object(t, rs.Block, map[string]cty.Value{"input": cty.MapVal(map[string]cty.Value{"a": cty.StringVal("b")})})
	state, _ := sdktest.Create(t, p, "sparkform_data", local, cfg)
	if got := state.GetAttr("output"); !got.RawEquals(cfg.GetAttr("input")) {
		t.Errorf("output = %#v", got)
	}
	if _, err := h.Schema(ctx, "sparkform"); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]int64{"sparkform": {"GetSchema": 1, "PlanResourceChanges": 1, "PlanResourceChanges messages": 1,
		"PlanResourceChanges items": 1, "ApplyResourceChanges": 1, "ApplyResourceChanges messages": 1, "ApplyResourceChanges items": 1, "ReadResources": 1}}
	if got := h.Stats(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Stats = %v; want %v", got, want)
	}
}

// A provider that is not asked for is never started, and one asked for by
// many goroutines at once starts once.
func TestLazyStart(t *testing.T) {
	starts := startLog(t)
	h := newHost(t, nil)
	if got := starts(); len(got) != 0 {
		t.Fatalf("started %v before anything was asked for", got)
	}
	var wg sync.WaitGroup
	provs := make([]sdk.Provider, 8)
	for i := range provs {
		wg.Go(func() {
			p, err := h.Provider(context.Background(), "sparkform")
			if err != nil {
				t.Error(err)
			}
			provs[i] = p
		})
	}
	wg.Wait()
	for _, p := range provs[1:] {
		if p != provs[0] {
			t.Error("concurrent callers got different providers")
		}
	}
	if got := starts(); fmt.Sprint(got) != "[sparkform]" {
		t.Errorf("started %v; want [sparkform] only", got)
	}
	if got := h.Stats(); len(got) != 1 || got["sparkform"] == nil {
		t.Errorf("Stats = %v; want only sparkform", got)
	}
}

func TestUnknownProvider(t *testing.T) {
	h := newHost(t, nil)
	notExec := filepath.Join(h.opts.PluginDirs[0], ExecPrefix+"noexec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want []string
	}{
		{"nosuch", []string{`unknown provider "nosuch"`, "built-ins: sparkform", ExecPrefix + "nosuch", h.opts.PluginDirs[0], pluginDir}},
		{"noexec", []string{`unknown provider "noexec"`, notExec, "not an executable"}},
		{"../evil", []string{`unknown provider "../evil"`, "lower-case letters"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.Provider(context.Background(), tc.name)
			if !errors.Is(err, ErrUnknownProvider) {
				t.Fatalf("err = %v; want ErrUnknownProvider", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	if _, err := NewHost(Options{Builtins: []string{"sparkform"}}).Provider(context.Background(), "sparkform"); err == nil || !strings.Contains(err.Error(), "SelfExe") {
		t.Errorf("a built-in without SelfExe: %v", err)
	}
}

func TestPluginFailsToStart(t *testing.T) {
	h := newHost(t, nil)
	_, err := h.Provider(context.Background(), "broken")
	if !errors.Is(err, ErrPluginStart) || !strings.Contains(err.Error(), "/etc/broken.conf is missing") {
		t.Fatalf("err = %v; want ErrPluginStart quoting the plugin's stderr", err)
	}
}

// syncBuffer is a log sink safe for the plugin's logging goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func thing(name string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(name), "id": cty.UnknownVal(cty.String)})
}

var nullThing = cty.NullVal(cty.Object(map[string]cty.Type{"name": cty.String, "id": cty.String}))

// A plugin that dies mid-apply: the diagnostic names the provider, the
// operation and the instance and quotes the plugin's stderr; the log got
// the stderr too; later calls report the same crash.
func TestCrashMidApply(t *testing.T) {
	var logs syncBuffer
	h := newHost(t, hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug}))
	p, err := h.Provider(context.Background(), "crashy")
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{
		TypeName: "crashy_thing", Address: `crashy_thing.x["a"]`, Node: local, Prior: nullThing, Planned: thing("a"),
	}, func(ev sdk.Progress) { events = append(events, ev.Message) })
	if fmt.Sprint(events) != "[about to crash]" {
		t.Errorf("progress events %v; want [about to crash]", events)
	}
	if !resp.NewState.RawEquals(nullThing) {
		t.Errorf("state after the crash = %#v; want the prior (null)", resp.NewState)
	}
	if !resp.OutcomeUnknown {
		t.Errorf("a crash mid-apply is not flagged OutcomeUnknown: the engine would take the prior as the result")
	}
	if len(resp.Diagnostics) != 1 {
		t.Fatalf("diagnostics %v; want one", resp.Diagnostics)
	}
	d := resp.Diagnostics[0]
	t.Logf("%s\n%s", d.Summary, d.Detail)
	if d.Severity != sdk.Error || d.Summary != `Provider "crashy" crashed` {
		t.Errorf("summary %q", d.Summary)
	}
	for _, w := range []string{"ApplyResourceChange", `crashy_thing.x["a"]`, `panic: crashy: boom while applying crashy_thing.x["a"]`} {
		if !strings.Contains(d.Detail, w) {
			t.Errorf("detail does not mention %q:\n%s", w, d.Detail)
		}
	}
	if !strings.Contains(logs.String(), "boom while applying") {
		t.Errorf("the plugin's stderr did not reach the log:\n%s", logs.String())
	}
	plan := p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: "crashy_thing", Address: "crashy_thing.y", Prior: nullThing, Config: thing("b"), Proposed: thing("b")})
	if !plan.Diagnostics.HasErrors() || plan.Diagnostics[0].Summary != `Provider "crashy" crashed` || !strings.Contains(plan.Diagnostics[0].Detail, "crashy_thing.y") {
		t.Errorf("a call after the crash: %v", plan.Diagnostics)
	}
}

// applySlow runs an apply of slow_thing in the background and returns
// once the provider reported that it started.
func applySlow(t *testing.T, ctx context.Context, p sdk.Provider) <-chan sdk.ApplyResponse {
	started := make(chan struct{})
	var once sync.Once
	done := make(chan sdk.ApplyResponse, 1)
	go func() {
		done <- p.ApplyResourceChange(ctx, sdk.ApplyRequest{TypeName: "slow_thing", Address: "slow_thing.x", Prior: nullThing, Planned: thing("a")},
			func(sdk.Progress) { once.Do(func() { close(started) }) })
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("apply ended before it started: %v", r.Diagnostics)
	case <-time.After(30 * time.Second):
		t.Fatal("no progress from slow_thing")
	}
	return done
}

func waitApply(t *testing.T, done <-chan sdk.ApplyResponse) sdk.ApplyResponse {
	select {
	case r := <-done:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("apply did not end")
		return sdk.ApplyResponse{}
	}
}

// Host.Stop reaches the provider's Stop in the plugin process.
func TestStopReachesPlugin(t *testing.T) {
	h := newHost(t, nil)
	p, err := h.Provider(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	done := applySlow(t, context.Background(), p)
	h.Stop(context.Background())
	r := waitApply(t, done)
	if !r.Diagnostics.HasErrors() || r.Diagnostics[0].Summary != "Interrupted" {
		t.Errorf("diags %v; want the provider's Interrupted", r.Diagnostics)
	}
	if got := h.Stats()["slow"]["Stop"]; got != 1 {
		t.Errorf("Stop RPCs = %d; want 1", got)
	}
}

// Cancelling the engine's ctx ends the call and the plugin keeps serving.
func TestCancelThroughRealProcess(t *testing.T) {
	notes := startLog(t)
	h := newHost(t, nil)
	p, err := h.Provider(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := applySlow(t, ctx, p)
	cancel()
	r := waitApply(t, done)
	if !r.Diagnostics.HasErrors() || r.Diagnostics[0].Summary != "Cancelled" || !strings.Contains(r.Diagnostics[0].Detail, "slow_thing.x") {
		t.Errorf("diags %v; want Cancelled naming slow_thing.x", r.Diagnostics)
	}
	// The provider's own ctx was cancelled in the plugin process.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := notes()
		if slices.Contains(got, "slow-saw-context canceled") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugin's apply never saw the cancellation; notes: %v", got)
		}
	}
	plan := p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: "slow_thing", Address: "slow_thing.y", Prior: nullThing, Config: thing("b"), Proposed: thing("b")})
	if plan.Diagnostics.HasErrors() {
		t.Errorf("plan after a cancelled apply: %v", plan.Diagnostics)
	}
}

// Close kills every plugin process; the host starts nothing afterwards.
func TestCloseKillsPlugins(t *testing.T) {
	h := newHost(t, nil)
	var pids []int
	for _, name := range []string{"sparkform", "slow"} {
		if _, err := h.Provider(context.Background(), name); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, h.plugins[name].proc.client.ReattachConfig().Pid)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("plugin pid %d not running before Close: %v", pid, err)
		}
	}
	h.Close()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("plugin pid %d after Close: kill -0 gives %v; want ESRCH", pid, err)
		}
	}
	if _, err := h.Provider(context.Background(), "sparkform"); !errors.Is(err, ErrClosed) {
		t.Errorf("Provider after Close: %v; want ErrClosed", err)
	}
}

func TestRing(t *testing.T) {
	r := newRing(32)
	fmt.Fprint(r, "first line\nsecond\n")
	fmt.Fprint(r, "third line\n")
	if got := r.Tail(); got != "first line\nsecond\nthird line" {
		t.Errorf("Tail before wrapping = %q", got)
	}
	fmt.Fprint(r, "fourth\n") // wraps inside "first line": that fragment is dropped
	if got := r.Tail(); got != "second\nthird line\nfourth" {
		t.Errorf("Tail after wrapping = %q", got)
	}
	fmt.Fprint(r, strings.Repeat("x", 40))
	if got := r.Tail(); got != strings.Repeat("x", 32) {
		t.Errorf("Tail after a long write = %q", got)
	}
}

func benchData(b *testing.B) (sdk.Provider, *sdk.Block) {
	h := newHost(b, nil)
	s, err := h.Schema(context.Background(), "sparkform")
	if err != nil {
		b.Fatal(err)
	}
	p, _ := h.Provider(context.Background(), "sparkform")
	return p, s.ResourceTypes["sparkform_data"].Block
}

// BenchmarkPluginPlan is one PlanResourceChange of sparkform_data through
// the real plugin process.
func BenchmarkPluginPlan(b *testing.B) {
	p, blk := benchData(b)
	null := cty.NullVal(blk.ImpliedType())
	cfg := sdktest.Object(b, blk, map[string]cty.Value{"input": cty.StringVal("abc")})
	req := sdk.PlanRequest{TypeName: "sparkform_data", Address: "sparkform_data.x", Node: local, Prior: null, Config: cfg, Proposed: sdk.ProposedNew(blk, null, cfg)}
	b.ReportAllocs()
	for b.Loop() {
		if r := p.PlanResourceChange(context.Background(), req); r.Diagnostics.HasErrors() {
			b.Fatal(r.Diagnostics.Err())
		}
	}
}

// BenchmarkPluginRead1000 is one batched ReadResources of 1,000
// sparkform_data instances through the real plugin process.
func BenchmarkPluginRead1000(b *testing.B) {
	p, blk := benchData(b)
	items := make([]sdk.ReadItem, 1000)
	for i := range items {
		items[i] = sdk.ReadItem{TypeName: "sparkform_data", Address: fmt.Sprintf("sparkform_data.x[%d]", i),
			Prior: sdktest.Object(b, blk, map[string]cty.Value{
				"input": cty.StringVal(fmt.Sprint("value-", i)), "output": cty.StringVal(fmt.Sprint("value-", i)),
				"id": cty.StringVal(fmt.Sprintf("%016x", i)),
			})}
	}
	req := sdk.ReadRequest{Node: local, Resources: items}
	b.ReportAllocs()
	for b.Loop() {
		if r := p.ReadResources(context.Background(), req); r.Diagnostics.HasErrors() || len(r.Results) != 1000 {
			b.Fatal(r.Diagnostics.Err())
		}
	}
}

// A plugin whose engine is killed with SIGKILL (no chance to Close) exits
// on its own instead of lingering as an orphan.
func TestPluginExitsWhenEngineIsKilled(t *testing.T) {
	// A stand-in engine: a shell that starts the plugin, prints its pid,
	// and waits; the plugin's handshake line shares the shell's stdout.
	cmd := exec.Command("sh", "-c", `"$0" internal-plugin sparkform & echo "pid=$!"; wait`, selfExe)
	sockDir := filepath.Join(t.TempDir(), sdk.SocketDirPrefix+"engine-killed")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), sdk.Handshake.MagicCookieKey+"="+sdk.Handshake.MagicCookieValue, goplugin.EnvUnixSocketDir+"="+sockDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid, serving := 0, false
	sc := bufio.NewScanner(out)
	for (pid == 0 || !serving) && sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pid="); ok {
			pid, _ = strconv.Atoi(p)
		}
		serving = serving || strings.Contains(line, "|grpc")
	}
	if pid == 0 || !serving {
		_ = cmd.Process.Kill()
		t.Fatalf("plugin did not start (pid %d, serving %v): %v", pid, serving, sc.Err())
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for deadline := time.Now().Add(15 * time.Second); alive(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("plugin pid %d still runs 15s after its engine was killed", pid)
		}
	}
	// The orphan took its socket with it (issue 11, point 6: 614
	// /tmp/plugin* sockets after a run with killed engines).
	if _, err := os.Stat(sockDir); !errors.Is(err, os.ErrNotExist) {
		ents, _ := os.ReadDir(sockDir)
		t.Errorf("the plugin's socket folder is still there (%v), holding %d entries", err, len(ents))
	}
}

// TestPluginOrphanedBeforeItLooks: a plugin whose engine is gone before
// the plugin reads its parent (the shell below exits at once) leaves too.
// It read its parent inside the watching goroutine, which under load ran
// after the orphaning, and then watched init forever
// (TestPluginExitsWhenEngineIsKilled failed so in a loaded make test).
// Where orphans go to init, the plugin is started without the engine's
// pid, as an older engine would: it must tell from its parent alone.
// Where a subreaper takes them, a parent alone cannot tell, so the shell
// passes its pid (ParentPIDEnv) as the engine does: the same early
// orphan, found through the pid.
func TestPluginOrphanedBeforeItLooks(t *testing.T) {
	start := `"$0" internal-plugin sparkform >/dev/null 2>&1 </dev/null & echo $! > "$1"`
	if reaper := orphanReaper(t); reaper != 1 {
		t.Logf("orphans here go to pid %d (a subreaper): the plugin gets its engine's pid", reaper)
		start = sdk.ParentPIDEnv + `=$$ ` + start
	}
	sockDir := filepath.Join(t.TempDir(), sdk.SocketDirPrefix+"orphaned-early")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("sh", "-c", start, selfExe, pidFile)
	cmd.Env = append(os.Environ(), sdk.Handshake.MagicCookieKey+"="+sdk.Handshake.MagicCookieValue, goplugin.EnvUnixSocketDir+"="+sockDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); alive(pid); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("plugin pid %d, orphaned before it looked, still runs 15s later", pid)
		}
	}
	if _, err := os.Stat(sockDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plugin's socket folder is still there (%v)", err)
	}
}

// orphanReaper is the pid that an orphaned process of this test gets as
// its parent. (Output returns once the orphan, which holds the pipe,
// has written and exited.)
func orphanReaper(t *testing.T) int {
	t.Helper()
	out, err := exec.Command("sh", "-c", `sh -c 'sleep 0.3; grep ^PPid: /proc/$$/status' & exit`).Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "PPid:")))
	if err != nil {
		t.Fatalf("the orphan's parent: %q: %v", out, err)
	}
	return pid
}

// Every plugin socket lives in a folder of its own under TMPDIR, and
// Close leaves none behind, nor does a plugin killed by a signal.
func TestNoSocketsLeftBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	h := NewHost(Options{SelfExe: selfExe, Builtins: []string{"sparkform"}, PluginDirs: []string{pluginDir}})
	for _, name := range []string{"sparkform", "slow"} {
		if _, err := h.Provider(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, sdk.SocketDirPrefix+"*"))
	socks, _ := filepath.Glob(filepath.Join(tmp, sdk.SocketDirPrefix+"*", "plugin*"))
	if len(dirs) != 2 || len(socks) != 2 {
		t.Errorf("running plugins: socket folders %v, sockets %v; want one of each per plugin", dirs, socks)
	}
	h.Close()
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("after Close, TMPDIR holds %v", left[0].Name())
	}
}

// alive reports whether pid runs (a zombie nobody reaped has exited).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// A plugin killed by a signal in the middle of a call (issue 11, point 5):
// the diagnostic says it was killed and by which signal, not that the
// provider has a bug.
func TestKilledPluginSaysKilled(t *testing.T) {
	starts := startLog(t)
	h := newHost(t, nil)
	p, err := h.Provider(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	done := applySlow(t, context.Background(), p)
	pid := 0
	for _, l := range starts() {
		fmt.Sscanf(l, "slow-pid %d", &pid)
	}
	if pid == 0 {
		t.Fatalf("the slow plugin did not note its pid: %v", starts())
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
	for _, w := range []string{fmt.Sprintf("(pid %d) was killed by signal SIGKILL (killed, 9)", pid), "ApplyResourceChange of slow_thing.x"} {
		if !strings.Contains(d.Detail, w) {
			t.Errorf("detail does not say %q", w)
		}
	}
	if strings.Contains(d.Detail, "bug in the provider") {
		t.Errorf("a killed plugin is blamed as a provider bug:\n%s", d.Detail)
	}
}

// A TMPDIR so deep that a socket in it would pass the kernel's limit on
// socket paths (testscript's $WORK/.tmp can be): the plugin still starts,
// its socket folder under /tmp instead.
func TestDeepTmpdirStillStarts(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 30))
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", deep)
	h := newHost(t, nil)
	if _, err := h.Provider(context.Background(), "sparkform"); err != nil {
		t.Fatalf("plugin with TMPDIR %d bytes deep: %v", len(deep), err)
	}
}
