package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
)

// newStateHistoryCommand is `sparkform state history`: it lists the earlier records of an instance, newest first.
func newStateHistoryCommand(m *meta) *cobra.Command {
	return &cobra.Command{
		Use: "history ADDRESS", Short: "Show the earlier values of an instance, newest first", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := m.openStateReadOnly()
			if err != nil {
				return noStateHint(err)
			}
			defer st.Close()
			hs, err := st.History(args[0])
			if err != nil {
				return err
			}
			if len(hs) == 0 {
				fmt.Fprintf(m.stdout, "No history for %s.\n", args[0])
			}
			// What the instance hides now is hidden in its earlier values
			// too (records from before state kept it name none).
			var hidden []string
			if cur, err := st.Resource(args[0]); err == nil {
				hidden = cur.SensitiveAttrs
			}
			for _, h := range hs {
				fmt.Fprintf(m.stdout, "serial %d  %s  %s", h.Serial, h.Time.Format("2006-01-02 15:04:05"), termSafe(h.Action))
				if h.Peer != "" {
					fmt.Fprintf(m.stdout, " (%s)", termSafe(h.Peer))
				}
				fmt.Fprintln(m.stdout)
				if h.Prior != nil {
					v, _ := engine.ResourceValue(h.Prior)
					v = engine.MarkSensitive(v, append(slices.Clone(hidden), h.Prior.SensitiveAttrs...))
					fmt.Fprintf(m.stdout, "  before: %s\n", (&renderer{}).value(v, "  "))
				} else {
					fmt.Fprintln(m.stdout, "  before: (not in state)")
				}
			}
			if len(hs) > 0 {
				fmt.Fprintf(m.stdout, "\nTo put an earlier record back: sparkform state undo %s SERIAL\n", args[0])
			}
			return nil
		},
	}
}
