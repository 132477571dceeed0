package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/state"
)

// newForceUnlockCommand is `sparkform force-unlock`: a stale state lock
// released.
func newForceUnlockCommand(m *meta) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "force-unlock [LOCK_ID]",
		Short: "Clear a state lock whose holder is gone",
		Long: `Clear the state lock record of a sparkform process that is no longer running.
A holder that is still alive on this host is refused unless -force is given:
breaking a live lock lets two applies change the same nodes at once.
LOCK_ID is the id a "state is locked" error printed: given, only that
hold of the lock is cleared, never a newer one.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			be, err := m.backend()
			if err != nil {
				return err
			}
			opts := state.UnlockOptions{Force: force}
			if len(args) == 1 {
				opts.ID = args[0]
			}
			h, err := be.ForceUnlock(opts)
			if errors.Is(err, state.ErrLockIDMismatch) {
				return fmt.Errorf("%w\n\nNothing was unlocked. Run the command again to see who holds the lock now", err)
			}
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
