package state

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// flockWait takes the flock how on f for a reader, waiting at most wait,
// and returns ErrBusy when it stays taken that long. On any error f is
// closed (or will be, once the wait in the kernel ends).
//
// It waits in the kernel, not by polling: a blocked flock is woken the
// moment the holder lets go, so a reader gets in at a busy writer's first
// gap between commits. A poll wakes on its own clock and sees a gap only
// if it happens to fall in one, which on a loaded machine it can fail to
// do for a second or more (TestReaderDuringApply).
func flockWait(f *os.File, how int, wait time.Duration) error {
	fd := int(f.Fd())
	err := syscall.Flock(fd, how|syscall.LOCK_NB)
	if err == nil {
		return nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return err
	}
	// flock(2) has no timeout: the blocking call runs on its own goroutine
	// and, if the wait is given up, closes f when it returns (its lock, if
	// it got one, goes with the file).
	done := make(chan error, 1)
	go func() {
		for {
			err := syscall.Flock(fd, how)
			if !errors.Is(err, syscall.EINTR) {
				done <- err
				return
			}
		}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
		}
		return err
	case <-timer.C:
		go func() {
			<-done
			f.Close()
		}()
		return ErrBusy
	}
}

// flockPoll is flockWait for a writer: it tries every fraction of a
// millisecond instead of waiting in the kernel. Woken by the kernel, a
// writer took the file back the moment a reader let go, so a read command
// of two transactions (OpenReadOnly's check, then the read) waited for
// the writer's next let-go between them: 82-89 ms (median) against 52
// while 10 goroutines commit (BenchmarkOpenReadDuringWrites). Polling, the
// writer lets it finish; a reader holds the file for one transaction at a
// time, so a writer is not kept out for long.
func flockPoll(f *os.File, how int, wait time.Duration) error {
	start, delay := time.Now(), 100*time.Microsecond
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return err
		}
		if time.Since(start) > wait {
			f.Close()
			return ErrBusy
		}
		time.Sleep(delay)
		delay = min(2*delay, 2*time.Millisecond)
	}
}
