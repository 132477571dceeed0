package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/cmd/sparkform/internal/jsonui"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/registry"
	"github.com/sparkform/sparkform/state"
)

// newVersionCommand is `sparkform version`.
func newVersionCommand(m *meta) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the sparkform version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				return m.versionJSON()
			}
			fmt.Fprintf(m.stdout, "sparkform v%s\non %s_%s, %s, provider protocol 1, state format %d, plan format %d\nbuilt-in providers: %s\n",
				version, runtime.GOOS, runtime.GOARCH, runtime.Version(), state.FormatVersion, plans.FormatVersion, strings.Join(registry.Names(), ", "))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as one JSON object (for scripts)")
	return cmd
}

// versionJSON is `version -json`: one object, in the manner of
// `terraform version -json`.
func (m *meta) versionJSON() error {
	enc := json.NewEncoder(m.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{
		"sparkform_version": version,
		"platform":          runtime.GOOS + "_" + runtime.GOARCH,
		"go_version":        runtime.Version(),
		"provider_protocol": 1,
		"state_format":      state.FormatVersion,
		"plan_format":       plans.FormatVersion,
		"ui_format":         jsonui.UIVersion,
		"builtin_providers": registry.Names(),
	})
}
