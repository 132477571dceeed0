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
-json, validate prints one JSON document as Terraform's validate -json does:
format_version, valid, error_count, warning_count and the diagnostics, each
with its range and snippet.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			defer m.close()
			v := m.newValidateView(viewTypeOf(asJSON))
			mod, ok := m.loadConfig()
			if !ok {
				v.result(false)
				return &exitError{1}
			}
			if mod, ok = m.flatten(mod, nil); !ok {
				v.result(false)
				return &exitError{1}
			}
			host, err := m.pluginHost()
			if err != nil {
				m.fail(err)
				v.result(false)
				return &exitError{1}
			}
			eng := engine.New(engine.Options{Module: mod, Providers: host})
			valid := !m.diags(eng.Validate(context.Background()))
			v.result(valid)
			if !valid {
				return &exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "machine-readable output: one JSON document (Terraform's validate -json format)")
	return cmd
}
