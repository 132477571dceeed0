package node_test

import (
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sparkform/sparkform/providers/node"
)

// startAgent runs a real ssh-agent holding the bed's client key.
func startAgent(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ssh-agent"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh-agent missing (apt-get install openssh-client)")
		}
		t.Skip("ssh-agent missing")
	}
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
}
