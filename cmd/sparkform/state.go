package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

func noStateHint(err error) error {
	if errors.Is(err, state.ErrNoState) {
		return fmt.Errorf("no state yet in this directory (.sparkform/state.db); run `sparkform apply` first")
	}
	return err
}

// renderRecord prints one instance as `sparkform state show` does.
func (m *meta) renderRecord(r *state.Resource) error {
	v, err := engine.ResourceValue(r)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Address, err)
	}
	v = engine.MarkSensitive(v, r.SensitiveAttrs)
	var n sdk.Node
	_ = json.Unmarshal(r.Node, &n)
	fmt.Fprintf(m.stdout, "# %s:", termSafe(r.Address))
	if n.Name != "" {
		fmt.Fprintf(m.stdout, " (on %s)", termSafe(n.Name))
	}
	if r.Status == state.StatusTainted {
		fmt.Fprint(m.stdout, " (tainted)")
	}
	fmt.Fprintf(m.stdout, "\nresource %q %q {\n", r.Type, nameOf(r.Address))
	rd := &renderer{w: m.stdout}
	names := attrNames(v)
	width := 0
	for _, a := range names {
		width = max(width, len(a))
	}
	for _, a := range names {
		av := attrOf(v, a)
		if av.IsNull() {
			continue
		}
		fmt.Fprintf(m.stdout, "    %s%s = %s\n", a, strings.Repeat(" ", width-len(a)), rd.value(av, "    "))
	}
	fmt.Fprintln(m.stdout, "}")
	return nil
}

func newShowCommand(m *meta) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [PLANFILE]",
		Short: "Show the state, or a saved plan",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				p, err := plans.ReadFile(m.Path(args[0]))
				if err != nil {
					return err
				}
				if asJSON {
					return m.writePlanJSON(p)
				}
				m.renderPlan(p)
				return nil
			}
			st, err := m.openStateReadOnly()
			if err != nil {
				if errors.Is(err, state.ErrNoState) {
					if asJSON { // as Terraform: a document with no values
						return m.writeStateJSON(nil)
					}
					fmt.Fprintln(m.stdout, "The state is empty. Run `sparkform apply` to create objects.")
					return nil
				}
				return noStateHint(err)
			}
			defer st.Close()
			if asJSON {
				return m.writeStateJSON(st)
			}
			recs, err := st.Resources()
			if err != nil {
				return err
			}
			outs, err := st.Outputs()
			if err != nil {
				return err
			}
			if len(recs) == 0 {
				fmt.Fprintln(m.stdout, "The state is empty. Run `sparkform apply` to create objects.")
				return nil
			}
			for i, r := range recs {
				if i > 0 {
					fmt.Fprintln(m.stdout)
				}
				if err := m.renderRecord(r); err != nil {
					return err
				}
			}
			if len(outs) > 0 {
				fmt.Fprint(m.stdout, "\nOutputs:\n\n")
				for _, n := range slices.Sorted(maps.Keys(outs)) {
					v, _ := engine.DecodeValue(outs[n].Value)
					val := (&renderer{}).value(v, "")
					if outs[n].Sensitive {
						val = "<sensitive>"
					}
					fmt.Fprintf(m.stdout, "%s = %s\n", n, val)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newStateCommand(m *meta) *cobra.Command {
	cmd := &cobra.Command{Use: "state", Short: "Inspect and edit the state (list, show, rm, mv, history, undo, pull, push, migrate)"}
	cmd.AddCommand(
		newStatePullCommand(m),
		newStatePushCommand(m),
		newStateMigrateCommand(m),
		newStateListCommand(m),
		newStateShowCommand(m),
		newStateRmCommand(m),
		newStateMvCommand(m),
		newStateHistoryCommand(m),
		newStateUndoCommand(m),
	)
	return cmd
}
