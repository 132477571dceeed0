package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/state"
)

// newStateRmCommand is `sparkform state rm`: it forgets instances: the nodes are not touched.
func newStateRmCommand(m *meta) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ADDRESS...",
		Short: "Forget instances: remove them from state without touching the nodes",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if _, d := addrs.ParseResourceInstance(a); d.HasErrors() {
					m.diags(d)
					return &exitError{1}
				}
			}
			st, err := m.openState(0, "sparkform state rm")
			if err != nil {
				return err
			}
			defer st.Close()
			for _, a := range args {
				if err := st.DeleteResource(a); err != nil {
					if errors.Is(err, state.ErrResourceNotFound) {
						return fmt.Errorf("no instance %s in the state", a)
					}
					return err
				}
				fmt.Fprintf(m.stdout, "Removed %s\n", a)
			}
			fmt.Fprintf(m.stdout, "Successfully removed %d resource %s. The nodes were not changed.\n", len(args), plural(len(args), "instance", "instances"))
			return nil
		},
	}
}
