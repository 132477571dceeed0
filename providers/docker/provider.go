package docker

import (
	"context"
	"sync"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Resource type names.
const (
	TypeImage     = "docker_image"
	TypeContainer = "docker_container"
)

// provider is an sdk.Router for both types whose ReadResources reads a
// node's batch as one job: image inspects and container inspects do not
// depend on each other, so they run in one concurrent wave, and the cgroup
// command (which needs the containers' pids) follows. The Router would read
// type after type: three sequential round trips instead of two.
type provider struct {
	*sdk.Router
	clients   *clients
	image     *imageResource
	container *containerResource

	mu      sync.Mutex
	cancels map[*context.CancelFunc]struct{}
}

var _ sdk.Provider = (*provider)(nil)

// New returns the docker provider: docker_image and docker_container.
func New() sdk.Provider { return NewWithPool(node.NewPool()) }

// NewWithPool returns the docker provider reaching nodes through pool,
// which a plugin process serving several providers shares among them.
func NewWithPool(pool *node.Pool) sdk.Provider {
	cs := newClients(pool)
	img, ctr := &imageResource{clients: cs}, &containerResource{clients: cs}
	return &provider{
		Router:  &sdk.Router{Name: "docker", Resources: map[string]sdk.Resource{TypeImage: img, TypeContainer: ctr}},
		clients: cs, image: img, container: ctr,
	}
}

// ReadResources implements sdk.Provider. Results, diagnostics and their
// order are the Router's; only the waves overlap.
func (p *provider) ReadResources(ctx context.Context, req sdk.ReadRequest) sdk.ReadResponse {
	var imgIdx, ctrIdx []int
	for i, it := range req.Resources {
		switch it.TypeName {
		case TypeImage:
			imgIdx = append(imgIdx, i)
		case TypeContainer:
			ctrIdx = append(ctrIdx, i)
		default:
			return p.Router.ReadResources(ctx, req) // it reports the unknown type
		}
	}
	resp := sdk.ReadResponse{Results: make([]sdk.ReadResult, len(req.Resources))}
	if len(req.Resources) == 0 {
		return resp
	}
	ctx, done := p.track(ctx)
	defer done()
	d, err := p.clients.get(ctx, req.Node)
	if err != nil {
		resp.Diagnostics = sdk.Diagnostics{sdk.FromError("Cannot reach Docker on "+req.Node.Name, err)}
		return resp
	}
	pick := func(idx []int) []sdk.ReadItem {
		items := make([]sdk.ReadItem, len(idx))
		for j, i := range idx {
			items[j] = req.Resources[i]
		}
		return items
	}
	imgItems, ctrItems := pick(imgIdx), pick(ctrIdx)

	// Wave 1: every image inspect and container inspect, concurrently.
	imgRes := make([]sdk.ReadResult, len(imgItems))
	ids := containerRefs(ctrItems)
	ins := make([]inspected, len(ids))
	jobs := append(p.image.readJobs(ctx, d, imgItems, imgRes), inspectJobs(ctx, d, ids, ins)...)
	resp.RoundTrips = runWave(d.readParallel(), jobs)

	// Wave 2: the cgroup values of the running containers, one command.
	ctrRes, trips := p.container.finishRead(ctx, d, req.Node, ctrItems, ins)
	resp.RoundTrips += trips

	for j, i := range imgIdx {
		resp.Results[i] = imgRes[j]
	}
	for j, i := range ctrIdx {
		resp.Results[i] = ctrRes[j]
	}
	return resp
}

// track returns a context that Stop cancels (the Router tracks only the
// calls it serves itself).
func (p *provider) track(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	p.mu.Lock()
	if p.cancels == nil {
		p.cancels = make(map[*context.CancelFunc]struct{})
	}
	p.cancels[&cancel] = struct{}{}
	p.mu.Unlock()
	return ctx, func() {
		p.mu.Lock()
		delete(p.cancels, &cancel)
		p.mu.Unlock()
		cancel()
	}
}

// Stop implements sdk.Provider: it cancels every call in flight.
func (p *provider) Stop(ctx context.Context) error {
	p.mu.Lock()
	for c := range p.cancels {
		(*c)()
	}
	p.mu.Unlock()
	return p.Router.Stop(ctx)
}
