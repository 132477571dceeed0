package testbed

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// StartBehindJumps starts n target nodes that this process cannot reach:
// only through jumps jump hosts, in order. Each jump host runs in its own
// network namespace, linked by a veth pair to the previous one (the first
// to this namespace); the targets listen on the last namespace's loopback
// (127.0.1.10, ...). A namespace does not forward, so hop i reaches hop
// i+1 and nothing further: the only way to a target is the whole chain.
// Bed.Jumps lists the jump hosts, the first reachable from here; the
// known_hosts file has every host's key under the address a client dials.
//
// It needs what Start needs plus `ip` (iproute2) and the right to create
// network namespaces (root).
func StartBehindJumps(dir string, jumps, n int) (*Bed, error) {
	if jumps < 1 || n < 1 {
		return nil, fmt.Errorf("testbed: need at least one jump host and one node, got %d and %d", jumps, n)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("%w: ip not found (apt-get install iproute2)", ErrUnavailable)
	}
	b := &Bed{User: User, NoSudoUser: NoSudoUser}
	if dir == "" {
		d, err := os.MkdirTemp("", "sparkform-testbed-")
		if err != nil {
			return nil, err
		}
		dir, b.ownsDir = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	b.Dir = dir
	specs, err := b.makeChain(jumps)
	if err != nil {
		b.Stop()
		return nil, err
	}
	last := specs[len(specs)-1].netns
	for i := 0; i < n; i++ {
		specs = append(specs, nodeSpec{name: "node" + strconv.Itoa(i), host: "127.0.1." + strconv.Itoa(10+i%240), netns: last})
	}
	if err := b.start(specs); err != nil {
		b.Stop()
		return nil, err
	}
	return b, nil
}

// makeChain creates the namespaces and links of the jump hosts and
// returns their specs. Addresses are 10.X.Y.(4i+1) (the near side) and
// 10.X.Y.(4i+2) (the jump host) with a random X.Y, so concurrent beds do
// not collide.
func (b *Bed) makeChain(jumps int) ([]nodeSpec, error) {
	var tag [3]byte
	if _, err := rand.Read(tag[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(tag[:])
	net := "10." + strconv.Itoa(200+int(tag[0])%50) + "." + strconv.Itoa(int(tag[1])) + "."
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("testbed: ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	var specs []nodeSpec
	for i := 0; i < jumps; i++ {
		ns := "sfbed-" + id + "-" + strconv.Itoa(i)
		if err := ip("netns", "add", ns); err != nil {
			return nil, err
		}
		b.netns = append(b.netns, ns)
		near, far := "sf"+id+strconv.Itoa(i)+"a", "sf"+id+strconv.Itoa(i)+"b"
		nearAddr, farAddr := net+strconv.Itoa(4*i+1), net+strconv.Itoa(4*i+2)
		steps := [][]string{
			{"-n", ns, "link", "set", "lo", "up"},
			{"link", "add", near, "type", "veth", "peer", "name", far},
			{"link", "set", far, "netns", ns},
			{"-n", ns, "addr", "add", farAddr + "/30", "dev", far},
			{"-n", ns, "link", "set", far, "up"},
		}
		if i == 0 {
			steps = append(steps, []string{"addr", "add", nearAddr + "/30", "dev", near}, []string{"link", "set", near, "up"})
		} else {
			prev := b.netns[i-1]
			steps = append(steps, []string{"link", "set", near, "netns", prev},
				[]string{"-n", prev, "addr", "add", nearAddr + "/30", "dev", near}, []string{"-n", prev, "link", "set", near, "up"})
		}
		for _, st := range steps {
			if err := ip(st...); err != nil {
				return nil, err
			}
		}
		specs = append(specs, nodeSpec{name: "jump" + strconv.Itoa(i), host: farAddr, netns: ns, jump: true})
	}
	return specs, nil
}

// Kill stops n's sshd (and its connections), as a restart or crash
// would; Revive starts it again on the same address, port and host key.
func (n *Node) Kill() error { return n.stopSSHD() }

// Revive starts a killed node's sshd again.
func (n *Node) Revive() error {
	if n.cmd != nil {
		return fmt.Errorf("testbed: %s: sshd is running", n.Name)
	}
	return n.tryStart(n.hostKeyFile(), n.authKeys)
}

func randUint32() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:])
}
