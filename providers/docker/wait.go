package docker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/sparkform/sparkform/providers/sdk"
)

// waitReady blocks until w holds for the container, it exits, or the
// timeout passes, reporting the elapsed time every second.
func waitReady(ctx context.Context, d *dockerClient, id string, w *waitSpec, progress func(sdk.Progress)) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	what := ""
	var probe func(context.Context) bool
	switch {
	case w.HTTP != "":
		what = w.HTTP
		hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			// Reached from the node: over SSH this is a direct-tcpip channel.
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := d.conn(ctx)
				if err != nil {
					return nil, err
				}
				rwc, err := conn.Dial(ctx, "tcp", addr)
				if err != nil {
					return nil, err
				}
				return asNetConn(rwc), nil
			},
			DisableKeepAlives: true,
		}}
		probe = func(ctx context.Context) bool {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.HTTP, nil)
			if err != nil {
				return false
			}
			resp, err := hc.Do(req)
			if err != nil {
				return false
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			return resp.StatusCode >= 200 && resp.StatusCode < 400
		}
	case w.TCP != "":
		what = "tcp " + w.TCP
		probe = func(ctx context.Context) bool {
			// Bounded as a whole: getting the connection may redial.
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			defer pcancel()
			conn, err := d.conn(pctx)
			if err != nil {
				return false
			}
			c, err := conn.Dial(pctx, "tcp", w.TCP)
			if err != nil {
				return false
			}
			c.Close()
			return true
		}
	case w.LogLine != "":
		what = "log line /" + w.LogLine + "/"
		matched := make(chan struct{})
		re := regexp.MustCompile(w.LogLine)
		go followLogs(ctx, d, id, re, matched)
		probe = func(context.Context) bool {
			select {
			case <-matched:
				return true
			default:
				return false
			}
		}
	default:
		return nil
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	lastReport := time.Time{}
	engineFailures := 0
	for {
		if probe(ctx) {
			progress(sdk.Progress{Message: fmt.Sprintf("%s ready (%s) after %s", id[:12], what, time.Since(start).Round(time.Millisecond)), Elapsed: time.Since(start)})
			return nil
		}
		// Each inspect has its own bound: on a link that died without a
		// word, one call would otherwise hang until the whole wait ends.
		ictx, icancel := context.WithTimeout(ctx, inspectTimeout)
		ins, err := d.api.ContainerInspect(ictx, id, client.ContainerInspectOptions{})
		icancel()
		if err == nil && ins.Container.State != nil && !ins.Container.State.Running && !ins.Container.State.Restarting {
			return fmt.Errorf("%w with code %d while waiting for %s; last output:\n%s", ErrContainerExited,
				ins.Container.State.ExitCode, what, tailLogs(context.WithoutCancel(ctx), d, id, 20))
		}
		if err != nil && ctx.Err() == nil {
			// Tell a broken link to the node from an engine that fails:
			// the pool redials a link it finds broken, so an error here
			// means the node cannot be reached now.
			lctx, lcancel := context.WithTimeout(ctx, linkTimeout)
			_, lerr := d.conn(lctx)
			lcancel()
			if lerr != nil {
				return fmt.Errorf("%w: node %s: the connection broke while waiting for %s (after %s; no new connection within %s): %v. "+
					"The container may still be starting there: check the node, then run apply again (it refreshes the container)",
					ErrLinkLost, d.node.Name, what, time.Since(start).Round(100*time.Millisecond), linkTimeout, lerr)
			}
			if engineFailures++; engineFailures >= maxEngineFailures {
				return fmt.Errorf("the Docker Engine on node %s stopped answering while waiting for %s (after %s, %d tries): %v",
					d.node.Name, what, time.Since(start).Round(100*time.Millisecond), engineFailures, err)
			}
		} else if err == nil {
			engineFailures = 0
		}
		if time.Since(lastReport) >= time.Second {
			lastReport = time.Now()
			progress(sdk.Progress{Message: fmt.Sprintf("waiting for %s: %s elapsed", what, time.Since(start).Round(time.Second)), Elapsed: time.Since(start)})
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("%w: %s did not answer within the wait timeout of %s (waited %s); raise wait.timeout if it needs longer; last output:\n%s",
					ErrWaitTimeout, what, w.Timeout, time.Since(start).Round(100*time.Millisecond), tailLogs(context.WithoutCancel(ctx), d, id, 20))
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// inspectTimeout bounds one container inspect of the wait loop, and
// linkTimeout the check of the node link after an inspect failed (the
// node pool redials a broken link, retrying for longer than this);
// maxEngineFailures inspects in a row that fail over a link that works
// end the wait.
const (
	inspectTimeout    = 10 * time.Second
	linkTimeout       = 10 * time.Second
	maxEngineFailures = 5
)

// followLogs closes matched when a line of the container's output matches re.
func followLogs(ctx context.Context, d *dockerClient, id string, re *regexp.Regexp, matched chan struct{}) {
	rc, err := d.api.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return
	}
	defer rc.Close()
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, rc)
		pw.CloseWithError(err)
	}()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if re.MatchString(sc.Text()) {
			close(matched)
			go io.Copy(io.Discard, pr) // let the copier finish
			return
		}
	}
}

// tailLogs returns the last n lines of output, for error messages.
func tailLogs(ctx context.Context, d *dockerClient, id string, n int) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rc, err := d.api.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(n)})
	if err != nil {
		return "(logs unavailable: " + err.Error() + ")"
	}
	defer rc.Close()
	var b strings.Builder
	stdcopy.StdCopy(&b, &b, rc)
	return strings.TrimRight(b.String(), "\n")
}
