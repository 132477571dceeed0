package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/state"
)

// newStateUndoCommand is `sparkform state undo`: it puts back the record an instance had before a change.
func newStateUndoCommand(m *meta) *cobra.Command {
	return &cobra.Command{
		Use:   "undo ADDRESS [SERIAL]",
		Short: "Put back the record an instance had before its last change, or the change at SERIAL (state only)",
		Long: `Undo a mistaken change to the state (a wrong state rm, mv or import): the record
ADDRESS had just before the change numbered SERIAL in "sparkform state history"
is put back, or removed if it did not exist then; without SERIAL, the newest
change is undone. Nothing on the nodes changes; run plan afterwards to see how
the nodes compare.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var serial uint64
			if len(args) == 2 {
				n, err := strconv.ParseUint(args[1], 10, 64)
				if err != nil {
					return fmt.Errorf("SERIAL must be a number from `sparkform state history %s`, not %q", args[0], args[1])
				}
				serial = n
			}
			st, err := m.openState(0, "sparkform state undo")
			if err != nil {
				return err
			}
			defer st.Close()
			hs, err := st.History(args[0])
			if err != nil {
				return err
			}
			for _, h := range hs {
				if serial == 0 {
					serial = h.Serial // newest first
				}
				if h.Serial != serial {
					continue
				}
				if h.Prior == nil {
					if err := st.DeleteResource(args[0]); err != nil && !errors.Is(err, state.ErrResourceNotFound) {
						return err
					}
					fmt.Fprintf(m.stdout, "%s is out of the state again, as before serial %d. The nodes were not changed.\n", args[0], serial)
					return nil
				}
				if err := st.PutResource(h.Prior); err != nil {
					return err
				}
				fmt.Fprintf(m.stdout, "%s has its record from before serial %d again. The nodes were not changed; run plan to compare.\n", args[0], serial)
				return nil
			}
			if len(hs) == 0 {
				return fmt.Errorf("%s has no history to undo", args[0])
			}
			return fmt.Errorf("%s has no change at serial %d; `sparkform state history %s` lists the serials", args[0], serial, args[0])
		},
	}
}
