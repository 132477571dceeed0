package main

import (
	"bytes"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// flushDelay is the longest a finished line waits in the buffer before it
// reaches stdout or stderr: a user watching a long apply sees each
// "Creating..." line as it happens, and a 10,000-instance apply makes
// tens of write calls instead of one per fragment (110,004 before).
const flushDelay = 50 * time.Millisecond

// flushSize is how much is buffered before whole lines are written out
// without waiting for the timer.
const flushSize = 64 << 10

// console buffers a command's stdout and stderr in one buffer, so what
// the two streams show keeps the order it was written in: a write to one
// stream first writes out what the other has pending. Buffered bytes go
// out flushDelay after they were written (whole lines only: a machine
// reading the -json stream never sees half a line), when flushSize is
// reached, and at every Flush: before a prompt, on exit, on an interrupt.
type console struct {
	stdout, stderr *stream

	mu      sync.Mutex
	pending *stream // whose bytes buf holds; nil when empty
	buf     []byte
	timer   *time.Timer
	armed   bool
}

// stream is one of the console's outputs: an io.Writer that buffers.
type stream struct {
	c   *console
	w   io.Writer
	err error // the first write error: later writes report it
}

var _ io.Writer = (*stream)(nil)

func newConsole(stdout, stderr io.Writer) *console {
	c := &console{}
	c.stdout, c.stderr = &stream{c: c, w: stdout}, &stream{c: c, w: stderr}
	c.timer = time.AfterFunc(time.Hour, c.flushLines)
	c.timer.Stop()
	return c
}

func (s *stream) Write(p []byte) (int, error) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending != s && len(c.buf) > 0 {
		c.writeOut(len(c.buf))
	}
	if s.err != nil {
		return 0, s.err
	}
	c.pending = s
	c.buf = append(c.buf, p...)
	if len(c.buf) >= flushSize {
		c.writeOut(lineEnd(c.buf, true))
	}
	if len(c.buf) > 0 && !c.armed {
		c.armed = true
		c.timer.Reset(flushDelay)
	}
	return len(p), nil
}

// lineEnd is how much of b is whole lines; all of it when there is no
// line end and all is true (one line longer than the buffer).
func lineEnd(b []byte, all bool) int {
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	if all {
		return len(b)
	}
	return 0
}

// writeOut writes the first n buffered bytes to their stream; c.mu held.
func (c *console) writeOut(n int) {
	if n == 0 {
		return
	}
	s := c.pending
	if s.err == nil {
		_, s.err = s.w.Write(c.buf[:n])
	}
	rest := copy(c.buf, c.buf[n:])
	c.buf = c.buf[:rest]
	if rest == 0 {
		c.pending = nil
		if cap(c.buf) > 4*flushSize {
			c.buf = nil // one big plan rendered: do not keep its buffer
		}
	}
}

// flushLines is the timer's flush: the whole lines written so far. A
// partial line waits for its end (or for Flush).
func (c *console) flushLines() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = false
	c.writeOut(lineEnd(c.buf, false))
}

// Flush writes out everything buffered, partial line included.
func (c *console) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeOut(len(c.buf))
	if c.armed {
		c.timer.Stop()
		c.armed = false
	}
}

// flushOutput flushes w's console when w is one of its streams.
func flushOutput(w io.Writer) {
	if s, ok := w.(*stream); ok {
		s.c.Flush()
	}
}

// outputFile is the file w writes to (through its console, if any), for
// asking whether it is a terminal.
func outputFile(w io.Writer) (*os.File, bool) {
	if s, ok := w.(*stream); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	return f, ok
}

// interruptsHandled counts the running interruptible sections (see
// meta.interruptible), which handle Ctrl-C themselves.
var interruptsHandled atomic.Int32

// interruptsTaken counts the signals interruptible sections received,
// interruptsPassed the console's copies of them it let pass. Every
// handler gets its own copy of a signal, and on a busy machine the
// console may read its copy after the section that took the signal has
// ended (logs -f ends by Ctrl-C): while taken > passed, such a late copy
// is still passed, not taken for an interrupt outside a section.
var interruptsTaken, interruptsPassed atomic.Int64

// passInterrupt says whether the console's copy of a signal belongs to an
// interruptible section (running, or ended since it took the signal).
func passInterrupt() bool {
	if interruptsHandled.Load() > 0 || interruptsTaken.Load() > interruptsPassed.Load() {
		interruptsPassed.Add(1)
		return true
	}
	return false
}

// flushOnSignal makes an interrupt or SIGTERM outside an interruptible
// section do what it did before output was buffered (end the process by
// that signal), after writing out what is buffered. The returned
// function stops it.
func (c *console) flushOnSignal() func() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if passInterrupt() {
					continue
				}
				c.Flush()
				signal.Reset(sig)
				_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}
