package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
)

// startProfiles writes pprof profiles when SPARKFORM_CPUPROFILE or
// SPARKFORM_MEMPROFILE name a file: how bench/ and developers see where
// time goes. A plugin process (role "plugin-NAME") writes next to it, to
// FILE.plugin-NAME.PID, so one run profiles every process it starts. The
// returned function finishes the profiles; it is a no-op when none is on.
func startProfiles(role string) func() {
	cpu, mem := os.Getenv("SPARKFORM_CPUPROFILE"), os.Getenv("SPARKFORM_MEMPROFILE")
	if cpu == "" && mem == "" {
		return func() {}
	}
	name := func(base string) string {
		if role == "" {
			return base
		}
		return fmt.Sprintf("%s.%s.%d", base, role, os.Getpid())
	}
	var cpuFile *os.File
	if cpu != "" {
		f, err := os.Create(name(cpu))
		if err == nil && pprof.StartCPUProfile(f) == nil {
			cpuFile = f
		} else {
			fmt.Fprintln(os.Stderr, "sparkform: SPARKFORM_CPUPROFILE:", err)
		}
	}
	return func() {
		if cpuFile != nil {
			pprof.StopCPUProfile()
			_ = cpuFile.Close()
		}
		if mem != "" {
			f, err := os.Create(name(mem))
			if err != nil {
				fmt.Fprintln(os.Stderr, "sparkform: SPARKFORM_MEMPROFILE:", err)
				return
			}
			runtime.GC()
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			_ = f.Close()
		}
	}
}

// gcPercent and memLimit trade a little memory for much less GC work: a
// plan or apply builds its heap once and keeps most of it to the end, so
// Go's default (collect at 2x the live heap) spends up to a third of the
// CPU re-marking the same objects. At 5x, bounded by a soft limit, the
// 10,000-instance bench stays under its 160 MiB budget (peak RSS ~140 MiB
// at 128 MiB; at 96 MiB the apply's heap ran into the limit and collected
// about twice as often, ~0.4 CPU s more). GOGC or GOMEMLIMIT in the
// environment win.
const (
	gcPercent = 400
	memLimit  = 128 << 20
)

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memLimit)
	}
}
