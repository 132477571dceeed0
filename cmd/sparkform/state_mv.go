package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine/addrs"
)

// newStateMvCommand is `sparkform state mv`: it renames an instance in the state.
func newStateMvCommand(m *meta) *cobra.Command {
	return &cobra.Command{
		Use: "mv SOURCE DESTINATION", Short: "Rename an instance in the state (after renaming it in config)", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if _, d := addrs.ParseResourceInstance(a); d.HasErrors() {
					m.diags(d)
					return &exitError{1}
				}
			}
			st, err := m.openState(0, "sparkform state mv")
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.MoveResource(args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(m.stdout, "Move %q to %q\nSuccessfully moved 1 object.\n", args[0], args[1])
			return nil
		},
	}
}
