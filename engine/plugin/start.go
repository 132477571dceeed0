// This file holds what bounds a plugin's start: the handshake's timeout
// and the errors that say what went wrong, the check that the plugin
// serves where it said, its process group, and its lifeline.

package plugin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sparkform/sparkform/providers/sdk"
)

// maxStartErrorText bounds what of go-plugin's error is quoted: it quotes
// the plugin's first line on stdout, which a broken plugin makes as long
// as it likes.
const maxStartErrorText = 512

// handshakeError says in words what go-plugin's start error means.
func handshakeError(err error, timeout time.Duration) error {
	msg := err.Error()
	if len(msg) > maxStartErrorText {
		msg = msg[:maxStartErrorText] + "... (cut)"
	}
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "timeout while waiting for plugin to start"):
		return fmt.Errorf("it did not complete the plugin handshake within %s: it wrote no handshake line on its stdout. Is it a sparkform provider plugin (providers/sdk Serve)?", timeout)
	case strings.Contains(low, "incompatible api version"):
		return fmt.Errorf("it speaks another version of the provider protocol than this sparkform, which speaks version %d (%s). "+
			"Use a build of the provider made against this sparkform's providers/sdk", sdk.ProtocolVersion, msg)
	case strings.Contains(low, "unrecognized remote plugin message") && strings.Contains(low, "failed to read any lines"):
		return fmt.Errorf("its first line on stdout is not a plugin handshake: it ended, or was longer than %d bytes, before any line did (%s)", maxHandshakeLine, msg)
	case strings.Contains(low, "unrecognized remote plugin message"):
		return fmt.Errorf("its first line on stdout is not a plugin handshake (%s)", msg)
	case strings.Contains(low, "plugin exited before we could connect"):
		return fmt.Errorf("it exited before completing the plugin handshake (%s)", msg)
	}
	return fmt.Errorf("the plugin handshake failed: %s", msg)
}

// maxHandshakeLine is the longest line go-plugin reads for the handshake
// (bufio.Scanner's default token size): a longer one ends the start.
const maxHandshakeLine = 64 << 10

// checkServing asks the plugin's gRPC health service (go-plugin serves
// one in every plugin) whether it serves, waiting at most timeout (at
// least a second) for its connection.
func checkServing(rpc goplugin.ClientProtocol, timeout time.Duration) error {
	gc, ok := rpc.(*goplugin.GRPCClient)
	if !ok {
		return nil
	}
	timeout = max(timeout, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Not WaitForReady: a plugin listens before it announces, so a refused
	// or missing socket is an answer, at once.
	_, err := healthpb.NewHealthClient(gc.Conn).Check(ctx, &healthpb.HealthCheckRequest{Service: goplugin.GRPCServiceName})
	if ctx.Err() != nil {
		return fmt.Errorf("no answer within %s", timeout.Round(time.Millisecond))
	}
	return err
}

// setProcessGroup starts cmd in a process group of its own.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// killGroup kills cmd's process group (setProcessGroup): the plugin and
// whatever it started. Nothing when cmd has not started.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil || cmd.SysProcAttr == nil || !cmd.SysProcAttr.Setpgid {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// addLifeline gives cmd the read end of a pipe as an extra file, named in
// its environment (sdk.LifelineEnv), and returns the write end, which
// this process keeps open and never writes to. The plugin reads EOF from
// it once every write end is closed: when this process exits or is
// killed (SIGKILL included), at once and on any machine load. Only this
// process holds the write end (pipes are close-on-exec, and ExtraFiles
// passes only the read end). The read end is returned too, to be closed
// here once the plugin has started.
func addLifeline(cmd *exec.Cmd) (w, r *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("making the plugin's lifeline: %w", err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	fd := 2 + len(cmd.ExtraFiles)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", sdk.LifelineEnv, fd), fmt.Sprintf("%s=%d", sdk.ParentPIDEnv, os.Getpid()))
	return w, r, nil
}
