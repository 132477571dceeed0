package main

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// TestNoMemoryLimit: the shipped GC settings set no soft memory limit (a
// limit near the live heap made the collector take ~54 % of a
// 10,000-block apply's CPU) and collect at GOGC=150.
func TestNoMemoryLimit(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT set in the environment")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	tuneGC()
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		t.Errorf("tuneGC set a memory limit of %d MiB; it trades CPU for memory", limit>>20)
	}
	if p := debug.SetGCPercent(150); p != 150 {
		t.Errorf("GOGC = %d, want %d", p, gcPercent)
	}
}
