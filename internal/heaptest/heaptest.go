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
