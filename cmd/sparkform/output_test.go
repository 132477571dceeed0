package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// waitLimit only keeps a broken test from hanging: every wait below is
// for something that must happen before an operation the test holds
// back is let go, never a measure of speed.
const waitLimit = 60 * time.Second

// liveRun is a sparkform process whose stdout and stderr (one pipe, as
// on a terminal) are read as they arrive.
type liveRun struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu     sync.Mutex
	out    bytes.Buffer
	more   chan struct{} // closed and replaced at each read
	exited chan struct{}
	err    error
}

func startLive(t *testing.T, dir string, args ...string) *liveRun {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "sparkform"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "NO_COLOR=1")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := &liveRun{t: t, cmd: cmd, stdin: stdin, more: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			close(r.more)
			r.more = make(chan struct{})
			r.mu.Unlock()
			if err != nil {
				pr.Close()
				r.err = cmd.Wait()
				close(r.exited)
				return
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			cmd.Process.Kill()
			<-r.exited
		}
	})
	return r
}

func (r *liveRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitFor waits until the output so far contains s, while the process
// still runs: it fails when the process ends first.
func (r *liveRun) waitFor(s string) {
	r.t.Helper()
	limit := time.After(waitLimit)
	for {
		r.mu.Lock()
		got, more := strings.Contains(r.out.String(), s), r.more
		r.mu.Unlock()
		if got {
			return
		}
		select {
		case <-more:
		case <-r.exited:
			if !strings.Contains(r.output(), s) {
				r.t.Fatalf("sparkform ended (%v) without printing %q:\n%s", r.err, s, r.output())
			}
			return
		case <-limit:
			r.t.Fatalf("%q not printed while sparkform runs; output so far:\n%s", s, r.output())
		}
	}
}

// wait waits for the process to end and returns its error.
func (r *liveRun) wait() error {
	r.t.Helper()
	select {
	case <-r.exited:
		return r.err
	case <-time.After(waitLimit):
		r.t.Fatalf("sparkform did not end; output:\n%s", r.output())
		return nil
	}
}

func writeConfig(t *testing.T, dir, hcl string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "main.sf.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestApprovalPromptShownBeforeInput: apply shows the whole plan and the
// question before it waits for the answer (output is buffered: the
// prompt must be written out before stdin is read).
func TestApprovalPromptShownBeforeInput(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, `
node "local" {
  transport = "local"
}

resource "sparkform_data" "x" {
  count = 3
  node  = node.local
  input = "one-${count.index}"
}
`)
	r := startLive(t, dir, "apply")
	r.waitFor("Enter a value: ")
	before := r.output()
	for _, want := range []string{`# sparkform_data.x[2] will be created`, "Plan: 3 to add, 0 to change, 0 to destroy.", "Do you want to perform these actions?"} {
		if !strings.Contains(before, want) {
			t.Errorf("before the answer, the output lacks %q:\n%s", want, before)
		}
	}
	if strings.Contains(before, "Creating...") {
		t.Fatalf("apply started before the answer:\n%s", before)
	}
	if _, err := io.WriteString(r.stdin, "yes\n"); err != nil {
		t.Fatal(err)
	}
	if err := r.wait(); err != nil {
		t.Fatalf("apply: %v\n%s", err, r.output())
	}
	if out := r.output(); !strings.Contains(out, "Apply complete! Resources: 3 added") {
		t.Errorf("no summary after the answer:\n%s", out)
	}

	// Ctrl-C at the question still ends sparkform at once, by the signal,
	// with nothing lost.
	r = startLive(t, dir, "destroy")
	r.waitFor("Enter a value: ")
	r.cmd.Process.Signal(os.Interrupt)
	err := r.wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
		t.Errorf("destroy at the question after Ctrl-C: %v, want killed by SIGINT", err)
	}
}

// gatedConfig is a quick resource and a node_command that runs until
// the test creates gate (it touches mark first). It ignores SIGTERM, so
// an interrupt's stop request does not end it: the apply stays running.
//
// The command also stops once MARK is gone: a test whose sparkform exits
// at once leaves it running, and the gate its cleanup writes may be
// removed with the test's folder before the command looks (it then ran
// forever, holding whatever its parent had open).
func gatedConfig(mark, gate string) string {
	return fmt.Sprintf(`
node "local" {
  transport = "local"
}

resource "sparkform_data" "first" {
  node  = node.local
  input = "landed"
}

resource "node_command" "slow" {
  node          = node.local
  create_script = "trap '' TERM; touch \"$MARK\"; while [ ! -e \"$GATE\" ] && [ -e \"$MARK\" ]; do sleep 0.05; done"
  env           = { MARK = %q, GATE = %q }
}
`, mark, gate)
}

// TestProgressShownWhileApplyRuns: while one operation is still running,
// what finished and what started is already on stdout, in plain lines
// and in the -json stream (whole JSON lines); the apply ends with all of
// it and its summary.
func TestProgressShownWhileApplyRuns(t *testing.T) {
	for _, tc := range []struct {
		name            string
		args            []string
		started, landed string
		summary         string
	}{
		{"plain", nil, "node_command.slow: Creating...", "sparkform_data.first: Creation complete after",
			"Apply complete! Resources: 2 added, 0 changed, 0 destroyed."},
		{"json", []string{"-json"}, `"type":"apply_start"`, `"@message":"sparkform_data.first: Creation complete after`,
			`"@message":"Apply complete! Resources: 2 added`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mark, gate := filepath.Join(dir, "started"), filepath.Join(dir, "gate")
			writeConfig(t, dir, gatedConfig(mark, gate))
			r := startLive(t, dir, append([]string{"apply", "-auto-approve"}, tc.args...)...)
			t.Cleanup(func() { os.WriteFile(gate, nil, 0o644) })
			r.waitFor(tc.started)
			r.waitFor(tc.landed)
			if _, err := os.Stat(gate); err == nil {
				t.Fatal("the gate opened early")
			}
			during := r.output()
			if strings.Contains(during, tc.summary) {
				t.Fatalf("summary before the slow operation ended:\n%s", during)
			}
			if tc.name == "json" {
				// Everything written so far is whole lines of JSON.
				if !strings.HasSuffix(during, "\n") {
					t.Errorf("the stream so far ends in the middle of a line: %q", during)
				}
				for _, l := range strings.Split(strings.TrimSuffix(during, "\n"), "\n") {
					if !json.Valid([]byte(l)) {
						t.Errorf("not a JSON line: %q", l)
					}
				}
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := r.wait(); err != nil {
				t.Fatalf("apply: %v\n%s", err, r.output())
			}
			if out := r.output(); !strings.Contains(out, tc.summary) {
				t.Errorf("no summary at the end:\n%s", out)
			}
		})
	}
}

// TestOutputCompleteWhenApplyFails: a failing apply, with stdout and
// stderr on one pipe, shows everything it wrote, in the order written:
// the operation's failure line (stdout) before the error (stderr) and the
// closing message (stderr).
func TestOutputCompleteWhenApplyFails(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, `
node "local" {
  transport = "local"
}

resource "sparkform_data" "first" {
  node  = node.local
  input = "landed"
}

resource "node_command" "broken" {
  node          = node.local
  create_script = "echo broken on stderr >&2; exit 7"
  depends_on    = [sparkform_data.first]
}
`)
	r := startLive(t, dir, "apply", "-auto-approve")
	if err := r.wait(); err == nil {
		t.Fatalf("apply of a failing command succeeded:\n%s", r.output())
	}
	out := r.output()
	last := -1
	for _, want := range []string{
		"Plan: 2 to add",
		"sparkform_data.first: Creation complete after",
		"node_command.broken: Creating...",
		"node_command.broken: Creating failed after",
		"stderr:\nbroken on stderr\n",
		"Apply failed. What finished is saved in state (1 added, 0 changed, 0 destroyed)",
	} {
		i := strings.Index(out, want)
		if i < 0 {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
		if i < last {
			t.Errorf("%q is out of order:\n%s", want, out)
		}
		last = i
	}
	if !strings.HasSuffix(out, "run plan to see what is left.\n") {
		t.Errorf("output does not end with the closing message:\n%s", out)
	}
}

// TestOutputCompleteWhenInterrupted: Ctrl-C during an apply shows its
// notice at once, while the operation it stops may still run; a second
// Ctrl-C exits at once (status 130) and its notice is not lost in a
// buffer.
func TestOutputCompleteWhenInterrupted(t *testing.T) {
	dir := t.TempDir()
	mark, gate := filepath.Join(dir, "started"), filepath.Join(dir, "gate")
	writeConfig(t, dir, gatedConfig(mark, gate))
	r := startLive(t, dir, "apply", "-auto-approve")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o644) })
	r.waitFor("node_command.slow: Creating...")
	r.waitFor("sparkform_data.first: Creation complete after")
	r.cmd.Process.Signal(os.Interrupt)
	r.waitFor("Interrupt received.")
	r.cmd.Process.Signal(os.Interrupt)
	err := r.wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("after two interrupts: %v, want exit status 130\n%s", err, r.output())
	}
	out := r.output()
	if !strings.HasSuffix(out, "Two interrupts received. Exiting immediately.\n") {
		t.Errorf("output does not end with the second interrupt's notice:\n%s", out)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	n := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "sparkform_data.first: Creation complete") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d completion lines for sparkform_data.first, want 1:\n%s", n, out)
	}
}
