package kmod_test

import (
	"context"
	"testing"

	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// testNode is one node the tests run on.
type testNode struct {
	name string
	get  func(t *testing.T) sdk.Node
}

// nodes lists the nodes every table test runs on: the local node, and an
// sshd node of the real test bed reached with become (sudo -n).
func nodes() []testNode {
	return []testNode{
		{"local", func(*testing.T) sdk.Node { return sdk.Node{Name: "local", Transport: "local", Become: true} }},
		{"sshd", func(t *testing.T) sdk.Node {
			b := testbed.StartT(t, 1)
			n := b.Nodes[0].SDK()
			n.Become = true
			c, err := node.NewPool().Get(context.Background(), n)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			return n
		}},
	}
}
