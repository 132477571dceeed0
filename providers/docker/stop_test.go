package docker

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestInterruptedStopLeavesNothingInFlight: a destroy killed while it
// waits for a container to stop (sparkform killed, the SSH link cut) must
// not leave a stop running in the Docker Engine that lands later, behind
// the back of the next apply (found by make torture: the converging apply
// recorded the container running, the Engine's carried-on `docker stop`
// stopped it a few seconds after). Before the fix, the container below was
// stopped by the Engine once its grace period ran out.
func TestInterruptedStopLeavesNothingInFlight(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	const name = "sparkform-test-interrupted-stop"
	cleanupContainer(t, api, name)
	// PID 1 without a TERM handler ignores SIGTERM: only the SIGKILL at the
	// end of the grace period stops it, as with many serving processes.
	byHand(t, "run", "-d", "--name", name, "--stop-timeout", "3", "--restart", "unless-stopped",
		"--entrypoint", "/bin/busybox", guardImage, "sleep", "600")

	r, d := localClient(t)
	ins, err := api.ContainerInspect(context.Background(), name, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prior := priorOf(t, r, ins.Container.ID, name, 3)

	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if err := r.remove(ctx, d, prior, func(sdk.Progress) {}); err == nil {
		t.Fatal("remove returned without error though its context ended during the grace period")
	}
	// Past the grace period: nothing may have stopped it.
	time.Sleep(5 * time.Second)
	after, err := api.ContainerInspect(context.Background(), name, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("container gone after an interrupted stop: %v", err)
	}
	if !after.Container.State.Running {
		t.Fatalf("container stopped %s after the interrupted destroy (status %s): a stop went on in the Engine",
			after.Container.State.FinishedAt, after.Container.State.Status)
	}

	// The destroy run again stops it within the grace period (SIGKILL at its
	// end) and removes it; its restart policy does not bring it back.
	start := time.Now()
	if err := r.remove(context.Background(), d, prior, func(sdk.Progress) {}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("stop took %v: the 3 s grace period was not given", took)
	}
	if _, err := api.ContainerInspect(context.Background(), name, client.ContainerInspectOptions{}); !isNotFound(err) {
		t.Fatalf("container still there after destroy: %v", err)
	}
}

// TestStopHonoursTheStopSignal: a process that exits on its stop signal is
// not held for the grace period, and one that has already exited needs no
// signal.
func TestStopHonoursTheStopSignal(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	const name = "sparkform-test-stop-signal"
	cleanupContainer(t, api, name)
	byHand(t, "run", "-d", "--name", name, "--stop-signal", "SIGUSR1", "--stop-timeout", "30",
		"--entrypoint", "/bin/busybox", guardImage, "sh", "-c", `trap "exit 7" USR1; echo trapped; while :; do sleep 0.1; done`)
	waitForLog(t, name, "trapped") // a signal before the trap is set is ignored by PID 1
	_, d := localClient(t)
	start := time.Now()
	if err := stopContainer(context.Background(), d, name, nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("stop took %v: the stop signal (SIGUSR1) was not sent", took)
	}
	ins, err := api.ContainerInspect(context.Background(), name, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ins.Container.State.Running || ins.Container.State.ExitCode != 7 {
		t.Fatalf("after stop: running %v exit %d, want stopped by its trap (exit 7)", ins.Container.State.Running, ins.Container.State.ExitCode)
	}
	if err := stopContainer(context.Background(), d, name, nil); err != nil {
		t.Fatalf("stop of an exited container: %v", err)
	}
}

// localClient is a container resource and its client of the local node's
// Docker Engine.
func localClient(t *testing.T) (*containerResource, *dockerClient) {
	t.Helper()
	pool := node.NewPool()
	t.Cleanup(func() { pool.Close() })
	r := &containerResource{clients: newClients(pool)}
	d, err := r.clients.get(context.Background(), sdk.Node{Name: "local", Transport: "local"})
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}

// waitForLog waits until the container has printed want.
func waitForLog(t *testing.T, name, want string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		out, _ := exec.Command("docker", "logs", name).CombinedOutput()
		if strings.Contains(string(out), want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("container %s never printed %q", name, want)
}

// priorOf is a state value with what remove reads: id, name, stop_timeout.
func priorOf(t *testing.T, r *containerResource, id, name string, stopTimeout int64) cty.Value {
	t.Helper()
	ty := r.Schema().Block.ImpliedType()
	attrs := map[string]cty.Value{}
	for k, at := range ty.AttributeTypes() {
		attrs[k] = cty.NullVal(at)
	}
	attrs["id"], attrs["name"], attrs["stop_timeout"] = cty.StringVal(id), cty.StringVal(name), cty.NumberIntVal(stopTimeout)
	return cty.ObjectVal(attrs)
}
