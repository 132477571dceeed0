package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
)

func newValidateCommand(m *meta) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the configuration without touching nodes or state",
		Long: `Check the syntax and meaning of every *.sf.hcl file: block types, attribute
names and types against the providers' schemas, references, and the providers'
own checks. Errors are printed with file:line:col and a source snippet.`,
		Args: cobra.NoArgs,
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
			eng := &engine.Engine{Module: mod, Providers: host}
			if m.diags(eng.Validate(context.Background())) {
				return &exitError{1}
			}
			fmt.Fprintln(m.stdout, "Success! The configuration is valid.")
			return nil
		},
	}
}
