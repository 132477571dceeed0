package command_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/command"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

const typ = command.TypeCommand

// testNode is a node the tests run on, with a folder on it they may use.
type testNode struct {
	name string
	node sdk.Node
	dir  string
	conn node.Conn
}

// testNodes: the local node and a real sshd node (internal/testbed)
// logged in as a non-root user with passwordless sudo.
func testNodes(t *testing.T) []testNode {
	t.Helper()
	pool := node.NewPool()
	t.Cleanup(func() { pool.Close() })
	local := t.TempDir()
	nodes := []testNode{{name: "local", node: sdk.Node{Name: "node.local", Transport: "local"}, dir: local}}
	bed := testbed.StartT(t, 1)
	for _, bn := range bed.Nodes {
		nodes = append(nodes, testNode{name: "sshd-" + bn.Name, node: bn.SDK(), dir: bn.Root})
	}
	for i := range nodes {
		c, err := pool.Get(context.Background(), nodes[i].node)
		if err != nil {
			t.Fatalf("node %s: %v", nodes[i].name, err)
		}
		nodes[i].conn = c
	}
	return nodes
}

func (n testNode) exists(path string) bool {
	_, err := n.conn.Lstat(context.Background(), path)
	return err == nil
}

func (n testNode) read(t *testing.T, path string) string {
	t.Helper()
	b, err := n.conn.ReadFile(context.Background(), path)
	if err != nil {
		t.Fatalf("on %s: %v", n.name, err)
	}
	return string(b)
}

func providers(t *testing.T) map[string]sdk.Provider {
	return map[string]sdk.Provider{"direct": command.New(), "grpc": sdktest.GRPC(t, command.New())}
}

func strs(ss ...string) cty.Value {
	vs := make([]cty.Value, len(ss))
	for i, s := range ss {
		vs[i] = cty.StringVal(s)
	}
	return cty.ListVal(vs)
}

func cfg(t *testing.T, p sdk.Provider, attrs map[string]cty.Value) cty.Value {
	t.Helper()
	return sdktest.Object(t, sdktest.Schema(t, p, typ).Block, attrs)
}

func hasWarning(ds sdk.Diagnostics, summary string) bool {
	for _, d := range ds {
		if d.Severity == sdk.Warning && d.Summary == summary {
			return true
		}
	}
	return false
}

// TestLifecycle: create makes the thing, the check sees it, removing it on
// the node is drift (read null, planned as a create), a change to create
// runs update in place (same id), destroy runs destroy.
func TestLifecycle(t *testing.T) {
	for _, n := range testNodes(t) {
		for pname, p := range providers(t) {
			t.Run(n.name+"/"+pname, func(t *testing.T) {
				dir := filepath.Join(n.dir, "lc-"+pname)
				marker := filepath.Join(dir, "made")
				c := cfg(t, p, map[string]cty.Value{
					"create":  strs("sh", "-c", `mkdir -p "$1" && printf v1 > "$1/made" && echo created`, "sh", dir),
					"update":  strs("sh", "-c", `printf v2 > "$1/made"`, "sh", dir),
					"check":   strs("test", "-f", marker),
					"destroy": strs("rm", "-rf", dir),
				})
				plan := sdktest.Plan(t, p, typ, n.node, cty.NilVal, nil, c)
				if hasWarning(plan.Diagnostics, "Drift cannot be seen") {
					t.Errorf("a command with a check warns: %v", plan.Diagnostics)
				}
				st, priv := sdktest.Create(t, p, typ, n.node, c)
				if got := n.read(t, marker); got != "v1" {
					t.Fatalf("marker = %q", got)
				}
				if got := st.GetAttr("stdout").AsString(); got != "created\n" {
					t.Errorf("stdout = %q", got)
				}
				if got := st.GetAttr("timeout").AsString(); got != "10m0s" {
					t.Errorf("default timeout = %q", got)
				}
				id := st.GetAttr("id").AsString()

				// No change: the plan is the prior value.
				if pl := sdktest.Plan(t, p, typ, n.node, st, priv, c); !pl.Planned.RawEquals(st) || len(pl.RequiresReplace) > 0 {
					t.Errorf("no-op plan changed: %#v", pl)
				}

				// Drift: the marker is removed on the node.
				if err := n.conn.Remove(context.Background(), marker); err != nil {
					t.Fatal(err)
				}
				if r := sdktest.Read(t, p, typ, n.node, st, priv); !r.NewState.IsNull() {
					t.Fatalf("read after removal = %#v; want null (gone)", r.NewState)
				}
				st, priv = sdktest.Create(t, p, typ, n.node, c)
				if st.GetAttr("id").AsString() == id {
					t.Errorf("a re-create kept the old id")
				}
				id = st.GetAttr("id").AsString()

				// create changes, update is given: in place, same id.
				c2 := cfg(t, p, map[string]cty.Value{
					"create":  strs("sh", "-c", `mkdir -p "$1" && printf v2 > "$1/made"`, "sh", dir),
					"update":  strs("sh", "-c", `printf v2 > "$1/made"`, "sh", dir),
					"check":   strs("test", "-f", marker),
					"destroy": strs("rm", "-rf", dir),
				})
				pl := sdktest.Plan(t, p, typ, n.node, st, priv, c2)
				if len(pl.RequiresReplace) != 0 {
					t.Fatalf("with update, a create change replaces: %v", pl.RequiresReplace)
				}
				up, _ := sdktest.Apply(t, p, typ, n.node, st, pl.Planned, c2, pl.PlannedPrivate)
				if got := n.read(t, marker); got != "v2" {
					t.Errorf("after update marker = %q", got)
				}
				if got := up.NewState.GetAttr("id").AsString(); got != id {
					t.Errorf("an update changed the id: %q -> %q", id, got)
				}
				st = up.NewState

				// Only destroy changes: stored, nothing runs.
				c3 := cfg(t, p, map[string]cty.Value{
					"create":  strs("sh", "-c", `mkdir -p "$1" && printf v2 > "$1/made"`, "sh", dir),
					"update":  strs("sh", "-c", `printf v2 > "$1/made"`, "sh", dir),
					"check":   strs("test", "-f", marker),
					"destroy": strs("rm", "-r", "-f", "--", dir),
				})
				pl = sdktest.Plan(t, p, typ, n.node, st, nil, c3)
				if len(pl.RequiresReplace) != 0 || !pl.Planned.GetAttr("stdout").IsKnown() {
					t.Errorf("a destroy change should be stored in place: %#v", pl)
				}
				if err := n.conn.WriteFile(context.Background(), marker, []byte("mine"), 0o644); err != nil {
					t.Fatal(err)
				}
				up, _ = sdktest.Apply(t, p, typ, n.node, st, pl.Planned, c3, nil)
				if got := n.read(t, marker); got != "mine" {
					t.Errorf("a destroy-only change ran a command: marker = %q", got)
				}

				// Without update, a create change replaces.
				c4 := cfg(t, p, map[string]cty.Value{
					"create": strs("sh", "-c", `mkdir -p "$1"`, "sh", dir),
				})
				pl = sdktest.Plan(t, p, typ, n.node, up.NewState, nil, c4)
				if len(pl.RequiresReplace) == 0 || pl.Planned.GetAttr("id").IsKnown() {
					t.Errorf("without update a create change must replace: %#v", pl)
				}

				sdktest.Destroy(t, p, typ, n.node, up.NewState, nil)
				if n.exists(dir) {
					t.Errorf("destroy left %s", dir)
				}
			})
		}
	}
}

// TestNoCheckWarns: without a check the plan says drift cannot be seen,
// and Read reports the stored value without touching the node.
func TestNoCheckWarns(t *testing.T) {
	p := command.New()
	n := sdk.Node{Name: "node.local", Transport: "local"}
	dir := t.TempDir()
	c := cfg(t, p, map[string]cty.Value{"create_script": cty.StringVal("touch " + dir + "/x")})
	pl := sdktest.Plan(t, p, typ, n, cty.NilVal, nil, c)
	if !hasWarning(pl.Diagnostics, "Drift cannot be seen") {
		t.Fatalf("no warning: %v", pl.Diagnostics)
	}
	st, _ := sdktest.Create(t, p, typ, n, c)
	os.Remove(dir + "/x")
	if r := sdktest.Read(t, p, typ, n, st, nil); !r.NewState.RawEquals(st) {
		t.Errorf("read without check = %#v", r.NewState)
	}
	pl = sdktest.Plan(t, p, typ, n, st, nil, c)
	if !hasWarning(pl.Diagnostics, "Drift cannot be seen") || !strings.Contains(pl.Diagnostics[0].Detail, "node_command.test has no check") {
		t.Errorf("no-op plan without check: %v", pl.Diagnostics)
	}
	// Destroy without a destroy command: a warning, and the object is forgotten.
	dpl := p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: typ, Address: "node_command.x", Node: n,
		Prior: st, Proposed: cty.NullVal(st.Type()), Config: cty.NullVal(st.Type())})
	if !hasWarning(dpl.Diagnostics, "Destroy undoes nothing on the node") {
		t.Errorf("destroy plan without destroy: %v", dpl.Diagnostics)
	}
	sdktest.Destroy(t, p, typ, n, st, nil)
}

// TestFailureShowsOutput: a failing create shows the exit status, stdout
// and stderr, and keeps the object (the engine taints it); a failing
// destroy keeps it too; a check that cannot run is an error, not "gone".
func TestFailureShowsOutput(t *testing.T) {
	for _, n := range testNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			p := command.New()
			c := cfg(t, p, map[string]cty.Value{
				"create_script":  cty.StringVal("echo to-stdout; echo to-stderr >&2; exit 3"),
				"destroy_script": cty.StringVal("echo cannot >&2; exit 4"),
			})
			pl := sdktest.Plan(t, p, typ, n.node, cty.NilVal, nil, c)
			null := cty.NullVal(pl.Planned.Type())
			resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: typ, Address: "node_command.bad",
				Node: n.node, Prior: null, Planned: pl.Planned, Config: c}, nil)
			err := resp.Diagnostics.Err()
			for _, want := range []string{"create_script of node_command.bad", "exited with status 3", "stdout:\nto-stdout", "stderr:\nto-stderr"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("create error %v lacks %q", err, want)
				}
			}
			if resp.NewState.IsNull() || !resp.NewState.GetAttr("id").IsKnown() {
				t.Fatalf("a failed create must be kept (tainted) for its destroy: %#v", resp.NewState)
			}
			dresp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: typ, Address: "node_command.bad",
				Node: n.node, Prior: resp.NewState, Planned: null, Config: null}, nil)
			if err := dresp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "exited with status 4") || !strings.Contains(err.Error(), "cannot") {
				t.Errorf("destroy error = %v", err)
			}
			if !dresp.NewState.RawEquals(resp.NewState) {
				t.Errorf("a failed destroy dropped the object: %#v", dresp.NewState)
			}

			// A check that cannot run (127: not found).
			st := cfg(t, p, map[string]cty.Value{
				"create": strs("true"), "check": strs(filepath.Join(n.dir, "no-such-program")),
				"id": cty.StringVal("1"), "stdout": cty.StringVal(""),
				"interpreter": strs("/bin/sh", "-c"), "timeout": cty.StringVal("10m0s"),
			})
			rr := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n.node, Resources: []sdk.ReadItem{{TypeName: typ, Address: "node_command.c", Prior: st}}})
			if len(rr.Results) != 1 || !rr.Results[0].Diagnostics.HasErrors() || !rr.Results[0].NewState.RawEquals(st) {
				t.Errorf("a check that cannot run: %#v", rr)
			}
			// A create that succeeds while its check fails is an error.
			c = cfg(t, p, map[string]cty.Value{"create": strs("true"), "check": strs("false")})
			pl = sdktest.Plan(t, p, typ, n.node, cty.NilVal, nil, c)
			resp = p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: typ, Address: "node_command.c",
				Node: n.node, Prior: null, Planned: pl.Planned, Config: c}, nil)
			if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "check does not see its result") {
				t.Errorf("create ok, check fails: %v", err)
			}
		})
	}
}

// TestHostileValues: shell metacharacters in argv words, env values,
// a script's arguments and the working folder reach the command as
// exactly those bytes, and nothing in them runs.
func TestHostileValues(t *testing.T) {
	for _, n := range testNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			p := command.New()
			pwned := filepath.Join(n.dir, "pwned")
			out := filepath.Join(n.dir, "out")
			hostile := []string{
				"$(touch " + pwned + ")", "`touch " + pwned + "`", "a; touch " + pwned, "x' ; touch " + pwned + " ; '",
				"line1\ntouch " + pwned, `"$HOME" \ * ? ~`, "--help", "",
			}
			args := append([]string{"sh", "-c", `for a in "$@"; do printf '%s\036' "$a"; done > "$OUTFILE"; printf '%s' "$HOSTILE" >> "$OUTFILE"`, "sh"}, hostile...)
			weird := filepath.Join(n.dir, "d i r;$(touch "+pwned+")")
			if err := n.conn.MkdirAll(context.Background(), weird, 0o755); err != nil {
				t.Fatal(err)
			}
			c := cfg(t, p, map[string]cty.Value{
				"create": strs(args...),
				"env":    cty.MapVal(map[string]cty.Value{"OUTFILE": cty.StringVal(out), "HOSTILE": cty.StringVal("$(touch " + pwned + ");`x`")}),
				"dir":    cty.StringVal(weird),
				"check":  strs("test", "-f", out),
			})
			st, _ := sdktest.Create(t, p, typ, n.node, c)
			want := strings.Join(hostile, "\036") + "\036" + "$(touch " + pwned + ");`x`"
			if got := n.read(t, out); got != want {
				t.Errorf("arguments arrived as %q, want %q", got, want)
			}
			// A script is one argument of the interpreter: its text is
			// the user's, but no value is pasted into it.
			sc := cfg(t, p, map[string]cty.Value{
				"create_script": cty.StringVal(`pwd > "$OUTFILE"`),
				"env":           cty.MapVal(map[string]cty.Value{"OUTFILE": cty.StringVal(out)}),
				"dir":           cty.StringVal(weird),
			})
			sst, _ := sdktest.Create(t, p, typ, n.node, sc)
			if got := strings.TrimSpace(n.read(t, out)); got != weird {
				t.Errorf("script ran in %q, want %q", got, weird)
			}
			if n.exists(pwned) {
				t.Fatalf("an injected command ran (%s exists)", pwned)
			}
			sdktest.Destroy(t, p, typ, n.node, st, nil)
			sdktest.Destroy(t, p, typ, n.node, sst, nil)
		})
	}
}

// TestBecomeAndTimeout: become runs the command as root through sudo -n
// on the sshd node; a timeout stops a command that runs too long.
func TestBecomeAndTimeout(t *testing.T) {
	nodes := testNodes(t)
	n := nodes[len(nodes)-1] // the sshd node: a non-root user with sudo
	p := command.New()
	out := filepath.Join(n.dir, "uid")
	c := cfg(t, p, map[string]cty.Value{
		"create_script": cty.StringVal(`id -u; id -u > "$OUT"`),
		"env":           cty.MapVal(map[string]cty.Value{"OUT": cty.StringVal(out)}),
		"become":        cty.True,
	})
	st, _ := sdktest.Create(t, p, typ, n.node, c)
	if got := st.GetAttr("stdout").AsString(); got != "0\n" {
		t.Errorf("become: stdout = %q, want 0", got)
	}
	c = cfg(t, p, map[string]cty.Value{"create": strs("sleep", "30"), "timeout": cty.StringVal("1s")})
	pl := sdktest.Plan(t, p, typ, n.node, cty.NilVal, nil, c)
	start := time.Now()
	resp := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: typ, Address: "node_command.slow",
		Node: n.node, Prior: cty.NullVal(pl.Planned.Type()), Planned: pl.Planned, Config: c}, nil)
	if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "could not run") {
		t.Errorf("timeout: %v", err)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("a 1s timeout took %s", el)
	}
}

// TestValidate: what Validate refuses, each naming its attribute.
func TestValidate(t *testing.T) {
	p := command.New()
	tests := []struct {
		attrs map[string]cty.Value
		want  string
	}{
		{map[string]cty.Value{}, "Missing create"},
		{map[string]cty.Value{"create": strs("true"), "create_script": cty.StringVal("true")}, "not both"},
		{map[string]cty.Value{"create": cty.ListValEmpty(cty.String)}, "empty list"},
		{map[string]cty.Value{"create": strs("-rf")}, "may not be empty or start with '-'"},
		{map[string]cty.Value{"create": strs("")}, "may not be empty"},
		{map[string]cty.Value{"create": strs("echo", "a\x00b")}, "NUL byte"},
		{map[string]cty.Value{"create_script": cty.StringVal("  \n")}, "Empty script"},
		{map[string]cty.Value{"create": strs("true"), "env": cty.MapVal(map[string]cty.Value{"A=B": cty.StringVal("x")})}, "not an environment variable name"},
		{map[string]cty.Value{"create": strs("true"), "env": cty.MapVal(map[string]cty.Value{"1A": cty.StringVal("x")})}, "not an environment variable name"},
		{map[string]cty.Value{"create": strs("true"), "timeout": cty.StringVal("ten minutes")}, "not a duration"},
		{map[string]cty.Value{"create": strs("true"), "timeout": cty.StringVal("0s")}, "more than zero"},
		{map[string]cty.Value{"create": strs("true"), "dir": cty.StringVal("relative")}, "absolute path"},
		{map[string]cty.Value{"create": strs("true"), "interpreter": strs("-x")}, "interpreter[0]"},
		{map[string]cty.Value{"create": strs("true"), "check": strs("a"), "check_script": cty.StringVal("b")}, "check as an argv"},
	}
	for _, tt := range tests {
		diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: typ, Config: cfg(t, p, tt.attrs)})
		if err := diags.Err(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: want %q, got %v", tt.attrs, tt.want, err)
		}
	}
	if d := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: typ,
		Config: cfg(t, p, map[string]cty.Value{"create": strs("true")})}); d.HasErrors() {
		t.Errorf("a minimal config is refused: %v", d.Err())
	}
}

// TestTriggersReplace: a triggers_replace change replaces, with a new id.
func TestTriggersReplace(t *testing.T) {
	p := command.New()
	n := sdk.Node{Name: "node.local", Transport: "local"}
	c := cfg(t, p, map[string]cty.Value{"create": strs("true"), "check": strs("true"), "triggers_replace": cty.StringVal("a")})
	st, _ := sdktest.Create(t, p, typ, n, c)
	c = cfg(t, p, map[string]cty.Value{"create": strs("true"), "check": strs("true"), "triggers_replace": cty.StringVal("b")})
	pl := sdktest.Plan(t, p, typ, n, st, nil, c)
	if len(pl.RequiresReplace) != 1 || !pl.RequiresReplace[0].Equals(cty.GetAttrPath("triggers_replace")) || pl.Planned.GetAttr("id").IsKnown() {
		t.Errorf("triggers change: %#v", pl)
	}
}
