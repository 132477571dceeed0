package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/rogpeppe/go-internal/diff"
	"github.com/spf13/cobra"
)

// newFmtCommand is `sparkform fmt`: *.sf.hcl files in the canonical format.
func newFmtCommand(m *meta) *cobra.Command {
	var check, list, showDiff bool
	cmd := &cobra.Command{
		Use:   "fmt [FILE...|-]",
		Short: "Rewrite *.sf.hcl files in the canonical format",
		Long: `Rewrite configuration files in the canonical HCL style. With -check, change
nothing and exit 3 when a file would change; with -diff, print a unified diff
of the changes. "sparkform fmt -" reads a configuration on stdin and writes it
formatted to stdout (for editors).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] == "-" {
				return m.fmtStdin(check, showDiff)
			}
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
				if showDiff {
					m.stdout.Write(diff.Diff("old/"+f, src, "new/"+f, out))
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
	cmd.Flags().BoolVar(&showDiff, "diff", false, "print a unified diff of the changes")
	return cmd
}

// fmtStdin is `fmt -`: format stdin to stdout. With -check nothing is
// printed and the exit status is 3 when the input is not formatted; with
// -diff the diff is printed instead of the formatted text.
func (m *meta) fmtStdin(check, showDiff bool) error {
	src, err := io.ReadAll(m.stdin)
	if err != nil {
		return err
	}
	if _, ds := hclwrite.ParseConfig(src, "<stdin>", hcl.InitialPos); ds.HasErrors() {
		m.files = map[string]*hcl.File{"<stdin>": {Bytes: src}}
		m.diags(ds)
		return &exitError{1}
	}
	out := hclwrite.Format(src)
	switch {
	case showDiff:
		m.stdout.Write(diff.Diff("old/<stdin>", src, "new/<stdin>", out))
	case !check:
		m.stdout.Write(out)
	}
	if check && !bytes.Equal(out, src) {
		return &exitError{3}
	}
	return nil
}
