package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
)

// newGraphCommand is `sparkform graph`: the dependency graph in DOT.
func newGraphCommand(m *meta) *cobra.Command {
	return &cobra.Command{
		Use:   "graph",
		Short: "Print the dependency graph in DOT format (pipe to `dot -Tsvg`)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			defer m.close()
			mod, ok := m.loadConfig()
			if !ok {
				return &exitError{1}
			}
			if mod, ok = m.flatten(mod, nil); !ok {
				return &exitError{1}
			}
			host, err := m.pluginHost()
			if err != nil {
				return err
			}
			eng := engine.New(engine.Options{Module: mod, Providers: host})
			dot, ds := eng.GraphDOT(context.Background())
			if m.diags(ds) {
				return &exitError{1}
			}
			fmt.Fprint(m.stdout, dot)
			return nil
		},
	}
}
