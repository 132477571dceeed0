package node_test

import (
	"sync"
	"testing"

	"github.com/sparkform/sparkform/providers/node"
)

// TestRelayRepliesBeforeClose: many short commands on fresh relay
// connections, as plugins run them at plan. The node answers "exec", runs
// the command and closes the channel at once; the plugin must still get
// the exec reply before the close (it got EOF, "start command: EOF", in
// about one run of this test in two before the relay ordered them).
func TestRelayRepliesBeforeClose(t *testing.T) {
	b := bed(t)
	for it := range 40 {
		p := node.NewPool()
		r, err := node.NewRelay(p)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 2 {
			n := b.Nodes[i].SDK()
			n.Become = true
			wg.Go(func() {
				if err := p.Check(ctxT(t), n); err != nil {
					t.Error(err)
					return
				}
				var plugins sync.WaitGroup
				for range 4 {
					plugins.Go(func() {
						c, err := r.Dial(ctxT(t), n)
						if err != nil {
							t.Error(err)
							return
						}
						defer c.Close()
						for range 2 {
							if _, err := c.Run(ctxT(t), node.Cmd{Argv: []string{"true"}}); err != nil {
								t.Errorf("iteration %d: %v", it, err)
							}
						}
					})
				}
				plugins.Wait()
			})
		}
		wg.Wait()
		r.Close()
		p.Close()
	}
}
