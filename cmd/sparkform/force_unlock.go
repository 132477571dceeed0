package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/state"
)

func newForceUnlockCommand(m *meta) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "force-unlock",
		Short: "Clear a state lock whose holder is gone",
		Long: `Clear the state lock record of a sparkform process that is no longer running.
A holder that is still alive on this host is refused unless -force is given:
breaking a live lock lets two applies change the same nodes at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			be, err := m.backend()
			if err != nil {
				return err
			}
			h, err := be.ForceUnlock(state.UnlockOptions{Force: force})
			if errors.Is(err, state.ErrNotLocked) {
				fmt.Fprintln(m.stdout, "The state is not locked: nothing to do.")
				return nil
			}
			if errors.Is(err, state.ErrHolderAlive) {
				return fmt.Errorf("%w\n\nThe holder is still running on this host; wait for it, or stop it. Use -force only if you are sure it does not change these nodes", err)
			}
			if err != nil {
				return err
			}
			if h == nil {
				fmt.Fprintln(m.stdout, "The state is not locked.")
				return nil
			}
			fmt.Fprintf(m.stdout, "sparkform state has been successfully unlocked (was held by %s).\n", h)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "break the lock even if its holder still runs")
	return cmd
}
