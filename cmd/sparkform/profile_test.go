package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestNoMemoryLimit: the shipped GC settings set no soft memory limit (a
// limit near the live heap made the collector take ~54 % of a
// 10,000-block apply's CPU) and collect at GOGC=150.
func TestNoMemoryLimit(t *testing.T) {
	// tuneGC leaves the runtime alone when the user sets either; clear
	// them so the shipped settings are what is checked, whatever the
	// caller's environment.
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
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
