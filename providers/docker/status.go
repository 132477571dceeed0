package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	gounits "github.com/docker/go-units"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

var (
	_ sdk.StatusResource = (*containerResource)(nil)
	_ sdk.LogsResource   = (*containerResource)(nil)
)

// probeTimeout bounds the one probe status makes of a wait block.
const probeTimeout = 2 * time.Second

// logLineProbeTail is how many of the last lines status searches for a
// wait block's log_line.
const logLineProbeTail = 2000

// Status implements sdk.StatusResource: what runs now, in two waves on
// the node's one connection: every inspect, then, alongside each other,
// one remote command that reads the memory use of every running container
// from its cgroup, and one probe per wait block. (The Engine's stats
// endpoint was not used: on a busy daemon a one-shot sample could take a
// second.)
func (r *containerResource) Status(ctx context.Context, n sdk.Node, items []sdk.StatusItem) ([]sdk.StatusResult, int, sdk.Diagnostics) {
	d, err := r.clients.get(ctx, n)
	if err != nil {
		return nil, 0, sdk.Diagnostics{sdk.FromError("Cannot reach Docker on "+n.Name, err)}
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = ctyval.Str(ctyval.Attr(it.State, "id"))
		if ids[i] == "" {
			ids[i] = ctyval.Str(ctyval.Attr(it.State, "name"))
		}
	}
	ins := make([]inspected, len(ids))
	trips := runWave(d.readParallel(), inspectJobs(ctx, d, ids, ins))

	probe := make([]probeAnswer, len(items))
	var pids []int
	var jobs []func()
	for i, it := range items {
		if !ins[i].found || ins[i].ins.State == nil || !ins[i].ins.State.Running {
			continue
		}
		pids = append(pids, ins[i].ins.State.Pid)
		if sp, _ := parseSpec(it.State); sp.Wait != nil {
			id := ins[i].ins.ID
			jobs = append(jobs, func() { probe[i] = probeOnce(ctx, d, id, sp.Wait) })
		}
	}
	var used map[int]int64
	var memErr error
	memTrips := 0
	if len(pids) > 0 {
		jobs = append(jobs, func() {
			conn, err := d.conn(ctx)
			if err != nil {
				memErr = err
				return
			}
			used, memTrips, memErr = readMemoryUsed(ctx, conn, n.Become, pids)
		})
	}
	if len(jobs) > 0 {
		runWave(len(jobs), jobs)
		trips++
		if memTrips > 1 {
			trips += memTrips - 1
		}
	}
	out := make([]sdk.StatusResult, len(items))
	for i := range items {
		mem := ""
		if x := ins[i]; x.found && x.ins.State != nil && x.ins.State.Running {
			limit := int64(0)
			if x.ins.HostConfig != nil {
				limit = x.ins.HostConfig.Memory
			}
			if u, ok := used[x.ins.State.Pid]; ok {
				mem = memoryWords(u, limit)
			} else if memErr != nil {
				mem = "unknown (" + memErr.Error() + ")"
			} else {
				mem = "unknown"
			}
		}
		out[i] = containerStatus(ins[i], mem, probe[i], time.Now())
	}
	return out, trips, nil
}

// memoryScript prints, for each pid argument, "PID USED" where USED is the
// memory of its cgroup as `docker stats` counts it (usage less the page
// cache that can be dropped: inactive_file), or "PID ?" when it cannot be
// read. POSIX sh and busybox compatible; its only inputs are its arguments.
const memoryScript = `
mem1= v2=
while read -r dev mnt typ opts rest; do
  case $typ in
    cgroup2) [ -n "$v2" ] || v2=$mnt ;;
    cgroup) case ",$opts," in *,memory,*) mem1=$mnt ;; esac ;;
  esac
done < /proc/self/mounts
for pid in "$@"; do
  m= u= seen=
  if [ -r "/proc/$pid/cgroup" ]; then
    while IFS=: read -r n ctl p; do
      seen=1
      case ",$ctl," in
        *,memory,*) m=$p ;;
        ,,) u=$p ;;
      esac
    done < "/proc/$pid/cgroup"
  fi
  if [ -n "$m" ] && [ -n "$mem1" ]; then
    d=$mem1$m cur=memory.usage_in_bytes key=total_inactive_file
  elif [ -n "$seen" ] && [ -n "$v2" ]; then
    d=$v2$u cur=memory.current key=inactive_file
  else
    echo "$pid ?"; continue
  fi
  used=; { read -r used < "$d/$cur"; } 2>/dev/null
  inact=0
  { while read -r k v; do [ "$k" = "$key" ] && inact=$v; done < "$d/memory.stat"; } 2>/dev/null
  case $used in
    ''|*[!0-9]*) echo "$pid ?" ;;
    *) [ "$inact" -lt "$used" ] 2>/dev/null && used=$((used - inact)); echo "$pid $used" ;;
  esac
done
`

// readMemoryUsed runs memoryScript for pids in one remote command (again
// as root when something could not be read as the login user and become
// allows it, as readCgroups does), and returns the bytes used by pid.
func readMemoryUsed(ctx context.Context, conn node.Conn, become bool, pids []int) (map[int]int64, int, error) {
	argv := []string{"sh", "-c", memoryScript, "sh"}
	for _, p := range pids {
		argv = append(argv, strconv.Itoa(p))
	}
	parse := func(b []byte) map[int]int64 {
		out := map[int]int64{}
		for line := range strings.SplitSeq(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			pid, err1 := strconv.Atoi(f[0])
			v, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 == nil && err2 == nil {
				out[pid] = v
			}
		}
		return out
	}
	res, err := conn.Run(ctx, node.Cmd{Argv: argv})
	if err == nil {
		out := parse(res.Stdout)
		if !become || len(out) == len(pids) {
			return out, 1, nil
		}
	} else if !become {
		return nil, 1, err
	}
	res, err = conn.Run(ctx, node.Cmd{Argv: argv, Become: true})
	if err != nil {
		return nil, 2, err
	}
	return parse(res.Stdout), 2, nil
}

// memoryWords is "USED of LIMIT (P%)", or "USED (no limit)" when the
// container has none (limit 0).
func memoryWords(used, limit int64) string {
	if limit <= 0 {
		return gounits.BytesSize(float64(used)) + " (no limit)"
	}
	return fmt.Sprintf("%s of %s (%.0f%%)", gounits.BytesSize(float64(used)), gounits.BytesSize(float64(limit)), 100*float64(used)/float64(limit))
}

// probeAnswer is what one probe of a wait block said.
type probeAnswer struct {
	what, answer string
	ok, tried    bool
}

// containerStatus puts an inspect, the memory fact and the probe's answer
// into words. now is when they were read (uptime).
func containerStatus(x inspected, mem string, p probeAnswer, now time.Time) sdk.StatusResult {
	if x.err != nil {
		return sdk.StatusResult{Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot inspect the container", x.err)}}
	}
	if !x.found || x.ins.State == nil {
		return sdk.StatusResult{Health: sdk.HealthDown, Summary: "missing", Facts: []sdk.Fact{{Name: "state", Value: "missing"}}}
	}
	st := x.ins.State
	res := sdk.StatusResult{Health: sdk.HealthOK}
	state := string(st.Status)
	if !st.Running && !st.Restarting {
		state = fmt.Sprintf("%s (exit code %d)", st.Status, st.ExitCode)
		res.Health = sdk.HealthDown
	}
	if st.Restarting {
		res.Health = sdk.HealthDegraded
	}
	res.Facts = append(res.Facts, sdk.Fact{Name: "state", Value: state})
	health := "none"
	if st.Health != nil {
		health = string(st.Health.Status)
		if st.Health.Status == container.Unhealthy || st.Health.Status == container.Starting {
			if res.Health == sdk.HealthOK {
				res.Health = sdk.HealthDegraded
			}
		}
	}
	res.Facts = append(res.Facts, sdk.Fact{Name: "health", Value: health})
	res.Facts = append(res.Facts, sdk.Fact{Name: "restarts", Value: strconv.Itoa(x.ins.RestartCount)})
	uptime := ""
	if started, err := time.Parse(time.RFC3339Nano, st.StartedAt); err == nil && st.Running && !started.IsZero() {
		uptime = shortDuration(now.Sub(started))
		res.Facts = append(res.Facts, sdk.Fact{Name: "uptime", Value: uptime})
	} else if fin, err := time.Parse(time.RFC3339Nano, st.FinishedAt); err == nil && !fin.IsZero() && !st.Running {
		res.Facts = append(res.Facts, sdk.Fact{Name: "stopped", Value: shortDuration(now.Sub(fin)) + " ago"})
	}
	if st.OOMKilled {
		res.Facts = append(res.Facts, sdk.Fact{Name: "oom_killed", Value: "true"})
	}
	if mem != "" {
		res.Facts = append(res.Facts, sdk.Fact{Name: "memory", Value: mem})
	}
	if p.tried {
		res.Facts = append(res.Facts, sdk.Fact{Name: "probe", Value: p.what + ": " + p.answer})
		if !p.ok && res.Health == sdk.HealthOK {
			res.Health = sdk.HealthDegraded
		}
	}
	switch {
	case uptime != "":
		res.Summary = "running " + uptime
	default:
		res.Summary = state
	}
	if health != "none" {
		res.Summary += ", " + health
	}
	if p.tried && !p.ok {
		res.Summary += ", probe fails"
	}
	return res
}

// shortDuration is d rounded for people: 42s, 5m3s, 3h12m, 2d4h.
func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return strings.TrimSuffix(d.Round(time.Second).String(), "0s")
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	days := int(d / (24 * time.Hour))
	return fmt.Sprintf("%dd%dh", days, int((d-time.Duration(days)*24*time.Hour)/time.Hour))
}

// probeOnce asks a wait block's question once, as apply's wait does, from
// the node: an HTTP GET, a TCP connect, or the log line in the last lines.
func probeOnce(ctx context.Context, d *dockerClient, id string, w *waitSpec) probeAnswer {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	switch {
	case w.HTTP != "":
		p := probeAnswer{what: w.HTTP, tried: true}
		hc := &http.Client{Transport: &http.Transport{
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
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.HTTP, nil)
		if err != nil {
			p.answer = err.Error()
			return p
		}
		resp, err := hc.Do(req)
		if err != nil {
			p.answer = probeError(err)
			return p
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		p.answer, p.ok = resp.Status, resp.StatusCode >= 200 && resp.StatusCode < 400
		return p
	case w.TCP != "":
		p := probeAnswer{what: "tcp " + w.TCP, tried: true}
		conn, err := d.conn(ctx)
		if err == nil {
			var c io.Closer
			if c, err = conn.Dial(ctx, "tcp", w.TCP); err == nil {
				c.Close()
			}
		}
		if err != nil {
			p.answer = probeError(err)
			return p
		}
		p.answer, p.ok = "open", true
		return p
	case w.LogLine != "":
		p := probeAnswer{what: "log line /" + w.LogLine + "/", tried: true}
		re, err := regexp.Compile(w.LogLine)
		if err != nil {
			p.answer = err.Error()
			return p
		}
		rc, err := d.api.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(logLineProbeTail)})
		if err != nil {
			p.answer = probeError(err)
			return p
		}
		defer rc.Close()
		var b bytes.Buffer
		_, _ = stdcopy.StdCopy(&b, &b, rc)
		for line := range strings.SplitSeq(b.String(), "\n") {
			if re.MatchString(line) {
				p.answer, p.ok = "seen", true
				return p
			}
		}
		p.answer = fmt.Sprintf("not in the last %d lines", logLineProbeTail)
		return p
	}
	return probeAnswer{}
}

// probeError is a failed probe in a few words.
func probeError(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer within " + probeTimeout.String()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && len(msg)-i < 80 {
		return msg[i+2:]
	}
	return msg
}

// Logs implements sdk.LogsResource: the container's output through the
// Engine API on the node's connection, each line with its time. A
// container that is not there (never created, or removed since) is
// ErrNoContainer, which says what to do.
func (r *containerResource) Logs(ctx context.Context, req sdk.LogsRequest, emit func(sdk.LogLine) error) sdk.Diagnostics {
	d, err := r.clients.get(ctx, req.Node)
	if err != nil {
		return sdk.Diagnostics{sdk.FromError("Cannot reach Docker on "+req.Node.Name, err)}
	}
	ref := ctyval.Str(ctyval.Attr(req.State, "id"))
	if ref == "" {
		ref = ctyval.Str(ctyval.Attr(req.State, "name"))
	}
	if ref == "" {
		return sdk.Diagnostics{sdk.Errorf(nil, "No container", "%s has no container id in state: %v", req.Address, ErrNoContainer)}
	}
	ins, err := d.api.ContainerInspect(ctx, ref, client.ContainerInspectOptions{})
	if isNotFound(err) {
		return sdk.Diagnostics{sdk.Errorf(nil, "No container", "%s: %v on node %s (%s): it was removed since the last apply; `sparkform plan` shows it as a create",
			req.Address, ErrNoContainer, req.Node.Name, ref)}
	}
	if err != nil {
		return sdk.Diagnostics{sdk.FromError("Cannot inspect the container of "+req.Address, err)}
	}
	opts := client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Follow: req.Follow, Tail: "all"}
	if req.Tail >= 0 {
		opts.Tail = strconv.Itoa(req.Tail)
	}
	if !req.Since.IsZero() {
		opts.Since = fmt.Sprintf("%d.%09d", req.Since.Unix(), req.Since.Nanosecond())
	}
	rc, err := d.api.ContainerLogs(ctx, ins.Container.ID, opts)
	if err != nil {
		return sdk.Diagnostics{sdk.FromError("Cannot read the logs of "+req.Address, err)}
	}
	defer rc.Close()
	stdout := &lineWriter{stream: "stdout", emit: emit}
	stderr := &lineWriter{stream: "stderr", emit: emit}
	if ins.Container.Config != nil && ins.Container.Config.Tty {
		_, err = io.Copy(stdout, rc) // a TTY's output is not multiplexed
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, rc)
	}
	if ferr := errors.Join(stdout.flush(), stderr.flush()); err == nil {
		err = ferr
	}
	if err != nil && ctx.Err() == nil {
		return sdk.Diagnostics{sdk.FromError("Reading the logs of "+req.Address, err)}
	}
	return nil
}

// lineWriter splits one stream of timestamped output into lines.
type lineWriter struct {
	stream string
	emit   func(sdk.LogLine) error
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if err := w.emit(timestamped(w.stream, line)); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// flush emits a last line that had no line end.
func (w *lineWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	line := string(w.buf)
	w.buf = nil
	return w.emit(timestamped(w.stream, line))
}

// timestamped splits the Engine's "RFC3339NANO TEXT" line.
func timestamped(stream, line string) sdk.LogLine {
	line = strings.TrimSuffix(line, "\r")
	if ts, text, ok := strings.Cut(line, " "); ok {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			return sdk.LogLine{Stream: stream, Text: text, Time: t}
		}
	}
	return sdk.LogLine{Stream: stream, Text: line}
}

var _ sdk.StatusResource = (*imageResource)(nil)

// Status implements sdk.StatusResource from what the refresh just read (no
// round trip of its own): whether the image is on the node, its id and the
// digest it was pulled at.
func (r *imageResource) Status(_ context.Context, _ sdk.Node, items []sdk.StatusItem) ([]sdk.StatusResult, int, sdk.Diagnostics) {
	out := make([]sdk.StatusResult, len(items))
	for i, it := range items {
		switch {
		case !it.ObservedKnown:
		case it.Observed.IsNull():
			out[i] = sdk.StatusResult{Health: sdk.HealthDown, Summary: "missing"}
		default:
			id := ctyval.Str(ctyval.Attr(it.Observed, "image_id"))
			res := sdk.StatusResult{Health: sdk.HealthOK, Summary: "present", Facts: []sdk.Fact{{Name: "image_id", Value: id}}}
			if short := strings.TrimPrefix(id, "sha256:"); len(short) >= 12 {
				res.Summary += " " + short[:12]
			}
			if d := ctyval.Str(ctyval.Attr(it.Observed, "repo_digest")); d != "" {
				res.Facts = append(res.Facts, sdk.Fact{Name: "repo_digest", Value: d})
			}
			out[i] = res
		}
	}
	return out, 0, nil
}
