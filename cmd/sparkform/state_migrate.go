package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/state"
)

// newStateMigrateCommand is `sparkform state migrate`: it copies the state between the local file and the configured backend.
func newStateMigrateCommand(m *meta) *cobra.Command {
	var toLocal, migForce bool
	var migTimeout time.Duration
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Copy the state between the local file and the configured backend",
		Long: `Copy the state from the local file (.sparkform/state.db) to the backend of the
configuration's sparkform block (e.g. etcd), or back with -to-local. Both
states are locked while copying. A target that holds another state (another
lineage) is refused unless -force is given. The source is left as it was.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			remote, err := m.backend()
			if err != nil {
				return err
			}
			local := state.Local{Path: m.StatePath()}
			if l, ok := remote.(state.Local); ok {
				return fmt.Errorf("nothing to migrate: the configuration keeps state in the local file %s; add a `sparkform { backend \"etcd\" { ... } }` block first", l.Path)
			}
			var from, to state.Backend = local, remote
			if toLocal {
				from, to = remote, local
			}
			if _, ok := from.(state.Local); ok {
				if _, err := os.Stat(local.Path); err != nil {
					return fmt.Errorf("nothing to migrate: no local state at %s", local.Path)
				}
			} else if err := os.MkdirAll(m.Dir()+"/.sparkform", 0o700); err != nil {
				return err
			}
			src, err := from.Open(state.Options{LockTimeout: migTimeout, Command: "sparkform state migrate (source)", ConvertValue: engine.CompactValue})
			if err != nil {
				return fmt.Errorf("source: %w", err)
			}
			defer src.Close()
			p, err := state.Export(src)
			if err != nil {
				return fmt.Errorf("source %s: %w", from, err)
			}
			dst, err := to.Open(state.Options{LockTimeout: migTimeout, Command: "sparkform state migrate (target)", ConvertValue: engine.CompactValue})
			if err != nil {
				return fmt.Errorf("target: %w", err)
			}
			defer dst.Close()
			if err := state.CheckTarget(dst, p, migForce); err != nil {
				return fmt.Errorf("target %s: %w", to, err)
			}
			if err := dst.Replace(p); err != nil {
				return fmt.Errorf("target %s: %w", to, err)
			}
			fmt.Fprintf(m.stdout, "Copied %d %s (lineage %s, serial %d) from %s to %s.\nThe source is unchanged; remove it once you no longer need it.\n",
				len(p.Resources), plural(len(p.Resources), "instance", "instances"), p.Lineage, p.Serial, from, to)
			return nil
		},
	}
	migrate.Flags().BoolVar(&toLocal, "to-local", false, "copy from the configured backend to the local file instead")
	migrate.Flags().BoolVar(&migForce, "force", false, "replace a target that holds another lineage")
	migrate.Flags().DurationVar(&migTimeout, "lock-timeout", 0, "wait this long for each state's lock")
	return migrate
}
