package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
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

func newFmtCommand(m *meta) *cobra.Command {
	var check, list bool
	cmd := &cobra.Command{
		Use:   "fmt [FILE...]",
		Short: "Rewrite *.sf.hcl files in the canonical format",
		Long:  "Rewrite configuration files in the canonical HCL style. With -check, change nothing and exit 3 when a file would change.",
		RunE: func(cmd *cobra.Command, args []string) error {
			files := args
			if len(files) == 0 {
				matches, _ := filepath.Glob(filepath.Join(m.Dir(), "*.sf.hcl"))
				files = matches
			}
			sort.Strings(files)
			changed := 0
			for _, f := range files {
				src, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				_, ds := hclwrite.ParseConfig(src, f, hcl.InitialPos)
				if ds.HasErrors() {
					m.files = map[string]*hcl.File{}
					m.diags(ds)
					return &exitError{1}
				}
				out := hclwrite.Format(src)
				if bytes.Equal(out, src) {
					continue
				}
				changed++
				if list || check {
					fmt.Fprintln(m.stdout, f)
				}
				if !check {
					if err := os.WriteFile(f, out, 0o644); err != nil {
						return err
					}
				}
			}
			if check && changed > 0 {
				return &exitError{3}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "only check; exit 3 when a file is not formatted")
	cmd.Flags().BoolVar(&list, "list", true, "list the files that change")
	return cmd
}

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
			host, err := m.pluginHost()
			if err != nil {
				return err
			}
			eng := &engine.Engine{Module: mod, Providers: host}
			dot, ds := eng.GraphDOT(context.Background())
			if m.diags(ds) {
				return &exitError{1}
			}
			fmt.Fprint(m.stdout, dot)
			return nil
		},
	}
}

func newForceUnlockCommand(m *meta) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "force-unlock",
		Short: "Clear a state lock whose holder is gone",
		Long: `Clear the state lock record of a sparkform process that is no longer running.
A holder that is still alive on this host is refused unless -force is given:
breaking a live lock lets two applies change the same nodes at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			be, err := m.backend()
			if err != nil {
				return err
			}
			h, err := be.ForceUnlock(state.UnlockOptions{Force: force})
			if errors.Is(err, state.ErrNotLocked) {
				fmt.Fprintln(m.stdout, "The state is not locked: nothing to do.")
				return nil
			}
			if errors.Is(err, state.ErrHolderAlive) {
				return fmt.Errorf("%w\n\nThe holder is still running on this host; wait for it, or stop it. Use -force only if you are sure it does not change these nodes", err)
			}
			if err != nil {
				return err
			}
			if h == nil {
				fmt.Fprintln(m.stdout, "The state is not locked.")
				return nil
			}
			fmt.Fprintf(m.stdout, "sparkform state has been successfully unlocked (was held by %s).\n", h)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "break the lock even if its holder still runs")
	return cmd
}

func newVersionCommand(m *meta) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the sparkform version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(m.stdout, "sparkform v%s\non %s_%s, %s, provider protocol 1, state format %d, plan format %d\nbuilt-in providers: %s\n",
				version, runtime.GOOS, runtime.GOARCH, runtime.Version(), state.FormatVersion, plans.FormatVersion, strings.Join(builtinProviders(), ", "))
			return nil
		},
	}
}

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
			for _, name := range builtinProviders() {
				s, err := host.Schema(context.Background(), name)
				if err != nil {
					return fmt.Errorf("provider %s: %w", name, err)
				}
				types := map[string]any{}
				for tn, rs := range s.ResourceTypes {
					types[tn] = map[string]any{"version": rs.Version, "description": rs.Description, "block": blockJSON(rs.Block)}
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

func blockJSON(b *sdk.Block) map[string]any {
	attrs := map[string]any{}
	for n, a := range b.Attributes {
		ty, _ := ctyjson.MarshalType(a.Type)
		attrs[n] = map[string]any{"type": json.RawMessage(ty), "description": a.Description, "required": a.Required,
			"optional": a.Optional, "computed": a.Computed, "force_new": a.ForceNew, "sensitive": a.Sensitive}
	}
	blocks := map[string]any{}
	for n, nb := range b.BlockTypes {
		nbb := nb.Block
		blocks[n] = map[string]any{"nesting_mode": nb.Nesting.String(), "min_items": nb.MinItems, "max_items": nb.MaxItems,
			"force_new": nb.ForceNew, "description": nb.Description, "block": blockJSON(&nbb)}
	}
	return map[string]any{"attributes": attrs, "block_types": blocks}
}
