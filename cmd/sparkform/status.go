package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
)

// Exit statuses of `sparkform status`, for scripts and monitoring.
const (
	statusExitHealthy = 0
	statusExitError   = 1
	statusExitDrifted = 2
	statusExitDown    = 3
)

// statusFormatVersion is the version of the `status -json` document.
const statusFormatVersion = "1.0"

func newStatusCommand(m *meta) *cobra.Command {
	var asJSON bool
	var parallelism int
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what really runs on the nodes now, and whether it is healthy",
		Long: `Status reads, for every instance in state, what runs on its node now and
prints it per node: a container's state, health, restarts, uptime, memory used
against its limit and the answer of its wait block's probe; a kernel module's
loaded parameters against the wanted ones; the kit and snapshot commits; and
drift in one word (none, drifted, gone, unknown) from a refresh compared with
state. It changes nothing, takes no lock and needs no configuration: state says
what should run where. Each node is reached over one connection.

Exit status (for scripts and monitoring):
  0  healthy  everything in state runs as state says
  1  error    status could not be read (no state, a damaged state)
  2  drifted  everything runs, but something differs from state (run plan)
  3  down     something is gone, stopped, unhealthy, restarting, fails its
              probe, or its node cannot be reached

-json prints one JSON document (format_version, status, exit_code, nodes with
their instances, facts and errors) instead of the table.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := m.newStatusView(viewTypeOf(asJSON))
			st, err := m.openStateReadOnly()
			if err != nil {
				return m.failed(noStateHint(err))
			}
			defer st.Close()
			e, err := m.newEngine(nil, st, nil, parallelism)
			if err != nil {
				return m.failed(err)
			}
			defer m.close()
			if nodes, diags := e.StateNodes(); !diags.HasErrors() && m.pool != nil {
				m.prewarm(nodes, parallelism) // dialled while the providers start
			}
			ctx, stop := readInterruptible()
			defer stop()
			rep, diags := e.Status(ctx)
			if diags.HasErrors() {
				m.diags(diags)
				return &exitError{statusExitError}
			}
			code := statusExit(rep.Verdict)
			v.report(rep, code)
			if code != 0 {
				return &exitError{code}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document instead of the table")
	cmd.Flags().IntVar(&parallelism, "parallelism", 10, "how many (provider, node) reads run at once")
	return cmd
}

// statusExit is the exit status of a verdict.
func statusExit(verdict string) int {
	switch verdict {
	case engine.VerdictHealthy:
		return statusExitHealthy
	case engine.VerdictDrifted:
		return statusExitDrifted
	}
	return statusExitDown
}

// statusJSONError prints the -json document of a status that could not be
// read, and exits 1.
func statusJSONError(w io.Writer, err error) {
	b, _ := json.MarshalIndent(map[string]any{"format_version": statusFormatVersion, "status": "error",
		"exit_code": statusExitError, "error": err.Error()}, "", "  ")
	fmt.Fprintln(w, string(b))
}

// statusDoc is the `status -json` document.
type statusDoc struct {
	FormatVersion string           `json:"format_version"`
	Status        string           `json:"status"`
	ExitCode      int              `json:"exit_code"`
	ElapsedMS     int64            `json:"elapsed_ms"`
	Nodes         []statusNodeJSON `json:"nodes"`
}

type statusNodeJSON struct {
	Name      string               `json:"name"`
	Label     string               `json:"label"`
	Host      string               `json:"host,omitempty"`
	Error     string               `json:"error,omitempty"`
	Instances []statusInstanceJSON `json:"instances"`
}

type statusInstanceJSON struct {
	Address string `json:"address"`
	Type    string `json:"type"`
	Drift   string `json:"drift"`
	// Health is "ok", "degraded", "down", or "unknown" (no status for
	// the type, or it could not be read).
	Health          string            `json:"health"`
	StatusAvailable bool              `json:"status_available"`
	Summary         string            `json:"summary,omitempty"`
	Tainted         bool              `json:"tainted,omitempty"`
	Facts           map[string]string `json:"facts"`
	Errors          []string          `json:"errors,omitempty"`
}

func statusJSON(rep *engine.StatusReport, code int) statusDoc {
	doc := statusDoc{FormatVersion: statusFormatVersion, Status: rep.Verdict, ExitCode: code, ElapsedMS: rep.Elapsed.Milliseconds(), Nodes: []statusNodeJSON{}}
	for _, n := range rep.Nodes {
		nj := statusNodeJSON{Name: n.Name, Label: n.Label, Host: n.Host, Error: n.Error, Instances: []statusInstanceJSON{}}
		for _, in := range n.Instances {
			ij := statusInstanceJSON{Address: in.Addr, Type: in.Type, Drift: in.Drift, Health: healthWord(in), StatusAvailable: in.Available,
				Summary: in.Summary, Tainted: in.Tainted, Facts: map[string]string{}, Errors: in.Errors}
			for _, f := range in.Facts {
				ij.Facts[f.Name] = f.Value
			}
			nj.Instances = append(nj.Instances, ij)
		}
		doc.Nodes = append(doc.Nodes, nj)
	}
	return doc
}

// healthWord is an instance's health, "unknown" when there is none.
func healthWord(in *engine.InstanceStatus) string {
	if in.Health == "" {
		return "unknown"
	}
	return string(in.Health)
}

// renderStatus prints the report per node: each instance's health, drift
// and summary on one line, its facts on the next, then the verdict.
func renderStatus(m *meta, rep *engine.StatusReport) {
	w := m.stdout
	if len(rep.Nodes) == 0 {
		fmt.Fprintln(w, "Nothing in state: nothing runs that sparkform made. Run `sparkform apply` first.")
		return
	}
	var drifted, down, instances, nodes int
	for _, n := range rep.Nodes {
		if n.Name != "" {
			nodes++
		}
		head := n.Label
		if n.Name != "" && n.Name != n.Label {
			head += "  (" + n.Name
			if n.Host != "" {
				head += ", " + n.Host
			}
			head += ")"
		}
		head = termSafe(head)
		if m.color() {
			head = bold.Sprint(head)
		}
		fmt.Fprintln(w, head)
		if n.Error != "" {
			fmt.Fprintf(w, "  unreachable: %s\n", termSafe(n.Error))
		}
		for _, in := range n.Instances {
			instances++
			health := healthWord(in)
			summary := in.Summary
			switch {
			case !in.Available && in.Drift == engine.DriftUnknown:
				summary = "could not be read"
				if n.Error != "" {
					summary += ": the node is unreachable"
				}
			case !in.Available:
				health, summary = "-", "status not available for "+in.Type
			}
			switch {
			case in.Down():
				down++
			case in.Drifted():
				drifted++
			}
			drift := in.Drift
			if in.Tainted {
				drift += ", tainted"
			}
			fmt.Fprintf(w, "  %-8s drift %-8s %s: %s\n", health, drift, termSafe(in.Addr), termSafe(summary))
			if len(in.Facts) > 0 {
				parts := make([]string, len(in.Facts))
				for i, f := range in.Facts {
					parts[i] = f.Name + " " + f.Value
				}
				fmt.Fprintf(w, "           %s\n", termSafe(strings.Join(parts, ", ")))
			}
			for _, e := range in.Errors {
				fmt.Fprintf(w, "           error: %s\n", termSafe(e))
			}
		}
		fmt.Fprintln(w)
	}
	line := fmt.Sprintf("Status: %s. %d %s on %d %s", rep.Verdict, instances, plural(instances, "instance", "instances"), nodes, plural(nodes, "node", "nodes"))
	if drifted > 0 {
		line += fmt.Sprintf(", %d drifted", drifted)
	}
	if down > 0 {
		line += fmt.Sprintf(", %d down", down)
	}
	switch rep.Verdict {
	case engine.VerdictDrifted:
		line += ": run `sparkform plan` to see the differences."
	case engine.VerdictDown:
		line += ": `sparkform logs ADDRESS` shows a container's output, `sparkform plan` what apply would change."
	default:
		line += "."
	}
	fmt.Fprintln(w, line)
}
