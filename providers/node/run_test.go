package node_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
)

// awkward are arguments a shell would mangle if they were not quoted.
var awkward = []string{
	"plain", "two words", "it's", `"double"`, "$(id -u)", "`id`", "$HOME", "${PATH}",
	"line1\nline2", "*", "?", "[a-z]", "~", "", " ", "-n", "--", `\`, `\\n`, ";echo pwned",
	"a|b", "a&&b", "a>b", "<in", "tab\there", "ünïcødé", "a=b", "!bang", "#hash", "'", "''",
	"\x01ctl", "trailing\n",
}

func TestRunArgvByteExact(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			argv := append([]string{"printf", `%s\0`}, awkward...)
			res, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: argv})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(string(res.Stdout), "\x00")
			got = got[:len(got)-1] // after the last NUL
			if len(got) != len(awkward) {
				t.Fatalf("got %d args, want %d: %q", len(got), len(awkward), got)
			}
			for i := range awkward {
				if got[i] != awkward[i] {
					t.Errorf("arg %d: got %q, want %q", i, got[i], awkward[i])
				}
			}
		})
	}
}

func TestRunStdinStdoutExit(t *testing.T) {
	blob := make([]byte, 300_000)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	for _, tr := range transports(t) {
		t.Run(tr.name+"/stdin", func(t *testing.T) {
			res, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"cat"}, Stdin: bytes.NewReader(blob)})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.Stdout, blob) {
				t.Fatalf("stdin round trip: got %d bytes, want %d equal bytes", len(res.Stdout), len(blob))
			}
		})
		t.Run(tr.name+"/no stdin is EOF", func(t *testing.T) {
			res, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"wc", "-c"}})
			if err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
				t.Fatalf("got %q, %v", res.Stdout, err)
			}
		})
		t.Run(tr.name+"/streamed stdout", func(t *testing.T) {
			var out bytes.Buffer
			res, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"echo", "streamed"}, Stdout: &out})
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != "streamed\n" || len(res.Stdout) != 0 {
				t.Fatalf("Stdout writer got %q, Result.Stdout %q", out.String(), res.Stdout)
			}
		})
		t.Run(tr.name+"/exit status", func(t *testing.T) {
			res, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", "echo out; echo 'bad thing' >&2; exit 3"}})
			var ee *node.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("want *ExitError, got %v", err)
			}
			if ee.ExitCode != 3 || ee.Stderr != "bad thing\n" || string(res.Stdout) != "out\n" {
				t.Fatalf("got code %d stderr %q stdout %q", ee.ExitCode, ee.Stderr, res.Stdout)
			}
			if !strings.Contains(err.Error(), "exited with status 3: bad thing") {
				t.Errorf("message: %v", err)
			}
		})
		t.Run(tr.name+"/missing program", func(t *testing.T) {
			_, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"no-such-program-sparkform"}})
			if err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestRunEnvDir(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			env := map[string]string{"SF_A": "two words $(id) 'q'", "SF_B": "", "SF_C": "x=y\nz"}
			res, err := tr.conn.Run(ctxT(t), node.Cmd{
				Argv: []string{"sh", "-c", `printf '%s|%s|%s|' "$SF_A" "$SF_B" "$SF_C"; pwd`},
				Env:  env, Dir: tr.dir,
			})
			if err != nil {
				t.Fatal(err)
			}
			want := env["SF_A"] + "|" + env["SF_B"] + "|" + env["SF_C"] + "|" + tr.dir + "\n"
			if string(res.Stdout) != want {
				t.Fatalf("got %q, want %q", res.Stdout, want)
			}
		})
		for _, bad := range []string{"A=B", "1X", "has space", ""} {
			t.Run(tr.name+"/bad env "+bad, func(t *testing.T) {
				_, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"true"}, Env: map[string]string{bad: "v"}})
				if !errors.Is(err, node.ErrBadCmd) || !strings.Contains(err.Error(), "environment name") {
					t.Fatalf("want ErrBadCmd naming the environment name, got %v", err)
				}
			})
		}
		t.Run(tr.name+"/empty argv", func(t *testing.T) {
			if _, err := tr.conn.Run(ctxT(t), node.Cmd{}); !errors.Is(err, node.ErrBadCmd) {
				t.Fatalf("want ErrBadCmd, got %v", err)
			}
		})
	}
}

func TestRunBecome(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			res, err := tr.conn.Run(ctxT(t), node.Cmd{
				Argv: []string{"sh", "-c", `id -u; printf %s "$SF_V"`}, Become: true,
				Env: map[string]string{"SF_V": "kept through sudo"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Stdout) != "0\nkept through sudo" {
				t.Fatalf("got %q", res.Stdout)
			}
		})
	}
	t.Run("user without sudo", func(t *testing.T) {
		n := bed(t).Nodes[0].SDK()
		n.User = testbed.NoSudoUser
		c := dialNode(t, n)
		res, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"id", "-un"}})
		if err != nil || strings.TrimSpace(string(res.Stdout)) != testbed.NoSudoUser {
			t.Fatalf("plain run as %s: %q %v", testbed.NoSudoUser, res.Stdout, err)
		}
		_, err = c.Run(ctxT(t), node.Cmd{Argv: []string{"id", "-u"}, Become: true})
		if !errors.Is(err, node.ErrBecome) {
			t.Fatalf("want ErrBecome, got %v", err)
		}
		var ee *node.ExitError
		if !errors.As(err, &ee) || ee.ExitCode != 1 {
			t.Fatalf("want the sudo *ExitError wrapped, got %#v", err)
		}
		want := "node node0: become needs passwordless sudo for " + testbed.NoSudoUser + " (sudo -n refused): sudo: a password is required"
		if !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("message:\n got %s\nwant prefix %s", err, want)
		}
	})
	t.Run("command failing under become is not a sudo refusal", func(t *testing.T) {
		_, err := dial(t, 0).Run(ctxT(t), node.Cmd{Argv: []string{"sh", "-c", "echo 'a password is required' >&2; exit 1"}, Become: true})
		if errors.Is(err, node.ErrBecome) {
			t.Fatalf("the command's own stderr was taken for sudo's: %v", err)
		}
	})
}

func TestRunCancel(t *testing.T) {
	c := dial(t, 0)
	marker := "98765.4321" // a duration sleep accepts, unlikely elsewhere
	ctx, cancel := context.WithTimeout(ctxT(t), 300*time.Millisecond)
	defer cancel()
	_, err := c.Run(ctx, node.Cmd{Argv: []string{"sleep", marker}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	// The remote sleep is signalled, not left running.
	for i := 0; ; i++ {
		res, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"pgrep", "-f", "sleep " + marker}})
		if err != nil { // pgrep exits 1: no such process
			break
		}
		if i == 100 {
			t.Fatalf("remote command still running after cancel: pids %s", res.Stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The connection is still usable.
	if _, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		cmd  node.Cmd
		sudo bool
		want string
	}{
		{node.Cmd{Argv: []string{"ls", "-l"}}, false, "exec ls -l"},
		{node.Cmd{Argv: []string{"echo", "a b", "$(x)"}}, true, `exec sudo -n -- echo 'a b' '$(x)'`},
		{node.Cmd{Argv: []string{"pwd"}, Dir: "/tmp/it's"}, false, `cd -- '/tmp/it'\''s' && exec pwd`},
		{node.Cmd{Argv: []string{"pwd"}, Dir: "-"}, false, `cd -- - && exec pwd`},
		{node.Cmd{Argv: []string{"env"}, Env: map[string]string{"B": "2 3", "A": "1"}}, true, `exec sudo -n -- env 'A=1' 'B=2 3' env`},
	}
	for _, tc := range tests {
		if got := node.CommandLine(tc.cmd, tc.sudo); got != tc.want {
			t.Errorf("CommandLine(%+v) = %s, want %s", tc.cmd, got, tc.want)
		}
	}
}

func TestRoundTrips(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			before := tr.conn.RoundTrips()
			if _, err := tr.conn.Run(ctxT(t), node.Cmd{Argv: []string{"true"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.conn.Stat(ctxT(t), tr.dir); err != nil {
				t.Fatal(err)
			}
			if got := tr.conn.RoundTrips() - before; got != 2 {
				t.Fatalf("Run + Stat counted %d round trips, want 2", got)
			}
		})
	}
}
