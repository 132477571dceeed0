package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// stateAddresses lists the instance addresses in the state, for shell
// completion. It reads without the lock and never fails loudly: no
// state means nothing to offer.
func (m *meta) stateAddresses(prefix string) []string {
	st, err := m.openStateReadOnly()
	if err != nil {
		return nil
	}
	defer st.Close()
	recs, err := st.Resources()
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range recs {
		if strings.HasPrefix(r.Address, prefix) {
			out = append(out, r.Address)
		}
	}
	return out
}

// completeAddresses completes positional ADDRESS arguments from the
// state; max limits how many addresses the command takes (0: any).
func completeAddresses(m *meta, max int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if max > 0 && len(args) >= max {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		taken := map[string]bool{}
		for _, a := range args {
			taken[a] = true
		}
		var out []cobra.Completion
		for _, a := range m.stateAddresses(toComplete) {
			if !taken[a] {
				out = append(out, a)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// registerAddressCompletion completes the named flags (-target,
// -replace) with addresses from the state.
func registerAddressCompletion(cmd *cobra.Command, m *meta, flags ...string) {
	for _, f := range flags {
		_ = cmd.RegisterFlagCompletionFunc(f, func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return m.stateAddresses(toComplete), cobra.ShellCompDirectiveNoFileComp
		})
	}
}

// withAddressCompletion sets the completion of cmd's ADDRESS arguments
// and returns cmd.
func withAddressCompletion(cmd *cobra.Command, m *meta, max int) *cobra.Command {
	cmd.ValidArgsFunction = completeAddresses(m, max)
	return cmd
}

// addressArgs says how many ADDRESS arguments each state subcommand
// takes (0: any number); their shell completion offers the addresses in
// the state. Set here, not beside each command, so one table covers them.
var addressArgs = map[string]int{"show": 1, "rm": 0, "mv": 1, "history": 1, "undo": 1}

// completeStateAddresses installs address completion on the state
// subcommands (state show, rm, mv, history, undo).
func completeStateAddresses(root *cobra.Command, m *meta) {
	for _, c := range root.Commands() {
		if c.Name() != "state" {
			continue
		}
		for _, sub := range c.Commands() {
			if max, ok := addressArgs[sub.Name()]; ok && sub.ValidArgsFunction == nil {
				withAddressCompletion(sub, m, max)
			}
		}
	}
}
