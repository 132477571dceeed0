// Package graph is the dependency graph of the engine: a directed acyclic
// graph of string-named vertices, cycle detection that names each cycle,
// and a bounded parallel walker.
//
// Edges point from a vertex to what it depends on. Walk runs a vertex only
// after everything it depends on has succeeded; when a vertex fails, only
// the vertices that depend on it (transitively) are skipped, and independent
// branches run to the end. The cost of building and walking is O(V + E).
package graph
