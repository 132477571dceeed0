package node

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/sparkform/sparkform/providers/sdk"
)

// TestCheckExplains: each way a node cannot be reached says what to check.
// Real sockets on loopback: a closed port, a listener that never speaks
// SSH (the handshake times out), a name that does not resolve.
func TestCheckExplains(t *testing.T) {
	// The refused and timeout cases are retried first; their retry lines
	// are tested in jump_test.go.
	quiet := NewPoolWith(Options{Notify: func(string) {}})
	t.Cleanup(func() { quiet.Close() })
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	silentPort := silent.Addr().(*net.TCPAddr).Port

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := t.TempDir() + "/id"
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		node sdk.Node
		want string
	}{
		// A refused connection is retried for RetryWindow (5s at most
		// for this timeout) before it is explained.
		{"refused", sdk.Node{Name: "node.a", Host: "127.0.0.1", Port: closedPort, Timeout: time.Second},
			"connection refused: check that sshd is running on 127.0.0.1 and listens on port"},
		{"timeout", sdk.Node{Name: "node.a", Host: "127.0.0.1", Port: silentPort, Timeout: 300 * time.Millisecond},
			"no answer from 127.0.0.1:"},
		{"dns", sdk.Node{Name: "node.a", Host: "no-such-node.invalid", Port: 22},
			`the host name "no-such-node.invalid" does not resolve`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.node.Transport = "ssh"
			tc.node.User = "nobody"
			tc.node.KnownHosts = t.TempDir() + "/known_hosts"
			tc.node.IdentityFile = keyFile
			err := quiet.Check(context.Background(), tc.node)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
