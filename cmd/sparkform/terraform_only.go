package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// terraformOnlyCommands are Terraform commands sparkform has no use for.
// Each answers with what sparkform does instead, rather than "unknown
// command": a Terraform user's hands type them. Only init succeeds (there
// is nothing to initialise, so a script's `init && plan` goes on); the
// others exit 1, since doing nothing where the user asked for a change
// would be a lie. They are hidden from --help.
func terraformOnlyCommands() []*cobra.Command {
	refuse := func(use, msg string) *cobra.Command {
		return &cobra.Command{
			Use: use, Hidden: true, DisableFlagParsing: true,
			RunE: func(c *cobra.Command, args []string) error {
				return fmt.Errorf("sparkform has no %q command: %s", c.Name(), msg)
			},
		}
	}
	initCmd := &cobra.Command{
		Use: "init", Hidden: true, DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			for _, a := range args {
				if name := strings.TrimLeft(a, "-"); strings.HasPrefix(name, "backend-config") {
					return fmt.Errorf("sparkform has no init, and so nothing to give -backend-config to: backend settings are read by each command; " +
						"pass them there (sparkform plan -backend-config KEY=VALUE) or write them in the sparkform { backend ... } block")
				}
			}
			fmt.Fprintln(c.OutOrStdout(), "sparkform has nothing to initialise: its providers are built in (or found as "+
				"sparkform-provider-NAME in the plugin directory), modules are read from local folders, and state is "+
				"created by the first apply. Go on with `sparkform plan`.")
			return nil
		},
	}
	return []*cobra.Command{
		initCmd,
		refuse("refresh", "refresh what the nodes have into state with `sparkform apply -refresh-only` "+
			"(it shows what changed and asks first; Terraform deprecated its refresh command for the same reason)"),
		refuse("taint", "replace an instance with `sparkform apply -replace=ADDRESS` (plan takes -replace too, to see it first)"),
		refuse("untaint", "an instance is tainted only when its create failed part-way, and the next apply replaces it; "+
			"if the object on the node is good as it is, adopt it with `sparkform state rm ADDRESS` then `sparkform import ADDRESS ID`"),
		refuse("workspace", "one state per working directory (.sparkform/state.db), or per etcd prefix "+
			"(sparkform { backend \"etcd\" { prefix = ... } }): keep one directory per environment and use -chdir, "+
			"or -backend-config prefix=..."),
		refuse("get", "modules are read from their local source folders when a command runs; there is nothing to download"),
	}
}
