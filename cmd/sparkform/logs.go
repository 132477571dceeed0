package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
)

func newLogsCommand(m *meta) *cobra.Command {
	var follow, timestamps bool
	var tail int
	var since string
	cmd := &cobra.Command{
		Use:   "logs ADDRESS|module.NAME",
		Short: "Show the container logs of an instance, or of every rank of a module instance",
		Long: `Logs prints the output of the containers ADDRESS names, each line prefixed with
its node (and the instance, when a node runs several):

  sparkform logs 'docker_container.serve["spark-01"]'   one instance
  sparkform logs docker_container.serve                 every instance of it
  sparkform logs module.recipe                          every container of every rank

It reads over each node's one connection, through the Docker Engine API there.
ADDRESS must name at least one docker_container in state: an address that names
nothing, or only instances with no container (a kernel module, a kit), is an
error that says so. -f follows new lines until Ctrl-C (exit status 0); -tail N
starts with the last N lines of each container (default: all); -since takes a
duration back from now (10m, 1h30m) or a time (2026-12-06T08:00:00Z).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := engine.LogsOptions{Follow: follow, Tail: tail}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return err
				}
				opts.Since = t
			}
			st, err := m.openStateReadOnly()
			if err != nil {
				return noStateHint(err)
			}
			defer st.Close()
			e, err := m.newEngine(nil, st, nil, 0)
			if err != nil {
				return err
			}
			defer m.close()
			ctx, stop := readInterruptible()
			defer stop()
			diags := e.Logs(ctx, args[0], opts, func(l engine.LogLine) {
				if timestamps && !l.Time.IsZero() {
					fmt.Fprintf(m.stdout, "%s | %s %s\n", termSafe(l.Prefix), l.Time.UTC().Format(time.RFC3339Nano), termSafe(l.Text))
					return
				}
				fmt.Fprintf(m.stdout, "%s | %s\n", termSafe(l.Prefix), termSafe(l.Text))
			})
			if m.diags(diags) {
				return &exitError{1}
			}
			return nil
		},
	}
	withAddressCompletion(cmd, m, 1) // the instances in state
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until Ctrl-C")
	cmd.Flags().IntVar(&tail, "tail", -1, "start with the last N lines of each container (-1: all)")
	cmd.Flags().StringVar(&since, "since", "", "only lines since a duration ago (10m, 1h30m) or a time (RFC 3339)")
	cmd.Flags().BoolVar(&timestamps, "timestamps", false, "show each line's time (UTC)")
	return cmd
}

// parseSince reads -since: a duration back from now, or an RFC 3339 time
// (a date alone is its midnight UTC).
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("-since %q: give how long back as a positive duration, e.g. 10m", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("-since %q is neither a duration (10m, 1h30m) nor a time (2026-12-06T08:00:00Z or 2026-12-06)", s)
}

// readInterruptible is the context of a command that only reads (status,
// logs): Ctrl-C ends it, which for logs -f is the normal end, so nothing
// is said and the process is not killed by the signal (see
// console.flushOnSignal).
func readInterruptible() (context.Context, func()) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	interruptsHandled.Add(1)
	return ctx, func() {
		if ctx.Err() != nil { // only a signal cancels it before stop
			interruptsTaken.Add(1)
		}
		stop()
		interruptsHandled.Add(-1)
	}
}
