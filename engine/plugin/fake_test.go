package plugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Fake plugins that never finish starting (issue 31): each is refused
// promptly with an error naming the plugin file and what went wrong,
// instead of hanging for minutes. Each is a shell script that leaves a
// child holding its stdout and stderr (sleep), as a plugin that forks
// does: killing the script alone does not close the pipes go-plugin
// waits on.
func TestFakePluginsRefusedPromptly(t *testing.T) {
	const bound = 3 * time.Second
	for _, tc := range []struct {
		name, script string
		want         []string
	}{
		{"nohandshake", `sleep 300`, []string{"did not complete the plugin handshake within 3s"}},
		{"proto99", `echo "1|99|unix|/nonexistent/plugin.sock|grpc"; sleep 300`,
			[]string{"speaks another version of the provider protocol", "Plugin version: 99"}},
		{"hugeline", `head -c 52428800 /dev/zero | tr '\000' a; sleep 300`,
			[]string{"handshake", "longer than"}},
		{"badaddr", `echo "1|4|unix|/nonexistent/plugin.sock|grpc"; sleep 300`,
			[]string{"cannot be reached at the address it announced", "/nonexistent/plugin.sock"}},
		{"exits", `echo "giving up" >&2; exit 3`, []string{"giving up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ExecPrefix+tc.name)
			if err := os.WriteFile(path, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			h := NewHost(Options{PluginDirs: []string{dir}, StartTimeout: bound})
			defer h.Close()
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				_, err := h.Provider(context.Background(), tc.name)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(bound + 20*time.Second):
				t.Fatalf("starting the fake plugin %s hangs (%s so far)", tc.name, time.Since(start).Round(time.Second))
			}
			took := time.Since(start)
			t.Logf("%s: refused after %s: %v", tc.name, took.Round(time.Millisecond), err)
			if !errors.Is(err, ErrPluginStart) {
				t.Fatalf("err = %v, want ErrPluginStart", err)
			}
			for _, w := range append([]string{path}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
			if len(err.Error()) > 16<<10 {
				t.Errorf("the error is %d bytes long", len(err.Error()))
			}
			if took > bound+10*time.Second {
				t.Errorf("refused after %s, want within %s of the start timeout", took, 10*time.Second)
			}
			// Nothing of the fake plugin is left running.
			closed := make(chan struct{})
			go func() { h.Close(); close(closed) }()
			select {
			case <-closed:
			case <-time.After(15 * time.Second):
				t.Fatal("Close hangs after a failed start")
			}
		})
	}
}
