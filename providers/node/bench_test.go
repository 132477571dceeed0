package node_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/nodehelper/helpertest"
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

// BenchmarkHelperCheck is what learning whether the node helper is there
// costs a plan's node check, on a node that has it: with become nothing
// (the held shell's ready line says it), without become one probe command
// (a session and one shell running builtins), or nothing while this
// machine's record that it saw the helper there is fresh (record=true).
// Per check: the node's CPU (node-cpu-ms, everything below its sshd
// listener, the connection's login included) and round trips; helper=false
// is the same check without a helper (SPARKFORM_NODE_HELPER=-), in the
// same run.
func BenchmarkHelperCheck(b *testing.B) {
	nd := bed(b).Nodes[0]
	for _, tc := range []struct{ become, helper, record bool }{
		{false, false, false}, {false, true, false}, {false, true, true}, {true, false, false}, {true, true, false},
	} {
		name := fmt.Sprintf("become=%t/helper=%t/record=%t", tc.become, tc.helper, tc.record)
		b.Run(name, func(b *testing.B) {
			n := nd.SDK()
			n.Become = tc.become
			cache := b.TempDir()
			b.Setenv("XDG_CACHE_HOME", cache)
			if tc.helper {
				b.Setenv(node.HelperDirEnv, bed(b).HelperDir)
				helpertest.Install(b, n)
			} else {
				b.Setenv(node.HelperEnv, "-")
			}
			ctx := ctxT(b)
			var cpu time.Duration
			var trips int64
			for b.Loop() {
				if !tc.record {
					os.RemoveAll(filepath.Join(cache, "sparkform"))
				}
				nd.WaitIdle(10 * time.Second)
				before, err := nd.ChildCPU()
				if err != nil {
					b.Fatal(err)
				}
				p := node.NewPool()
				if err := p.Check(ctx, n); err != nil {
					b.Fatal(err)
				}
				c, _ := p.Get(ctx, n)
				trips += c.RoundTrips()
				p.Close()
				nd.WaitIdle(10 * time.Second)
				after, err := nd.ChildCPU()
				if err != nil {
					b.Fatal(err)
				}
				cpu += after - before
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "node-cpu-ms")
			b.ReportMetric(float64(trips)/float64(b.N), "trips")
		})
	}
}

// BenchmarkNodeCPULoginAndSession splits what a node's CPU pays for SSH
// into its two kinds of work: a login (a new connection: sshd's re-exec,
// key exchange and authentication, then closing it), and one more session
// on a connection already open (sshd forks, the login shell runs `true`).
// node-cpu-ms is everything below the node's sshd listener, reaped once
// the connection has ended; a session's figure is its connection's total
// less one login, per session. It says where a plan's node cost can still
// go down: a login costs what dozens of sessions do.
func BenchmarkNodeCPULoginAndSession(b *testing.B) {
	nd := bed(b).Nodes[0]
	n := nd.SDK()
	ctx := ctxT(b)
	cpu := func() time.Duration {
		nd.WaitIdle(10 * time.Second)
		d, err := nd.ChildCPU()
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var login time.Duration
	b.Run("login", func(b *testing.B) {
		before := cpu()
		for b.Loop() {
			c, err := node.DialSSH(ctx, n)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
		login = (cpu() - before) / time.Duration(b.N)
		b.ReportMetric(ms(login), "node-cpu-ms")
	})
	b.Run("session", func(b *testing.B) {
		if login == 0 {
			b.Skip("needs the login figure: run both")
		}
		before := cpu()
		c, err := node.DialSSH(ctx, n)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := c.Run(ctx, node.Cmd{Argv: []string{"true"}}); err != nil {
				b.Fatal(err)
			}
		}
		c.Close()
		b.ReportMetric(ms((cpu()-before-login)/time.Duration(b.N)), "node-cpu-ms")
	})
}
