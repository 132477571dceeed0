package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// startProfiles writes pprof profiles when SPARKFORM_CPUPROFILE or
// SPARKFORM_MEMPROFILE name a file: how bench/ and developers see where
// time goes. A plugin process (role "plugin-NAME", or "plugin-builtin"
// for the one process of all built-in providers) writes next to it, to
// FILE.plugin-NAME.PID, so one run profiles every process it starts. The
// returned function finishes the profiles; it is a no-op when none is on.
func startProfiles(role string) func() {
	cpu, mem, peak := os.Getenv("SPARKFORM_CPUPROFILE"), os.Getenv("SPARKFORM_MEMPROFILE"), os.Getenv("SPARKFORM_HEAPPEAK")
	if cpu == "" && mem == "" && peak == "" {
		return func() {}
	}
	name := func(base string) string {
		if role == "" {
			return base
		}
		return fmt.Sprintf("%s.%s.%d", base, role, os.Getpid())
	}
	if peak != "" {
		go watchHeapPeak(name(peak))
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

// watchHeapPeak keeps, in file, the heap profile of the largest live heap
// seen so far (SPARKFORM_HEAPPEAK): what is live at peak RSS, which the
// allocs profile written at exit (after the walk let go of it) does not
// show. It looks every 50 ms and writes only when the live heap grew by
// more than 5 % since the last profile, after a collection of its own (so
// the profile is of that heap, not of one two collections old).
func watchHeapPeak(file string) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var written uint64
	for range time.Tick(50 * time.Millisecond) {
		metrics.Read(sample)
		live := sample[0].Value.Uint64()
		if live <= written+written/20 {
			continue
		}
		written = live
		// A heap profile shows the heap as of the last completed
		// collection but one; collect now so it shows this one.
		runtime.GC()
		f, err := os.Create(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sparkform: SPARKFORM_HEAPPEAK:", err)
			return
		}
		_ = pprof.Lookup("heap").WriteTo(f, 0)
		_ = f.Close()
	}
}

// gcPercent trades some memory for less collector work, and nothing
// trades CPU for memory: there is no soft memory limit. A plan or apply
// builds its heap once and keeps most of it to the end; the collector's
// work is about (bytes allocated) x 100 / GOGC, whatever the live heap.
// The 128 MiB limit shipped before made the collector run almost
// continuously once the live heap neared it (~54 % of a 10,000-block
// apply's CPU). Measured on that apply (bench/run.sh -b, no limit): GOGC
// 100: collector ~17 % of CPU, peak RSS ~215 MiB; 150: ~13 %, ~250 MiB;
// 400: ~6 %, ~430 MiB. GOGC or GOMEMLIMIT in the environment win (the
// runtime reads them itself).
const gcPercent = 150

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
