package docker

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// facts are a status result's facts by name.
func facts(r sdk.StatusResult) map[string]string {
	m := map[string]string{}
	for _, f := range r.Facts {
		m[f.Name] = f.Value
	}
	return m
}

// TestContainerStatusAndLogs runs a busybox-static container that prints
// to stdout and stderr, ticks, and listens where its wait block probes,
// then checks through gRPC, on the local node and an sshd node: status
// (state, health, restarts, uptime, memory against the 64m limit, the
// probe's answer, in two round trips), logs (both streams with their
// times, -tail, -since, a follow that ends with its context), and what a
// stopped and a removed container say.
func TestContainerStatusAndLogs(t *testing.T) {
	api := engine(t)
	ensureGuardImage(t, api)
	for _, n := range testNodes(t) {
		t.Run(n.Name, func(t *testing.T) {
			ctx := context.Background()
			p := sdktest.GRPC(t, New())
			rs := sdktest.Schema(t, p, ctype)
			if !rs.Logs {
				t.Fatal("docker_container's schema does not say it serves logs")
			}
			name := "sparkform-test-status-" + n.Name
			cleanupContainer(t, api, name)
			port := strconv.Itoa(freePort(t))
			script := "echo first line; echo on stderr >&2; /bin/busybox httpd -f -p 127.0.0.1:" + port + " -h / & " +
				"i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done"
			config := sdktest.Object(t, rs.Block, map[string]cty.Value{
				"name": cty.StringVal(name), "image": cty.StringVal(guardImage),
				"entrypoint":   ctyval.ListOrNull([]string{"/bin/busybox", "sh", "-c", script}),
				"network_mode": cty.StringVal("host"), "memory": cty.StringVal("64m"), "memory_swap": cty.StringVal("64m"),
				"stop_timeout": cty.NumberIntVal(1),
				"wait": cty.ObjectVal(map[string]cty.Value{"http": cty.NullVal(cty.String), "tcp": cty.StringVal("127.0.0.1:" + port),
					"log_line": cty.NullVal(cty.String), "timeout": cty.StringVal("30s")}),
			})
			st, priv := sdktest.Create(t, p, ctype, n, config)
			started := time.Now()
			sr := p.(sdk.StatusReader)
			status := func() sdk.StatusResult {
				t.Helper()
				resp := sr.ReadStatus(ctx, sdk.StatusRequest{Node: n, Items: []sdk.StatusItem{{TypeName: ctype, Address: "docker_container.s", State: st, Observed: st, ObservedKnown: true, Private: priv}}})
				if resp.Diagnostics.HasErrors() || len(resp.Results) != 1 {
					t.Fatalf("status: %v (%d results)", resp.Diagnostics.Err(), len(resp.Results))
				}
				if resp.RoundTrips > 2 {
					t.Errorf("status took %d round trips; want at most 2 (inspects, then memory and probe together)", resp.RoundTrips)
				}
				return resp.Results[0]
			}

			r := status()
			f := facts(r)
			if r.Health != sdk.HealthOK || !strings.HasPrefix(r.Summary, "running ") {
				t.Errorf("health %q summary %q; want ok, running", r.Health, r.Summary)
			}
			if f["state"] != "running" || f["health"] != "none" || f["restarts"] != "0" {
				t.Errorf("facts %v", f)
			}
			if !regexp.MustCompile(`^\d+s$`).MatchString(f["uptime"]) {
				t.Errorf("uptime %q", f["uptime"])
			}
			if !regexp.MustCompile(`^[0-9.]+[KMG]?i?B of 64MiB \(\d+%\)$`).MatchString(f["memory"]) {
				t.Errorf("memory %q; want USED of 64MiB (P%%)", f["memory"])
			}
			if want := "tcp 127.0.0.1:" + port + ": open"; f["probe"] != want {
				t.Errorf("probe %q; want %q", f["probe"], want)
			}

			// An HTTP wait block is asked once, from the node: a page that
			// is there answers 200, one that is not makes it degraded.
			withWait := func(url string) cty.Value {
				m := st.AsValueMap()
				m["wait"] = cty.ObjectVal(map[string]cty.Value{"http": cty.StringVal(url), "tcp": cty.NullVal(cty.String),
					"log_line": cty.NullVal(cty.String), "timeout": cty.StringVal("30s")})
				return cty.ObjectVal(m)
			}
			for _, c := range []struct {
				path, answer string
				health       sdk.Health
			}{{"/etc/hostname", "200 OK", sdk.HealthOK}, {"/nope", "404 Not Found", sdk.HealthDegraded}} {
				url := "http://127.0.0.1:" + port + c.path
				resp := sr.ReadStatus(ctx, sdk.StatusRequest{Node: n, Items: []sdk.StatusItem{{TypeName: ctype, Address: "docker_container.s", State: withWait(url), Private: priv}}})
				if len(resp.Results) != 1 {
					t.Fatalf("http probe: %v", resp.Diagnostics.Err())
				}
				r := resp.Results[0]
				if got := facts(r)["probe"]; got != url+": "+c.answer || r.Health != c.health {
					t.Errorf("probe of %s: %q, health %q; want %q, %q", c.path, got, r.Health, url+": "+c.answer, c.health)
				}
			}

			logs := func(req sdk.LogsRequest) []sdk.LogLine {
				t.Helper()
				req.TypeName, req.Address, req.Node, req.State, req.Private = ctype, "docker_container.s", n, st, priv
				var got []sdk.LogLine
				if d := p.(sdk.LogStreamer).Logs(ctx, req, func(l sdk.LogLine) error { got = append(got, l); return nil }); d.HasErrors() {
					t.Fatalf("logs: %v", d.Err())
				}
				return got
			}
			all := logs(sdk.LogsRequest{Tail: -1})
			// The two streams are two pipes: which line the Engine got first
			// is not fixed.
			sawOut, sawErr := false, false
			for _, l := range all {
				sawOut = sawOut || l.Text == "first line" && l.Stream == "stdout"
				sawErr = sawErr || l.Text == "on stderr" && l.Stream == "stderr"
				if l.Time.Before(started.Add(-time.Minute)) || l.Time.After(time.Now().Add(time.Minute)) {
					t.Errorf("line %q has time %v", l.Text, l.Time)
				}
			}
			if !sawOut || !sawErr {
				t.Errorf("want the first line on stdout and one on stderr in %+v", all)
			}
			// -tail 1 is the newest line: a tick once the ticks run (the
			// stderr line may reach the Engine after the first ticks on a
			// loaded machine, so ask again for a while).
			var last []sdk.LogLine
			for range 25 {
				if last = logs(sdk.LogsRequest{Tail: 1}); len(last) == 1 && strings.HasPrefix(last[0].Text, "tick ") {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if len(last) != 1 || !strings.HasPrefix(last[0].Text, "tick ") {
				t.Errorf("-tail 1: %+v", last)
			}
			if none := logs(sdk.LogsRequest{Tail: -1, Since: time.Now().Add(time.Hour)}); len(none) != 0 {
				t.Errorf("-since an hour ahead: %d lines", len(none))
			}

			// Follow: new ticks arrive until the context ends, which is no error.
			fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			var ticks int
			d := p.(sdk.LogStreamer).Logs(fctx, sdk.LogsRequest{TypeName: ctype, Address: "docker_container.s", Node: n, State: st, Private: priv, Follow: true, Tail: 0},
				func(l sdk.LogLine) error {
					if strings.HasPrefix(l.Text, "tick ") {
						if ticks++; ticks == 3 {
							cancel()
						}
					}
					return nil
				})
			if len(d) != 0 || ticks < 3 || fctx.Err() != context.Canceled {
				t.Errorf("follow: diagnostics %v, %d ticks, context %v; want 3 ticks and a cancel", d, ticks, fctx.Err())
			}

			// Stopped by hand: down, with its exit code.
			byHand(t, "stop", "-t", "1", name)
			r = status()
			if r.Health != sdk.HealthDown || !strings.HasPrefix(facts(r)["state"], string(container.StateExited)+" (exit code ") {
				t.Errorf("stopped: health %q facts %v", r.Health, facts(r))
			}
			if _, ok := facts(r)["probe"]; ok {
				t.Errorf("a stopped container was probed: %v", facts(r))
			}

			// Removed: missing, and its logs say so.
			byHand(t, "rm", "-f", name)
			if r = status(); r.Health != sdk.HealthDown || r.Summary != "missing" {
				t.Errorf("removed: health %q summary %q", r.Health, r.Summary)
			}
			d = p.(sdk.LogStreamer).Logs(ctx, sdk.LogsRequest{TypeName: ctype, Address: "docker_container.s", Node: n, State: st, Private: priv, Tail: -1},
				func(sdk.LogLine) error { return nil })
			if !d.HasErrors() || !strings.Contains(d.Err().Error(), "docker_container.s: container not found on node "+n.Name) {
				t.Errorf("logs of a removed container: %v", d)
			}
		})
	}
}

// TestShortDuration pins how uptime reads.
func TestShortDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{42*time.Second + 400*time.Millisecond, "42s"},
		{5*time.Minute + 3*time.Second, "5m3s"},
		{5 * time.Minute, "5m"},
		{3*time.Hour + 12*time.Minute + 40*time.Second, "3h13m"},
		{50 * time.Hour, "2d2h"},
	} {
		if got := shortDuration(c.d); got != c.want {
			t.Errorf("shortDuration(%v) = %q; want %q", c.d, got, c.want)
		}
	}
}

// TestImageStatus: present (its id and digest), missing, not read.
func TestImageStatus(t *testing.T) {
	ty := (&imageResource{}).Schema().Block.ImpliedType()
	img := cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("ghcr.io/o/i:1"), "pull": cty.NullVal(cty.String), "keep_locally": cty.NullVal(cty.Bool),
		"image_id": cty.StringVal("sha256:4347b40aced192fe4e4fcdd389da980bf7c06f00fef02214d269d6a11c7443ab"), "repo_digest": cty.StringVal("ghcr.io/o/i@sha256:abc")})
	got, _, _ := (&imageResource{}).Status(context.Background(), sdk.Node{}, []sdk.StatusItem{
		{State: img, Observed: img, ObservedKnown: true},
		{State: img, Observed: cty.NullVal(ty), ObservedKnown: true},
		{State: img},
	})
	if got[0].Health != sdk.HealthOK || got[0].Summary != "present 4347b40aced1" || facts(got[0])["repo_digest"] != "ghcr.io/o/i@sha256:abc" {
		t.Errorf("present: %+v", got[0])
	}
	if got[1].Health != sdk.HealthDown || got[1].Summary != "missing" {
		t.Errorf("gone: %+v", got[1])
	}
	if got[2].Health != "" {
		t.Errorf("not read: %+v", got[2])
	}
}
