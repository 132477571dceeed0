package main

import (
	"io"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// newRoot builds the command tree and returns the meta its commands share,
// so run can report a final error in the -json stream when a command
// started one.
func newRoot(stdin io.Reader, stdout, stderr io.Writer) (*cobra.Command, *meta) {
	m := &meta{stdin: stdin, stdout: stdout, stderr: stderr}
	m.view = &humanView{m}
	root := &cobra.Command{
		Use:   "sparkform",
		Short: "Declarative, reversible node configuration for small GPU clusters",
		Long: `sparkform converges GPU nodes to what *.sf.hcl files in the working directory
describe — kernel module parameters, pinned runtime kits, model bind manifests,
containers and cgroups — and undoes it exactly with destroy.

Typical use:
  sparkform validate       check the configuration
  sparkform plan           see what would change on the nodes
  sparkform apply          make the changes (asks first)
  sparkform destroy        put every node back as it was
  sparkform status         what runs where now, and is it healthy (exit 0/2/3)
  sparkform logs ADDRESS   a container's output, or every rank's (-f follows)

Flags may be written Terraform-style with one dash (-auto-approve) or with two.
State lives in .sparkform/state.db in the working directory, or in etcd
with a sparkform { backend "etcd" { ... } } block (docs/state.md).
Set SPARKFORM_LOG=debug to see provider calls and remote round trips.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&m.chdir, "chdir", "", "switch to this directory before doing anything else")
	root.PersistentFlags().StringArrayVar(&m.backendConfig, "backend-config", nil,
		"override an argument of the configuration's backend block: -backend-config KEY=VALUE (repeatable; lists comma-separated)")
	root.PersistentFlags().BoolVar(&m.noColor, "no-color", false, "do not use color in output")
	root.PersistentFlags().BoolVar(&m.resetState, "reset-state", false,
		"let a command that writes state take an existing empty or lineage-less state file as a new state (a new lineage)")
	root.AddCommand(
		newValidateCommand(m), newFmtCommand(m), newPlanCommand(m), newApplyCommand(m, false),
		newApplyCommand(m, true), newShowCommand(m), newStateCommand(m), newOutputCommand(m),
		newGraphCommand(m), newImportCommand(m), newForceUnlockCommand(m), newVersionCommand(m), newProvidersCommand(m), newRecipeCommand(m),
		newStatusCommand(m), newLogsCommand(m),
	)
	root.AddCommand(terraformOnlyCommands()...)
	refuseUnknownSubcommands(root)
	completeStateAddresses(root, m)
	return root, m
}
