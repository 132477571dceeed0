package node_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
)

func TestHostKeyUnknown(t *testing.T) {
	b := bed(t)
	nd := b.Nodes[0]
	dir := t.TempDir()
	tests := []struct {
		name    string
		content *string // nil: file missing
		detail  string
	}{
		{"empty known_hosts", ptr(""), "has no entry for it"},
		{"other hosts only", ptr(testbed.KnownHostsLine("127.0.0.99", 2222, b.Nodes[1].HostKey)), "has no entry for it"},
		{"missing file", nil, "does not exist"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kh := filepath.Join(dir, "kh"+strconv.Itoa(i))
			if tc.content != nil {
				if err := os.WriteFile(kh, []byte(*tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			n := nd.SDK()
			n.KnownHosts = kh
			_, err := node.DialSSH(ctxT(t), n)
			if !errors.Is(err, node.ErrHostKeyUnknown) {
				t.Fatalf("want ErrHostKeyUnknown, got %v", err)
			}
			hp := "[" + nd.Host + "]:" + strconv.Itoa(nd.Port)
			fix := "ssh-keyscan -p " + strconv.Itoa(nd.Port) + " " + nd.Host + " >> " + kh
			for _, want := range []string{"node node0: host key for " + hp + " is not known",
				ssh.FingerprintSHA256(nd.HostKey), tc.detail, "refusing to connect", fix} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message lacks %q:\n%s", want, err)
				}
			}
			// The suggested command really fixes it.
			if out, err := exec.Command("sh", "-c", fix+" 2>/dev/null").CombinedOutput(); err != nil {
				t.Fatalf("%s: %v %s", fix, err, out)
			}
			c, err := node.DialSSH(ctxT(t), n)
			if err != nil {
				t.Fatalf("after ssh-keyscan: %v", err)
			}
			c.Close()
		})
	}
}

func TestHostKeyChanged(t *testing.T) {
	b := bed(t)
	nd := b.Nodes[0]
	kh := filepath.Join(t.TempDir(), "known_hosts")
	// Line 2 claims node0 has node1's key.
	content := testbed.KnownHostsLine("example.com", 22, nd.HostKey) + testbed.KnownHostsLine(nd.Host, nd.Port, b.Nodes[1].HostKey)
	if err := os.WriteFile(kh, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	n := nd.SDK()
	n.KnownHosts = kh
	_, err := node.DialSSH(ctxT(t), n)
	if !errors.Is(err, node.ErrHostKeyChanged) {
		t.Fatalf("want ErrHostKeyChanged, got %v", err)
	}
	var hk *node.HostKeyError
	if !errors.As(err, &hk) || len(hk.Want) != 1 || hk.Want[0].Line != 2 {
		t.Fatalf("want a *HostKeyError naming line 2, got %#v", err)
	}
	for _, want := range []string{"host key CHANGED for [" + nd.Host + "]:" + strconv.Itoa(nd.Port),
		"offered ssh-ed25519 " + ssh.FingerprintSHA256(nd.HostKey),
		kh + ":2 has ssh-ed25519 " + ssh.FingerprintSHA256(b.Nodes[1].HostKey),
		"refusing to connect", "ssh-keygen -R"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%s", want, err)
		}
	}
}

func TestHostKeyRevoked(t *testing.T) {
	b := bed(t)
	nd := b.Nodes[0]
	kh := filepath.Join(t.TempDir(), "known_hosts")
	content := "@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(nd.HostKey))) + "\n" +
		testbed.KnownHostsLine(nd.Host, nd.Port, nd.HostKey)
	if err := os.WriteFile(kh, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	n := nd.SDK()
	n.KnownHosts = kh
	if _, err := node.DialSSH(ctxT(t), n); !errors.Is(err, node.ErrHostKeyRevoked) {
		t.Fatalf("want ErrHostKeyRevoked, got %v", err)
	}
}

func TestAuthErrors(t *testing.T) {
	b := bed(t)
	dir := t.TempDir()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, _ := ssh.MarshalPrivateKey(priv, "stranger")
	stranger := filepath.Join(dir, "stranger")
	os.WriteFile(stranger, pem.EncodeToMemory(blk), 0o600)
	blk, _ = ssh.MarshalPrivateKeyWithPassphrase(priv, "locked", []byte("secret"))
	locked := filepath.Join(dir, "locked")
	os.WriteFile(locked, pem.EncodeToMemory(blk), 0o600)
	notKey := filepath.Join(dir, "notkey")
	os.WriteFile(notKey, []byte("hello"), 0o600)
	t.Setenv("SSH_AUTH_SOCK", "")

	tests := []struct{ identity, want string }{
		{stranger, "the node refused every key offered (identity_file " + stranger + ")"},
		{locked, "is protected by a passphrase: add it to ssh-agent"},
		{notKey, "is not a private key"},
		{filepath.Join(dir, "missing"), "no such file"},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.identity), func(t *testing.T) {
			n := b.Nodes[0].SDK()
			n.IdentityFile = tc.identity
			_, err := node.DialSSH(ctxT(t), n)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
	t.Run("no key at all", func(t *testing.T) {
		t.Setenv("HOME", dir) // no ~/.ssh keys there
		n := b.Nodes[0].SDK()
		n.IdentityFile = ""
		if _, err := node.DialSSH(ctxT(t), n); !errors.Is(err, node.ErrNoAuth) {
			t.Fatalf("want ErrNoAuth, got %v", err)
		}
	})
	t.Run("default key and known_hosts under HOME", func(t *testing.T) {
		home := t.TempDir()
		os.Mkdir(filepath.Join(home, ".ssh"), 0o700)
		key, _ := os.ReadFile(b.IdentityFile)
		os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), key, 0o600)
		kh, _ := os.ReadFile(b.KnownHosts)
		os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), kh, 0o600)
		t.Setenv("HOME", home)
		n := b.Nodes[1].SDK()
		n.IdentityFile, n.KnownHosts = "", ""
		c, err := node.DialSSH(ctxT(t), n)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
}

func TestConnectTimeout(t *testing.T) {
	bed(t)
	// A listener that accepts but never speaks SSH.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	n := bed(t).Nodes[0].SDK()
	n.Host, n.Port = "127.0.0.1", l.Addr().(*net.TCPAddr).Port
	n.Timeout = 200 * time.Millisecond
	opts, lines := notices(t)
	_, err = node.DialSSHWith(ctxT(t), n, opts)
	if len(lines()) == 0 {
		t.Error("no line said the timeout was retried")
	}
	// A timeout may pass: it is retried, within RetryWindow, then given up.
	if err == nil || !strings.Contains(err.Error(), "timeout") || !strings.Contains(err.Error(), "gave up after") {
		t.Fatalf("want a timeout error, retried, got %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
