package node

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxLoggedWord bounds each argv word in a debug line: a script passed as
// `sh -c SCRIPT` is logged by its first line and size.
const maxLoggedWord = 120

// logCommand logs one finished command (see Options.Debug).
func (o Options) logCommand(node string, c Cmd, start time.Time, err error) {
	if o.Debug == nil {
		return
	}
	words := make([]string, len(c.Argv))
	for i, w := range c.Argv {
		if len(w) > maxLoggedWord || strings.Contains(w, "\n") {
			first, _, _ := strings.Cut(w, "\n")
			if len(first) > maxLoggedWord/2 {
				first = first[:maxLoggedWord/2]
			}
			w = first + "… (" + strconv.Itoa(len(w)) + " bytes)"
		}
		words[i] = w
	}
	status := "0"
	var xe *ExitError
	switch {
	case err == nil:
	case errors.As(err, &xe):
		status = strconv.Itoa(xe.ExitCode)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		status = "cancelled"
	default:
		status = "error: " + err.Error()
	}
	args := []any{"node", node, "argv", QuoteArgv(words), "took", time.Since(start).Round(time.Millisecond).String(), "exit", status}
	if c.Become {
		args = append(args, "become", true)
	}
	if len(c.Env) > 0 {
		names := make([]string, 0, len(c.Env))
		for k := range c.Env {
			names = append(names, k)
		}
		slices.Sort(names)
		args = append(args, "env", strings.Join(names, ","))
	}
	if c.Dir != "" {
		args = append(args, "dir", c.Dir)
	}
	o.Debug("remote command", args...)
}
