package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newImportCommand(m *meta) *cobra.Command {
	var vars varFlags
	var lockTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "import ADDRESS ID",
		Short: "Bring an existing object under sparkform's management",
		Long: `Read an existing object (a container by name, a module by name, ...) on the node
the configuration gives ADDRESS, and record it in state. Nothing on the node
changes. The resource block must already be in the configuration; run plan
afterwards to see how the object differs from it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			defer m.close()
			mod, ok := m.loadConfig()
			if !ok {
				return &exitError{1}
			}
			vals, ok := m.variables(mod, &vars)
			if !ok {
				return &exitError{1}
			}
			if mod, ok = m.flatten(mod, vals); !ok {
				return &exitError{1}
			}
			st, err := m.openState(lockTimeout, "sparkform import")
			if err != nil {
				return err
			}
			m.onClose(func() { st.Close() })
			eng, err := m.newEngine(mod, st, nil, 10)
			if err != nil {
				return err
			}
			ctx, stop := m.interruptible()
			defer stop()
			if m.diags(eng.Import(ctx, args[0], args[1], vals)) {
				return &exitError{1}
			}
			fmt.Fprintf(m.stdout, "%s: Import complete (id %s).\nThe object is now managed by sparkform. Run `sparkform plan` to see how it differs from the configuration.\n", args[0], args[1])
			return nil
		},
	}
	addVarFlags(cmd, &vars)
	cmd.Flags().DurationVar(&lockTimeout, "lock-timeout", 0, "how long to wait for the state lock")
	return cmd
}
