package plugin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/sparkform/sparkform/providers/sdk"
)

// A plugin leaves when its engine is gone, told so by its lifeline (the
// engine's parent-pid check cannot see it here: the test process, its
// parent, lives on), or by finding at start that its parent is not the
// engine that started it (orphaned before it could look). Either way it
// removes its socket folder (issue 31).
func TestPluginLeavesWithItsEngine(t *testing.T) {
	for _, tc := range []struct {
		name      string
		parentPID func() int
		cut       bool // close the lifeline once serving
	}{
		{"lifeline closed", os.Getpid, true},
		{"orphaned before it looked", func() int { return 1 << 22 }, false}, // no such pid
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A short base: t.TempDir's path (test name, random digits)
			// made the socket's path exceed the 108 bytes of a unix
			// address now and then, and the plugin could not start.
			base, err := os.MkdirTemp("", "sfll")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			sockDir := filepath.Join(base, sdk.SocketDirPrefix+"lifeline")
			if err := os.Mkdir(sockDir, 0o700); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(selfExe, "internal-plugin", "sparkform")
			w, r, err := addLifeline(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cmd.Env = append(cmd.Env, sdk.Handshake.MagicCookieKey+"="+sdk.Handshake.MagicCookieValue,
				goplugin.EnvUnixSocketDir+"="+sockDir, fmt.Sprintf("%s=%d", sdk.ParentPIDEnv, tc.parentPID()))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			exited := make(chan error, 1)
			if tc.cut {
				sc := bufio.NewScanner(out)
				serving := false
				for !serving && sc.Scan() {
					serving = strings.Contains(sc.Text(), "|grpc")
				}
				if !serving {
					_ = cmd.Process.Kill()
					t.Fatalf("the plugin did not start serving: %v", sc.Err())
				}
				go func() { exited <- cmd.Wait() }()
				select {
				case <-exited:
					t.Fatal("the plugin left while its lifeline was held")
				case <-time.After(time.Second):
				}
				w.Close()
			} else {
				go func() { exited <- cmd.Wait() }()
			}
			var exitErr error
			select {
			case exitErr = <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("the plugin still runs 10 s after its engine was gone")
			}
			if _, err := os.Stat(sockDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the plugin's socket folder is still there (%v); the plugin ended with %v, stderr:\n%s", err, exitErr, stderr.String())
			}
		})
	}
}

// The socket folder of a sparkform process that is gone (killed between
// making it and starting its plugin) is removed by the next plugin start;
// a running process's folder is kept.
func TestStaleSocketDirsSwept(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(tmp, fmt.Sprintf("%s%d-123", sdk.SocketDirPrefix, dead.Process.Pid))
	live := filepath.Join(tmp, fmt.Sprintf("%s%d-456", sdk.SocketDirPrefix, os.Getppid()))
	other := filepath.Join(tmp, sdk.SocketDirPrefix+"engine-killed") // no pid: not ours to judge
	for _, d := range []string{stale, live, other} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h := NewHost(Options{SelfExe: selfExe, Builtins: []string{"sparkform"}})
	defer h.Close()
	if _, err := h.Provider(t.Context(), "sparkform"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the folder of a process that is gone is still there (%v)", err)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(d), err)
		}
	}
}
