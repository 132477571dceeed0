package node_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestDebugLogsEachCommand: with Options.Debug, each command on either
// transport is one line with its node, argv (a script shortened to its
// first line and size), environment names without values, and exit
// status; without it, nothing.
func TestDebugLogsEachCommand(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	debug := node.NewPoolWith(node.Options{Debug: func(msg string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, msg+" "+fmt.Sprint(args...))
	}})
	t.Cleanup(func() { debug.Close() })
	script := "set -e\n" + strings.Repeat("echo filler\n", 30) + "exit 3"
	for _, tr := range pooledTransports(t, debug) {
		t.Run(tr.name, func(t *testing.T) {
			mu.Lock()
			lines = nil
			mu.Unlock()
			if _, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"true", "two words"}, Env: map[string]string{"SECRET_TOKEN": "hunter2"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", script}}); err == nil {
				t.Fatal("the script should exit 3")
			}
			mu.Lock()
			got := append([]string(nil), lines...)
			mu.Unlock()
			var cmds []string
			for _, l := range got {
				if strings.HasPrefix(l, "remote command ") {
					cmds = append(cmds, l)
				}
			}
			if len(cmds) != 2 {
				t.Fatalf("want 2 command lines, got %d: %q", len(cmds), got)
			}
			for _, want := range []string{"node" + tr.conn.Name(), "argv" + "true 'two words'", "exit0", "envSECRET_TOKEN"} {
				if !strings.Contains(strings.ReplaceAll(cmds[0], " ", ""), strings.ReplaceAll(want, " ", "")) {
					t.Errorf("first line lacks %q: %s", want, cmds[0])
				}
			}
			if strings.Contains(strings.Join(got, "\n"), "hunter2") {
				t.Errorf("an environment value was logged: %q", got)
			}
			if second := strings.ReplaceAll(cmds[1], " ", ""); !strings.Contains(second, "exit3") || !strings.Contains(second, "set-e…(") || strings.Contains(second, "filler") {
				t.Errorf("second line: want exit 3 and the script shortened: %s", cmds[1])
			}
		})
	}
	lines = nil
	quiet := node.NewPool()
	t.Cleanup(func() { quiet.Close() })
	for _, tr := range pooledTransports(t, quiet) {
		if _, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(lines) != 0 {
		t.Errorf("logged with debug off: %q", lines)
	}
}

// pooledTransports are an SSH and a local connection got from p (with its
// options).
func pooledTransports(t *testing.T, p *node.Pool) []transport {
	t.Helper()
	var out []transport
	for name, n := range map[string]sdk.Node{"ssh": bed(t).Nodes[0].SDK(), "local": {Name: "local", Transport: "local"}} {
		c, err := p.Get(ctxT(t), n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, transport{name, c, ""})
	}
	return out
}
