package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/state"
)

// newStateShowCommand is `sparkform state show`: it prints one instance's record.
func newStateShowCommand(m *meta) *cobra.Command {
	return &cobra.Command{
		Use: "show ADDRESS", Short: "Show one instance in the state", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := m.openStateReadOnly()
			if err != nil {
				return noStateHint(err)
			}
			defer st.Close()
			r, err := st.Resource(args[0])
			if err != nil {
				if errors.Is(err, state.ErrResourceNotFound) {
					return fmt.Errorf("no instance %s in the state; `sparkform state list` shows what there is", args[0])
				}
				return err
			}
			return m.renderRecord(r)
		},
	}
}
