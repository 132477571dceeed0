package node_test

import (
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/providers/node"
)

// startAgent runs a real ssh-agent holding the bed's client key.
func startAgent(t *testing.T) string {
	t.Helper()
	_, err := exec.LookPath("ssh-agent")
	realpart.Need(t, "ssh-agent (apt-get install openssh-client)", err)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i == 200 {
			t.Fatal("ssh-agent socket did not appear")
		}
		time.Sleep(10 * time.Millisecond)
	}
	add := exec.Command("ssh-add", bed(t).IdentityFile)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	return sock
}

func TestAgentAuth(t *testing.T) {
	b := bed(t)
	sock := startAgent(t)
	t.Setenv("SSH_AUTH_SOCK", sock)
	t.Setenv("HOME", t.TempDir()) // no default key files

	t.Run("agent key", func(t *testing.T) {
		n := b.Nodes[0].SDK()
		n.IdentityFile = ""
		c, err := node.DialSSH(ctxT(t), n)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
	t.Run("encrypted identity_file held by the agent", func(t *testing.T) {
		raw, _ := os.ReadFile(b.IdentityFile)
		key, err := ssh.ParseRawPrivateKey(raw)
		if err != nil {
			t.Fatal(err)
		}
		blk, err := ssh.MarshalPrivateKeyWithPassphrase(key, "", []byte("secret"))
		if err != nil {
			t.Fatal(err)
		}
		enc := filepath.Join(t.TempDir(), "enc")
		os.WriteFile(enc, pem.EncodeToMemory(blk), 0o600)
		n := b.Nodes[0].SDK()
		n.IdentityFile = enc
		c, err := node.DialSSH(ctxT(t), n)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
	// ssh_config's IdentityFile (IdentityFiles) is offered with the
	// agent's keys, unless IdentitiesOnly: then only the files are.
	stranger := filepath.Join(t.TempDir(), "stranger")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", stranger).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	for _, tc := range []struct {
		name     string
		files    []string
		only, ok bool
	}{
		{"a file the node does not know, plus the agent", []string{stranger}, false, true},
		{"a file the node does not know, IdentitiesOnly", []string{stranger}, true, false},
		{"the right file, IdentitiesOnly", []string{stranger, b.IdentityFile}, true, true},
		{"missing files are skipped", []string{filepath.Join(t.TempDir(), "gone"), b.IdentityFile}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := b.Nodes[0].SDK()
			n.IdentityFile, n.IdentityFiles, n.IdentitiesOnly = "", tc.files, tc.only
			c, err := node.DialSSH(ctxT(t), n)
			if tc.ok != (err == nil) {
				t.Fatalf("dial: %v, want success %v", err, tc.ok)
			}
			if err == nil {
				c.Close()
			} else if !strings.Contains(err.Error(), "refused every key offered (ssh_config IdentityFile "+stranger+")") {
				t.Errorf("message does not say what was offered: %v", err)
			}
		})
	}
}
