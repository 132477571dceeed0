// Package heaptest measures what values keep on the heap, for tests that
// hold a structure's bytes per item to a bound.
package heaptest

import "runtime"

// Live is the heap in use after two collections: the second empties the
// sync.Pools (bbolt's page buffers among them), which a single one only
// moves aside, so what a test measures is what its values keep.
func Live() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Added is the live heap, per one of n things, that build adds: Live
// before and after it runs. What build makes must stay referenced (by
// variables build sets) until Added returns.
func Added(n int, build func()) int64 {
	before := Live()
	build()
	return (int64(Live()) - int64(before)) / int64(n)
}

// Held is the live heap, per one of n things, that drop lets go of: Live
// before and after drop clears the last reference to them.
func Held(n int, drop func()) int64 {
	with := Live()
	drop()
	return (int64(with) - int64(Live())) / int64(n)
}
