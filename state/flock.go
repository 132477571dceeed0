package state

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// flockWait takes the flock how (LOCK_SH or LOCK_EX) on f, waiting at most
// wait, and returns ErrBusy when it stays taken that long. On any error f
// is closed (or will be, once the wait in the kernel ends).
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
