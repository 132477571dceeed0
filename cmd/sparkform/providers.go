package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/sparkform/sparkform/providers/registry"
	"github.com/sparkform/sparkform/providers/sdk"
)

// newProvidersCommand is `sparkform providers`: the providers and their
// schemas.
func newProvidersCommand(m *meta) *cobra.Command {
	cmd := &cobra.Command{Use: "providers", Short: "Inspect providers"}
	var asJSON bool
	schema := &cobra.Command{
		Use:   "schema",
		Short: "Print the schemas of the built-in providers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			defer m.close()
			if !asJSON {
				return fmt.Errorf("only -json output is supported: sparkform providers schema -json")
			}
			host, err := m.pluginHost()
			if err != nil {
				return err
			}
			doc := map[string]any{"format_version": "1.0"}
			provs := map[string]any{}
			for _, name := range registry.Names() {
				s, err := host.Schema(context.Background(), name)
				if err != nil {
					return fmt.Errorf("provider %s: %w", name, err)
				}
				types := map[string]any{}
				for tn, rs := range s.ResourceTypes {
					t := map[string]any{"version": rs.Version, "description": rs.Description, "block": blockJSON(rs.Block)}
					if len(rs.Identity) > 0 {
						t["identity"] = rs.Identity
					}
					if len(rs.IdentityFold) > 0 {
						t["identity_fold"] = rs.IdentityFold
					}
					types[tn] = t
				}
				provs[name] = map[string]any{"resource_schemas": types}
			}
			doc["provider_schemas"] = provs
			enc := json.NewEncoder(m.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(doc)
		},
	}
	schema.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.AddCommand(schema)
	return cmd
}

// blockJSON is a schema block as `providers schema -json` prints it.
func blockJSON(b *sdk.Block) map[string]any {
	attrs := map[string]any{}
	for n, a := range b.Attributes {
		ty, _ := ctyjson.MarshalType(a.Type)
		attrs[n] = map[string]any{"type": json.RawMessage(ty), "description": a.Description, "required": a.Required,
			"optional": a.Optional, "computed": a.Computed, "force_new": a.ForceNew, "sensitive": a.Sensitive, "sensitive_with": a.SensitiveWith}
	}
	blocks := map[string]any{}
	for n, nb := range b.BlockTypes {
		nbb := nb.Block
		blocks[n] = map[string]any{"nesting_mode": nb.Nesting.String(), "min_items": nb.MinItems, "max_items": nb.MaxItems,
			"force_new": nb.ForceNew, "description": nb.Description, "block": blockJSON(&nbb)}
	}
	return map[string]any{"attributes": attrs, "block_types": blocks}
}
