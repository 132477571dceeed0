package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sparkform/sparkform/providers/sdk"
)

// Pool keeps one shared connection per distinct sdk.Node (by Node.Key()).
// Concurrent Gets for one node share a single dial; a connection found
// broken is redialled on the next Get.
type Pool struct {
	mu     sync.Mutex
	conns  map[string]*poolEntry
	closed bool
	dials  atomic.Int64
	opts   Options // given to every connection it dials
}

type poolEntry struct {
	ready chan struct{} // closed when conn/err are set
	conn  Conn
	err   error
	// prewarm marks a dial that Prewarm started: its failure is kept for
	// the first Get (which reports it, as if it had dialled itself)
	// instead of being dialled again.
	prewarm bool
	// become, when Prewarm ran Check's `sudo -n true` on the connection,
	// is closed once becomeErr holds its result (for the first Check).
	become      chan struct{}
	becomeErr   error
	becomeTaken bool
}

// NewPool returns an empty pool.
func NewPool() *Pool { return NewPoolWith(Options{}) }

// NewPoolWith returns an empty pool whose connections report to o.
func NewPoolWith(o Options) *Pool { return &Pool{conns: map[string]*poolEntry{}, opts: o} }

// Dials is how many connections the pool has tried to open (for tests and
// diagnostics: one per node unless connections broke).
func (p *Pool) Dials() int64 { return p.dials.Load() }

// Open dials a fresh, unshared connection for n by its transport: "ssh"
// or "" -> SSH, "local" -> Local. In a plugin that sparkform started with
// a Relay (sdk.RelayEnv is set), an SSH node is reached through the
// relay: the sparkform process's one connection to the node.
func Open(ctx context.Context, n sdk.Node) (Conn, error) { return openWith(ctx, n, Options{}) }

// openWith is Open with o for the connection.
func openWith(ctx context.Context, n sdk.Node, o Options) (Conn, error) {
	switch n.Transport {
	case "local":
		l := NewLocal(n.Name)
		l.opts = o
		return l, nil
	case "ssh", "":
		ra, err := relayFromEnv()
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		if ra != nil {
			return dialRelay(ctx, ra, n, o)
		}
		return DialSSHWith(ctx, n, o)
	}
	return nil, fmt.Errorf("node %s: %w %q: use \"ssh\" (the default) or \"local\"", n.Name, ErrTransport, n.Transport)
}

// Get returns the shared connection for n, dialling it on first use.
// Callers must not Close it; Pool.Close does.
func (p *Pool) Get(ctx context.Context, n sdk.Node) (Conn, error) {
	if n.Transport == "" {
		n.Transport = "ssh" // same connection as an explicit "ssh"
	}
	key := n.Key()
	for {
		e, err := p.entry(ctx, key, n, false)
		if err != nil {
			return nil, err
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err != nil {
			p.mu.Lock()
			if p.conns[key] == e {
				delete(p.conns, key) // a prewarm's failure is reported once
			}
			p.mu.Unlock()
			return nil, e.err
		}
		if a, ok := e.conn.(interface{ alive() bool }); !ok || a.alive() {
			return e.conn, nil
		}
		// Broken: drop it (once) and dial again.
		p.mu.Lock()
		if p.conns[key] == e {
			delete(p.conns, key)
			e.conn.Close()
		}
		p.mu.Unlock()
	}
}

// Prewarm starts dialling n now, for a Get (or Check) that will come:
// the sparkform process dials its nodes while its plugins start, so the
// handshake is not on the plan's critical path. It is the very dial a
// Get would make (host keys, retries, Notify lines); a Get that comes
// while it runs waits for it, and one that comes after it failed gets
// its error once (the Get after that dials again). A node already in
// the pool is left as it is.
//
// With n.Become it also runs Check's `sudo -n true` once connected, and
// the first Check takes that result instead of running it again.
func (p *Pool) Prewarm(n sdk.Node) {
	if n.Transport == "" {
		n.Transport = "ssh"
	}
	e, err := p.entry(context.Background(), n.Key(), n, true)
	if err != nil || !n.Become {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !e.prewarm || e.become != nil {
		return // dialled by a Get, or already checking
	}
	e.become = make(chan struct{})
	go func() {
		defer close(e.become)
		<-e.ready
		if e.err != nil {
			e.becomeErr = e.err // the check reports the dial's error
			return
		}
		e.becomeErr = prepareBecome(context.Background(), e.conn)
	}()
}

// becomeCheck is what Check runs on a node that becomes root, unless the
// connection holds a privileged shell (prepareBecome).
var becomeCheck = Cmd{Argv: []string{"true"}, Become: true}

// prepareBecome checks that conn may become root: over SSH by starting the
// privileged shell it holds for the next Become command (held.go), else
// by running becomeCheck.
func prepareBecome(ctx context.Context, conn Conn) error {
	if p, ok := conn.(interface{ PrepareBecome(context.Context) error }); ok {
		return p.PrepareBecome(ctx)
	}
	_, err := conn.Run(ctx, becomeCheck)
	return err
}

// takeBecome returns, once, the entry of n whose prewarmed become check
// ran on conn (its result is e.becomeErr when e.become is closed); nil
// when there is none.
func (p *Pool) takeBecome(n sdk.Node, conn Conn) *poolEntry {
	if n.Transport == "" {
		n.Transport = "ssh"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.conns[n.Key()]
	if e == nil || e.become == nil || e.becomeTaken || e.conn != conn {
		return nil
	}
	e.becomeTaken = true
	return e
}

// entry returns the pool's entry for key, starting its dial when there is
// none.
func (p *Pool) entry(ctx context.Context, key string, n sdk.Node, prewarm bool) (*poolEntry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("node %s: pool: %w", n.Name, ErrClosed)
	}
	e, ok := p.conns[key]
	if !ok {
		e = &poolEntry{ready: make(chan struct{}), prewarm: prewarm}
		p.conns[key] = e
		p.dials.Add(1)
		// The dial outlives a caller that gives up: others may wait on it.
		go p.dial(context.WithoutCancel(ctx), key, n, e)
	}
	return e, nil
}

func (p *Pool) dial(ctx context.Context, key string, n sdk.Node, e *poolEntry) {
	conn, err := openWith(ctx, n, p.opts)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err != nil && e.prewarm && !p.closed:
		e.err = err // kept for the first Get, which removes it
	case err != nil:
		e.err = err
		delete(p.conns, key) // the next Get tries again
	case p.closed:
		conn.Close()
		e.err = fmt.Errorf("node %s: pool: %w", n.Name, ErrClosed)
	default:
		e.conn = conn
	}
	close(e.ready)
}

// Close closes every connection; later Gets fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for k, e := range p.conns {
		select {
		case <-e.ready:
			if e.conn != nil {
				e.conn.Close()
			}
		default: // still dialling: dial closes it when done
		}
		delete(p.conns, k)
	}
	return nil
}
