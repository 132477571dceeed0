package hubstage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkform/sparkform/providers/internal/restore"
)

// TestKilledWriteLeavesNoTempFile (issue 11, point 6): a manifest write
// killed with SIGKILL while its temporary file exists (no trap can run)
// leaves that file; the next write of the same manifest removes it, and
// so does destroy.
func TestKilledWriteLeavesNoTempFile(t *testing.T) {
	ctx := context.Background()
	for _, n := range testNodes(t) {
		if n.name == "sshd" {
			continue // the kill below is of a local process group
		}
		t.Run(n.name, func(t *testing.T) {
			dir := filepath.Join(n.dir, "m")
			mp := filepath.Join(dir, "mounts.txt")
			content := []byte("/model/config.json\n")
			want := sum(string(content))
			temps := func() []string {
				m, _ := filepath.Glob(filepath.Join(dir, ".sparkform-manifest.*"))
				return m
			}

			sh, env := "sh", os.Environ()
			if bb, ok := n.conn.(busyboxConn); ok {
				sh, env = filepath.Join(bb.bin, "sh"), []string{"PATH=" + bb.bin}
			}
			cmd := exec.Command(sh, "-c", restore.Prelude+"\n"+writeScript, "sh", "", records.Kind, records.Name(mp), "key "+mp+"\n", mp, want, "")
			cmd.Env = env
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stdin, err := cmd.StdinPipe()
			must(t, err)
			must(t, cmd.Start())
			stdin.Write(content[:5]) // half written, then the kill
			deadline := time.Now().Add(10 * time.Second)
			for len(temps()) == 0 {
				if time.Now().After(deadline) {
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					cmd.Wait()
					t.Fatal("the write made no temporary file")
				}
				time.Sleep(5 * time.Millisecond)
			}
			must(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
			cmd.Wait()
			stdin.Close()
			if len(temps()) != 1 {
				t.Fatalf("after SIGKILL: temporary files %v, want the one the killed write left", temps())
			}

			wrote, err := writeManifest(ctx, n.conn, false, mp, content, want, "")
			if err != nil || !wrote {
				t.Fatalf("write after the kill: %v %v", wrote, err)
			}
			if left := temps(); len(left) != 0 {
				t.Fatalf("the next write left %v behind", left)
			}

			// A temporary file left by a kill after that write is removed
			// by destroy with the manifest and the folder made for it.
			must(t, os.WriteFile(filepath.Join(dir, ".sparkform-manifest.mounts.txt.AbC123"), content[:3], 0o600))
			if kept, err := removeManifest(ctx, n.conn, false, mp, want); err != nil || kept != "" {
				t.Fatalf("remove: %q %v", kept, err)
			}
			if left := temps(); len(left) != 0 {
				t.Fatalf("destroy left %v behind", left)
			}
			if _, err := os.Stat(dir); err == nil {
				ents, _ := os.ReadDir(dir)
				names := []string{}
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Fatalf("destroy left the folder it made, holding %s", strings.Join(names, ", "))
			}
		})
	}
}
