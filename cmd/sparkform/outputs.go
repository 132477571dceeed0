package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/internal/command/jsonstate"
	"github.com/sparkform/sparkform/state"
)

// saveOutputs stores the outputs after an apply, as the engine says they
// are now (it keeps what the apply did not really change).
func (m *meta) saveOutputs(eng *engine.Engine, res *engine.ApplyResult, p *plans.Plan) error {
	opts := eng.Options()
	st, ok := opts.Store.(state.Store)
	if !ok || res == nil {
		return nil
	}
	stored, err := st.Outputs()
	if err != nil {
		return err
	}
	outs := map[string]state.Output{}
	for name, v := range res.Outputs {
		// A null output is not kept, as OpenTofu does: `output` and
		// `output -json` do not list it.
		if !v.IsWhollyKnown() || v.IsNull() {
			continue
		}
		raw, err := engine.EncodeValue(v)
		if err != nil {
			return err
		}
		sens := stored[name].Sensitive
		if o := opts.Module.Outputs[name]; o != nil {
			sens = o.Sensitive
		}
		outs[name] = state.Output{Value: raw, Sensitive: sens}
	}
	return st.PutOutputs(outs)
}

func (m *meta) printOutputs(res *engine.ApplyResult, p *plans.Plan) {
	if res == nil || len(res.Outputs) == 0 || p.Mode == plans.DestroyMode {
		return
	}
	names := make([]string, 0, len(res.Outputs))
	for n, v := range res.Outputs {
		if v.IsKnown() && v.IsNull() {
			continue // not kept in the state either (saveOutputs)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	r := &renderer{w: m.stdout, color: m.color()}
	fmt.Fprint(m.stdout, "\nOutputs:\n\n")
	for _, n := range names {
		val := r.value(res.Outputs[n], "")
		if o := p.Outputs[n]; o != nil && o.Sensitive {
			val = "<sensitive>"
		}
		fmt.Fprintf(m.stdout, "%s = %s\n", n, val)
	}
}

func newOutputCommand(m *meta) *cobra.Command {
	var asJSON, raw bool
	cmd := &cobra.Command{
		Use:   "output [NAME]",
		Short: "Show output values from the state",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := m.openStateReadOnly()
			if err != nil {
				return noStateHint(err)
			}
			defer st.Close()
			outs, err := st.Outputs()
			if err != nil {
				return err
			}
			vals := map[string]cty.Value{}
			for n, o := range outs {
				v, err := engine.DecodeValue(o.Value)
				if err != nil {
					return fmt.Errorf("output %s: %w", n, err)
				}
				vals[n] = v
			}
			if len(args) == 1 {
				v, ok := vals[args[0]]
				if !ok {
					return fmt.Errorf("output %q not found; the state has: %v", args[0], slices.Sorted(maps.Keys(vals)))
				}
				switch {
				case raw:
					if v.Type() != cty.String && v.Type() != cty.Number && v.Type() != cty.Bool {
						return fmt.Errorf("-raw works only for string, number and bool outputs; use -json for %s", v.Type().FriendlyName())
					}
					j, _ := jsonValue(v)
					fmt.Fprint(m.stdout, j)
				case asJSON:
					j, _ := jsonValue(v)
					b, _ := json.MarshalIndent(j, "", "  ")
					fmt.Fprintln(m.stdout, string(b))
				default:
					if outs[args[0]].Sensitive {
						fmt.Fprintln(m.stdout, "<sensitive>")
						return nil
					}
					fmt.Fprintln(m.stdout, (&renderer{w: m.stdout}).value(v, ""))
				}
				return nil
			}
			if asJSON {
				// Terraform's form: sensitive, type and value of each; a
				// sensitive value is left out (ask for it by name).
				all, err := jsonstate.Outputs(outs)
				if err != nil {
					return err
				}
				return writeJSONDocument(m.stdout, all)
			}
			if len(vals) == 0 {
				fmt.Fprintln(m.stderr, "No outputs found. Add output blocks to the configuration and run apply.")
				return nil
			}
			r := &renderer{w: m.stdout}
			for _, n := range slices.Sorted(maps.Keys(vals)) {
				val := r.value(vals[n], "")
				if outs[n].Sensitive {
					val = "<sensitive>"
				}
				fmt.Fprintf(m.stdout, "%s = %s\n", n, val)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().BoolVar(&raw, "raw", false, "print one string, number or bool output as is, for scripts")
	return cmd
}
