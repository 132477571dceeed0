// This file holds the engine's graph vertices: a vertex is a kind and an
// address, built typed where it is made and dispatched on by kind. The
// graph package names vertices by strings; vgraph keeps the typed vertex
// behind each name, so no code here learns a kind from a name's text.

package engine

import (
	"context"
	"strings"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/graph"
)

// vertexKind says what a vertex stands for.
type vertexKind uint8

const (
	localVertex    vertexKind = iota + 1 // local value; addr is its name
	nodeVertex                           // node block; addr is its name
	resourceVertex                       // resource block; addr is "type.name"
	outputVertex                         // output; addr is its name
	// instanceVertex: one instance of a block whose keys are known before
	// the walk; addr is the instance address.
	instanceVertexKind
	// destroyVertex: apply deletes one instance (or the old half of a
	// replacement); addr is the instance address.
	destroyVertex
	// destroyAllVertex: every destroyVertex of one resource, so others can
	// wait for them together; addr is "type.name". It does no work. A
	// resource with one destroy step has none (see destroyAll).
	destroyAllVertex
)

// vertex is one vertex of a configuration or walk graph.
type vertex struct {
	kind vertexKind
	addr string
}

func localV(name string) vertex      { return vertex{localVertex, name} }
func nodeV(name string) vertex       { return vertex{nodeVertex, name} }
func resourceV(addr string) vertex   { return vertex{resourceVertex, addr} }
func outputV(name string) vertex     { return vertex{outputVertex, name} }
func instanceV(addr string) vertex   { return vertex{instanceVertexKind, addr} }
func destroyV(addr string) vertex    { return vertex{destroyVertex, addr} }
func destroyAllV(addr string) vertex { return vertex{destroyAllVertex, addr} }

// String is the vertex's name in the graph, in messages and in `sparkform
// graph`: "local.x", "node.x", "type.name", "output.x", "instance ADDR",
// "destroy ADDR", "destroyall type.name".
func (v vertex) String() string {
	switch v.kind {
	case localVertex:
		if strings.HasPrefix(v.addr, "module.") {
			// A flattened module value (config.Flatten) is named by its
			// address already: module.m["a"].var.x, module.m.
			return v.addr
		}
		return "local." + v.addr
	case nodeVertex:
		return addrs.NodeBlock{Name: v.addr}.String()
	case outputVertex:
		return "output." + v.addr
	case instanceVertexKind:
		return "instance " + v.addr
	case destroyVertex:
		return "destroy " + v.addr
	case destroyAllVertex:
		return "destroyall " + v.addr
	}
	return v.addr
}

// vgraph is a graph.Graph of typed vertices.
type vgraph struct {
	g *graph.Graph
	// verts is the typed vertex behind each of g's, by g's index: a map
	// by name beside g's own was ~150 B per vertex of a walk graph.
	verts []vertex
}

func newVGraph() *vgraph { return newVGraphSized(0) }

// newVGraphSized is a vgraph with room for n vertices.
func newVGraphSized(n int) *vgraph {
	return &vgraph{g: graph.NewSized(n), verts: make([]vertex, 0, n)}
}

func (g *vgraph) add(v vertex) { g.addNamed(v) }

// addNamed adds v when missing and returns its name (built once: an
// instance's is a new string).
func (g *vgraph) addNamed(v vertex) string {
	name := v.String()
	if !g.g.Has(name) {
		g.g.Add(name) // index len(g.verts)
		g.verts = append(g.verts, v)
	}
	return name
}

func (g *vgraph) has(v vertex) bool { return g.g.Has(v.String()) }

// connect records that v depends on dep, adding both when missing.
func (g *vgraph) connect(v, dep vertex) {
	g.g.Connect(g.addNamed(v), g.addNamed(dep))
}

// named is the vertex called name in this graph.
func (g *vgraph) named(name string) vertex {
	if i, ok := g.g.Index(name); ok {
		return g.verts[i]
	}
	return vertex{}
}

func (g *vgraph) typed(names []string) []vertex {
	out := make([]vertex, len(names))
	for i, n := range names {
		out[i] = g.named(n)
	}
	return out
}

// vertices returns every vertex in insertion order.
func (g *vgraph) vertices() []vertex { return g.typed(g.g.Vertices()) }

// dependsOn returns what v depends on, ordered by name.
func (g *vgraph) dependsOn(v vertex) []vertex { return g.typed(g.g.DependsOn(v.String())) }

// topoOrder returns the vertices, each after what it depends on.
func (g *vgraph) topoOrder() ([]vertex, error) {
	names, err := g.g.TopoOrder()
	return g.typed(names), err
}

// walk runs fn on every vertex in dependency order (graph.Walk); the
// errors are keyed by vertex name.
func (g *vgraph) walk(ctx context.Context, parallelism int, fn func(context.Context, vertex) error) map[string]error {
	return g.g.Walk(ctx, parallelism, func(ctx context.Context, name string) error {
		return fn(ctx, g.named(name))
	})
}

// subgraph copies g, keeping only the vertices keep accepts and the edges
// between them.
func (g *vgraph) subgraph(keep func(vertex) bool) *vgraph {
	out := newVGraph()
	for _, v := range g.vertices() {
		if !keep(v) {
			continue
		}
		out.add(v)
		for _, d := range g.dependsOn(v) {
			if keep(d) {
				out.connect(v, d)
			}
		}
	}
	return out
}
