package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/state"
)

// newStatePushCommand is `sparkform state push`: it replaces the state with a snapshot from state pull.
func newStatePushCommand(m *meta) *cobra.Command {
	var pushForce bool
	var pushTimeout time.Duration
	push := &cobra.Command{
		Use:   "push FILE",
		Short: "Replace the state with a snapshot from state pull (- reads stdin)",
		Long: `Replace the state with a snapshot written by state pull. A state of another
lineage (a different state, not an older copy of this one), or a newer
serial of the same lineage, is refused unless -force is given.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r io.Reader = m.stdin
			if args[0] != "-" {
				data, err := os.ReadFile(args[0])
				if err != nil {
					return err
				}
				r = bytes.NewReader(data)
			}
			p, err := state.ReadPortable(r)
			if err != nil {
				return err
			}
			st, err := m.openState(pushTimeout, "sparkform state push")
			if err != nil {
				return err
			}
			defer st.Close()
			if err := state.CheckTarget(st, p, pushForce); err != nil {
				return err
			}
			if err := st.Replace(p); err != nil {
				return err
			}
			be, _ := m.backend()
			fmt.Fprintf(m.stdout, "Pushed %d %s (lineage %s, serial %d) to %s.\n",
				len(p.Resources), plural(len(p.Resources), "instance", "instances"), p.Lineage, p.Serial, be)
			return nil
		},
	}
	push.Flags().BoolVar(&pushForce, "force", false, "replace a state of another lineage or a newer serial")
	push.Flags().DurationVar(&pushTimeout, "lock-timeout", 0, "wait this long for the state lock")
	return push
}
