package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// defaultStopTimeout is the Docker Engine's own grace period (docker stop's
// -t) for a container that sets none.
const defaultStopTimeout = 10

// stopContainer ends the container's process the way `docker stop` does (its
// stop signal, then SIGKILL once the grace period is over) but keeps the
// waiting on this side. The Engine carries its own stop on after the client
// is gone (a killed sparkform, a dropped SSH link: the daemon detaches the
// request from its connection) and would stop the container minutes later,
// behind the back of the apply that converges next, which has just recorded
// it running. A signal sent from here is all a killed run leaves behind.
//
// A killed container is not restarted by its restart policy: the Engine
// marks a container stopped by hand on kill as on stop.
func stopContainer(ctx context.Context, d *dockerClient, id string, timeout *int) error {
	res, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	ins := res.Container
	if ins.State == nil || !ins.State.Running {
		return nil
	}
	grace := defaultStopTimeout
	switch {
	case timeout != nil:
		grace = *timeout
	case ins.Config != nil && ins.Config.StopTimeout != nil:
		grace = *ins.Config.StopTimeout
	}
	signal := "SIGTERM"
	if ins.Config != nil && ins.Config.StopSignal != "" {
		signal = ins.Config.StopSignal
	}
	if grace > 0 {
		if err := killIfRunning(ctx, d, id, signal); err != nil {
			return err
		}
		if exited, err := waitNotRunning(ctx, d, id, time.Duration(grace)*time.Second); err != nil || exited {
			return err
		}
	}
	if err := killIfRunning(ctx, d, id, "SIGKILL"); err != nil {
		return err
	}
	// SIGKILL cannot be ignored; the bound only keeps a wedged Engine from
	// holding the apply for ever.
	if exited, err := waitNotRunning(ctx, d, id, time.Minute); err != nil || exited {
		return err
	}
	return fmt.Errorf("container %s still runs a minute after SIGKILL", id)
}

// killIfRunning sends signal; a container that has already exited (or is
// gone) needs none.
func killIfRunning(ctx context.Context, d *dockerClient, id, signal string) error {
	_, err := d.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: signal})
	if err == nil || isNotFound(err) || isNotRunning(err) {
		return nil
	}
	return fmt.Errorf("send %s: %w", signal, err)
}

// waitNotRunning waits up to limit for the container to stop running. It
// says false, nil when the limit passed first.
func waitNotRunning(ctx context.Context, d *dockerClient, id string, limit time.Duration) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	w := d.api.ContainerWait(wctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
		return true, nil
	case err := <-w.Error:
		switch {
		case isNotFound(err):
			return true, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case wctx.Err() != nil:
			return false, nil
		}
		return false, err
	}
}
