package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/internal/recipeimport"
	sparkrecipe "github.com/sparkform/sparkform/modules/spark-recipe"
)

func newRecipeCommand(m *meta) *cobra.Command {
	cmd := &cobra.Command{Use: "recipe", Short: "Work with launcher recipes (import)"}
	var out string
	imp := &cobra.Command{
		Use:   "import RECIPE.toml",
		Short: "Write a root module that runs a launcher recipe through the spark-recipe module",
		Long: `Read a launcher recipe (*.recipe.toml) and write a root module to -o DIR
(default: the recipe's name without .toml): main.sf.hcl calling the
spark-recipe module, variables.sf.hcl (the nodes, given with -var or a var
file: never taken from the recipe), and a copy of the module under
modules/spark-recipe. Every recipe key is mapped (docs/recipes.md); an
unknown key is an error. Steps it cannot map become node_command resources,
with a warning and the step's line for each.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			res, err := recipeimport.Import(src, args[0])
			if err != nil {
				fmt.Fprintln(m.stderr, "Error:", err)
				return &exitError{1}
			}
			dir := out
			if dir == "" {
				dir = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(args[0]), ".toml"), ".recipe")
			}
			if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
				return fmt.Errorf("%s is not empty: give -o a new or empty folder, so nothing there is overwritten", dir)
			}
			files := map[string][]byte{}
			for n, b := range res.Files {
				files[n] = b
			}
			mods, _ := fs.Glob(sparkrecipe.Files, "*.sf.hcl")
			for _, n := range mods {
				b, err := fs.ReadFile(sparkrecipe.Files, n)
				if err != nil {
					return err
				}
				files[filepath.Join("modules", "spark-recipe", n)] = b
			}
			for n, b := range files {
				p := filepath.Join(dir, n)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, b, 0o644); err != nil {
					return err
				}
			}
			for _, w := range res.Warnings {
				if w.Line > 0 {
					fmt.Fprintf(m.stderr, "Warning: %s:%d: %s\n", args[0], w.Line, w.Message)
				} else {
					fmt.Fprintf(m.stderr, "Warning: %s: %s\n", args[0], w.Message)
				}
			}
			fmt.Fprintf(m.stdout, "Wrote %s (main.sf.hcl, variables.sf.hcl, modules/spark-recipe).\nGive the nodes with -var or a var file, then: cd %s && sparkform plan\n", dir, dir)
			return nil
		},
	}
	imp.Flags().StringVarP(&out, "out", "o", "", "folder to write the root module to (new or empty)")
	cmd.AddCommand(imp)
	return cmd
}
