package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/state"
)

// newStatePullCommand is `sparkform state pull`: it prints the whole state as a portable JSON snapshot.
func newStatePullCommand(m *meta) *cobra.Command {
	pull := &cobra.Command{
		Use:   "pull",
		Short: "Print the whole state as a portable JSON snapshot (for backup, or state push)",
		Long: `Print the state as one JSON document: lineage, serial, every instance and the
outputs. It holds what the state holds (node details, provider-private data):
keep it as private as the state. Reading takes no lock.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := m.openStateReadOnly()
			if err != nil {
				return noStateHint(err)
			}
			defer st.Close()
			p, intents, err := state.ExportWithIntents(st)
			if err != nil {
				return err
			}
			if len(intents) > 0 {
				fmt.Fprintf(m.stderr, "Warning: %d journal %s in flight (a running apply, or one that was interrupted; first: %s): "+
					"the snapshot has the state without them. Pull again after the run, or after `sparkform plan` settles them.\n",
					len(intents), plural(len(intents), "intent is", "intents are"), intents[0].Address)
			}
			// Values as JSON, readable and independent of this build's
			// compact record encoding.
			for i, r := range p.Resources {
				if p.Resources[i], err = engine.JSONForm(r); err != nil {
					return err
				}
			}
			return state.WritePortable(m.stdout, p)
		},
	}
	return pull
}
