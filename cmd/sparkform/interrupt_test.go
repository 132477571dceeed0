package main

import "testing"

// TestLateInterruptCopyIsPassed: the console reads its copy of a Ctrl-C
// after the section that took it has ended (logs -f, which Ctrl-C ends,
// on a busy machine: TestScripts/status_logs failed with "signal:
// interrupt" under a loaded CI). The copy is passed; the next signal,
// outside any section, is not.
func TestLateInterruptCopyIsPassed(t *testing.T) {
	t.Cleanup(func() { interruptsHandled.Store(0); interruptsTaken.Store(0); interruptsPassed.Store(0) })
	// A section runs and takes the signal; its copy reaches the console
	// only after the section ended.
	interruptsHandled.Add(1)
	interruptsTaken.Add(1)
	interruptsHandled.Add(-1)
	if !passInterrupt() {
		t.Fatal("the late copy of a signal a section took ends the process")
	}
	if passInterrupt() {
		t.Fatal("a signal outside any section is passed")
	}
	// The console's copy read while the section still runs: passed, and
	// not again after it.
	interruptsHandled.Add(1)
	if !passInterrupt() {
		t.Fatal("a signal during a section ends the process")
	}
	interruptsTaken.Add(1)
	interruptsHandled.Add(-1)
	if passInterrupt() {
		t.Fatal("a signal after the section is passed: the section's own copy was counted twice")
	}
}
