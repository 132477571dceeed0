package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/addrs"
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
	v, err := engine.DecodeValue(r.Value)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Address, err)
	}
	var n sdk.Node
	_ = json.Unmarshal(r.Node, &n)
	fmt.Fprintf(m.stdout, "# %s:", r.Address)
	if n.Name != "" {
		fmt.Fprintf(m.stdout, " (on %s)", n.Name)
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
				p, err := plans.ReadFile(args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writePlanJSON(m.stdout, p, nil)
				}
				(&renderer{w: m.stdout, color: m.color()}).plan(p)
				return nil
			}
			st, err := m.openStateReadOnly()
			if err != nil {
				if errors.Is(err, state.ErrNoState) && !asJSON {
					fmt.Fprintln(m.stdout, "The state is empty. Run `sparkform apply` to create objects.")
					return nil
				}
				return noStateHint(err)
			}
			defer st.Close()
			recs, err := st.Resources()
			if err != nil {
				return err
			}
			outs, err := st.Outputs()
			if err != nil {
				return err
			}
			if asJSON {
				meta, _ := st.Meta()
				type jr struct {
					Address  string `json:"address"`
					Type     string `json:"type"`
					Provider string `json:"provider"`
					Node     string `json:"node,omitempty"`
					Tainted  bool   `json:"tainted,omitempty"`
					Values   any    `json:"values"`
				}
				doc := struct {
					Lineage   string         `json:"lineage"`
					Serial    uint64         `json:"serial"`
					Resources []jr           `json:"resources"`
					Outputs   map[string]any `json:"outputs"`
				}{Lineage: meta.Lineage, Serial: meta.Serial, Resources: []jr{}, Outputs: map[string]any{}}
				for _, r := range recs {
					v, err := engine.DecodeValue(r.Value)
					if err != nil {
						return err
					}
					var n sdk.Node
					_ = json.Unmarshal(r.Node, &n)
					j, _ := jsonValue(v)
					doc.Resources = append(doc.Resources, jr{Address: r.Address, Type: r.Type, Provider: r.Provider, Node: n.Name, Tainted: r.Status == state.StatusTainted, Values: j})
				}
				for name, o := range outs {
					v, _ := engine.DecodeValue(o.Value)
					j, _ := jsonValue(v)
					if o.Sensitive {
						j = "(sensitive value)"
					}
					doc.Outputs[name] = map[string]any{"value": j, "sensitive": o.Sensitive}
				}
				enc := json.NewEncoder(m.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(doc)
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
				for _, n := range sortedKeys(outs) {
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
	cmd.AddCommand(stateMoveCommands(m)...)
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List every instance in the state", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := m.openStateReadOnly()
			if err != nil {
				if errors.Is(err, state.ErrNoState) {
					return nil
				}
				return err
			}
			defer st.Close()
			recs, err := st.Resources()
			if err != nil {
				return err
			}
			for _, r := range recs {
				fmt.Fprintln(m.stdout, r.Address)
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use: "show ADDRESS", Short: "Show one instance in the state", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := m.openStateReadOnly()
			if err != nil {
				return noStateHint(err)
			}
			defer st.Close()
			r, err := st.Resource(args[0])
			if err != nil {
				if errors.Is(err, state.ErrResourceNotFound) {
					return fmt.Errorf("no instance %s in the state; `sparkform state list` shows what there is", args[0])
				}
				return err
			}
			return m.renderRecord(r)
		},
	})
	var lockTimeout = new(string)
	rm := &cobra.Command{
		Use:   "rm ADDRESS...",
		Short: "Forget instances: remove them from state without touching the nodes",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if _, d := addrs.ParseResourceInstance(a); d.HasErrors() {
					m.diags(d)
					return &exitError{1}
				}
			}
			st, err := m.openState(0, "sparkform state rm")
			if err != nil {
				return err
			}
			defer st.Close()
			for _, a := range args {
				if err := st.DeleteResource(a); err != nil {
					if errors.Is(err, state.ErrResourceNotFound) {
						return fmt.Errorf("no instance %s in the state", a)
					}
					return err
				}
				fmt.Fprintf(m.stdout, "Removed %s\n", a)
			}
			fmt.Fprintf(m.stdout, "Successfully removed %d resource %s. The nodes were not changed.\n", len(args), plural(len(args), "instance", "instances"))
			return nil
		},
	}
	_ = lockTimeout
	cmd.AddCommand(rm)
	cmd.AddCommand(&cobra.Command{
		Use: "mv SOURCE DESTINATION", Short: "Rename an instance in the state (after renaming it in config)", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if _, d := addrs.ParseResourceInstance(a); d.HasErrors() {
					m.diags(d)
					return &exitError{1}
				}
			}
			st, err := m.openState(0, "sparkform state mv")
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.MoveResource(args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(m.stdout, "Move %q to %q\nSuccessfully moved 1 object.\n", args[0], args[1])
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use: "history ADDRESS", Short: "Show the earlier values of an instance, newest first", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := m.openStateReadOnly()
			if err != nil {
				return noStateHint(err)
			}
			defer st.Close()
			hs, err := st.History(args[0])
			if err != nil {
				return err
			}
			if len(hs) == 0 {
				fmt.Fprintf(m.stdout, "No history for %s.\n", args[0])
			}
			for _, h := range hs {
				fmt.Fprintf(m.stdout, "serial %d  %s  %s", h.Serial, h.Time.Format("2006-01-02 15:04:05"), h.Action)
				if h.Peer != "" {
					fmt.Fprintf(m.stdout, " (%s)", h.Peer)
				}
				fmt.Fprintln(m.stdout)
				if h.Prior != nil {
					v, _ := engine.DecodeValue(h.Prior.Value)
					fmt.Fprintf(m.stdout, "  before: %s\n", (&renderer{}).value(v, "  "))
				} else {
					fmt.Fprintln(m.stdout, "  before: (not in state)")
				}
			}
			if len(hs) > 0 {
				fmt.Fprintf(m.stdout, "\nTo put an earlier record back: sparkform state undo %s SERIAL\n", args[0])
			}
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "undo ADDRESS [SERIAL]",
		Short: "Put back the record an instance had before its last change, or the change at SERIAL (state only)",
		Long: `Undo a mistaken change to the state (a wrong state rm, mv or import): the record
ADDRESS had just before the change numbered SERIAL in "sparkform state history"
is put back, or removed if it did not exist then; without SERIAL, the newest
change is undone. Nothing on the nodes changes; run plan afterwards to see how
the nodes compare.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var serial uint64
			if len(args) == 2 {
				n, err := strconv.ParseUint(args[1], 10, 64)
				if err != nil {
					return fmt.Errorf("SERIAL must be a number from `sparkform state history %s`, not %q", args[0], args[1])
				}
				serial = n
			}
			st, err := m.openState(0, "sparkform state undo")
			if err != nil {
				return err
			}
			defer st.Close()
			hs, err := st.History(args[0])
			if err != nil {
				return err
			}
			for _, h := range hs {
				if serial == 0 {
					serial = h.Serial // newest first
				}
				if h.Serial != serial {
					continue
				}
				if h.Prior == nil {
					if err := st.DeleteResource(args[0]); err != nil && !errors.Is(err, state.ErrResourceNotFound) {
						return err
					}
					fmt.Fprintf(m.stdout, "%s is out of the state again, as before serial %d. The nodes were not changed.\n", args[0], serial)
					return nil
				}
				if err := st.PutResource(h.Prior); err != nil {
					return err
				}
				fmt.Fprintf(m.stdout, "%s has its record from before serial %d again. The nodes were not changed; run plan to compare.\n", args[0], serial)
				return nil
			}
			if len(hs) == 0 {
				return fmt.Errorf("%s has no history to undo", args[0])
			}
			return fmt.Errorf("%s has no change at serial %d; `sparkform state history %s` lists the serials", args[0], serial, args[0])
		},
	})
	return cmd
}
