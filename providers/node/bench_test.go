package node_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
)

func benchTransports(b *testing.B) map[string]node.Conn {
	bed(b)
	return map[string]node.Conn{"ssh": dial(b, 0), "local": node.NewLocal("local")}
}

// BenchmarkRunTrue is the cost of one command: a new SSH session on an
// open connection, or a fork/exec locally.
func BenchmarkRunTrue(b *testing.B) {
	for name, c := range benchTransports(b) {
		b.Run(name, func(b *testing.B) {
			ctx := ctxT(b)
			for b.Loop() {
				if _, err := c.Run(ctx, node.Cmd{Argv: []string{"true"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadFile reads a 64 KiB file (over sftp for ssh).
func BenchmarkReadFile(b *testing.B) {
	data := bytes.Repeat([]byte("x"), 64<<10)
	for name, c := range benchTransports(b) {
		b.Run(name, func(b *testing.B) {
			ctx := ctxT(b)
			f := filepath.Join(bed(b).Nodes[0].Root, "bench-"+name)
			if err := c.WriteFile(ctx, f, data, 0o644); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := c.ReadFile(ctx, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStat is one sftp request/response.
func BenchmarkStat(b *testing.B) {
	for name, c := range benchTransports(b) {
		b.Run(name, func(b *testing.B) {
			ctx := ctxT(b)
			for b.Loop() {
				if _, err := c.Stat(ctx, "/etc/hostname"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRelayDial is what one more relay connection costs a plan: a
// plugin's dial of the core's relay (a local SSH handshake and the node
// request), both sides in this process, on a node already connected. A
// plugin process whose providers share one Pool makes one per node, not
// one per provider.
func BenchmarkRelayDial(b *testing.B) {
	n := bed(b).Nodes[0].SDK()
	p, r := newRelay(b)
	ctx := ctxT(b)
	if _, err := p.Get(ctx, n); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c, err := r.Dial(ctx, n)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkDialCheck is what reaching a node costs a plan before it reads
// anything: a new connection (TCP, handshake, login) and the node check's
// `sudo -n true`, then closing it. sshd sends the channel confirmation
// right after a packet that needs no answer; before quickACK the client's
// delayed ACK held it for up to 40 ms.
func BenchmarkDialCheck(b *testing.B) {
	n := bed(b).Nodes[0].SDK()
	n.Become = true
	ctx := ctxT(b)
	for b.Loop() {
		if err := node.Check(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
}
