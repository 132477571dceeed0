package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
)

// newValidateCommand is `sparkform validate`: the configuration checked
// without touching nodes or state.
func newValidateCommand(m *meta) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the configuration without touching nodes or state",
		Long: `Check the syntax and meaning of every *.sf.hcl file: block types, attribute
names and types against the providers' schemas, references, and the providers'
own checks. Errors are printed with file:line:col and a source snippet; with
-json, each is a diagnostic message with its range in the machine-readable
stream, which ends with a "validate" message.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			defer m.close()
			if asJSON {
				m.startJSON()
			}
			mod, ok := m.loadConfig()
			if !ok {
				return m.validated(false)
			}
			if mod, ok = m.flatten(mod, nil); !ok {
				return &exitError{1}
			}
			host, err := m.pluginHost()
			if err != nil {
				return err
			}
			eng := engine.New(engine.Options{Module: mod, Providers: host})
			if m.diags(eng.Validate(context.Background())) {
				return m.validated(false)
			}
			return m.validated(true)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output: one JSON object per line")
	return cmd
}
