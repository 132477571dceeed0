package node_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
)

// hostile are values an attacker would put in a path, env value or
// argument to run something of their own; MARK is the marker file.
var hostile = []string{
	"$(touch MARK)", "`touch MARK`", "x; touch MARK", "x' ; touch MARK; '", `x" ; touch MARK; "`,
	"x\ntouch MARK", "x && touch MARK", "x | touch MARK", "-", "-x", "--", "*", "a b", "$((1))${IFS}",
}

// TestHostileValuesRunNothing passes hostile values as a folder (Dir),
// environment values and arguments; nothing they spell may run, and each
// must arrive byte for byte.
func TestHostileValuesRunNothing(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			mark := filepath.Join(tr.dir, "pwned")
			for _, h := range hostile {
				v := strings.ReplaceAll(h, "MARK", mark)
				// Dir: a folder named after the value.
				dir := filepath.Join(tr.dir, strings.ReplaceAll(v, "/", "_"))
				if _, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"mkdir", "-p", "--", dir}}); err != nil {
					t.Fatalf("mkdir %q: %v", dir, err)
				}
				res, err := tr.conn.Run(ctxT(t), node.Cmd{
					Argv: []string{"sh", "-c", `printf '%s|%s|' "$SF_V" "$1"; pwd`, "sh", v},
					Env:  map[string]string{"SF_V": v}, Dir: dir,
				})
				if err != nil {
					t.Fatalf("value %q: %v", v, err)
				}
				if want := v + "|" + v + "|" + dir + "\n"; string(res.Stdout) != want {
					t.Errorf("value %q: got %q, want %q", v, res.Stdout, want)
				}
				if _, err := os.Stat(mark); err == nil {
					t.Fatalf("value %q ran an injected command (%s exists)", v, mark)
				}
			}
		})
	}
}

// TestRunRefusesUnpassable: a program name the remote shell would read as
// an option, and NUL bytes (cut by exec), are clear ErrBadCmd errors.
func TestRunRefusesUnpassable(t *testing.T) {
	cases := []struct {
		name string
		cmd  node.Cmd
		want string
	}{
		{"option as program", node.Cmd{Argv: []string{"-c", "id"}}, "starts with '-'"},
		{"NUL in argument", node.Cmd{Argv: []string{"echo", "a\x00b"}}, "NUL byte"},
		{"NUL in env value", node.Cmd{Argv: []string{"true"}, Env: map[string]string{"A": "x\x00y"}}, "NUL byte"},
		{"NUL in dir", node.Cmd{Argv: []string{"true"}, Dir: "/tmp\x00x"}, "NUL byte"},
	}
	for _, tr := range transports(t) {
		for _, tc := range cases {
			t.Run(tr.name+"/"+tc.name, func(t *testing.T) {
				_, err := tr.conn.Run(ctxT(t), tc.cmd)
				if !errors.Is(err, node.ErrBadCmd) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("want ErrBadCmd saying %q, got %v", tc.want, err)
				}
			})
		}
	}
}
