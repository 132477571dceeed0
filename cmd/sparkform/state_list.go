package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/state"
)

// newStateListCommand is `sparkform state list`: it lists every instance address in the state.
func newStateListCommand(m *meta) *cobra.Command {
	return &cobra.Command{
		Use: "list", Short: "List every instance in the state", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := m.openStateReadOnly()
			if err != nil {
				if errors.Is(err, state.ErrNoState) {
					return nil
				}
				return err
			}
			defer st.Close()
			recs, err := st.Resources()
			if err != nil {
				return err
			}
			for _, r := range recs {
				fmt.Fprintln(m.stdout, termSafe(r.Address))
			}
			return nil
		},
	}
}
