package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// planFlags are shared by plan, apply and destroy.
type planFlags struct {
	vars             varFlags
	destroy          bool
	refreshOnly      bool
	refresh          bool
	targets, replace []string
	lockTimeout      time.Duration
	parallelism      int
	json             bool
	input            bool // -input=false: fail instead of asking
	lock             bool // -lock=false: read state without the lock (plan only)
	// excludeUnreachable: leave out the nodes that cannot be reached,
	// named in the plan, instead of failing (engine.PlanOptions).
	excludeUnreachable bool
}

func addPlanFlags(cmd *cobra.Command, m *meta, f *planFlags, withDestroy bool) {
	addVarFlags(cmd, &f.vars)
	if withDestroy {
		cmd.Flags().BoolVar(&f.destroy, "destroy", false, "plan to destroy every managed object")
	}
	cmd.Flags().BoolVar(&f.refreshOnly, "refresh-only", false, "only update state to match the nodes; change nothing on them")
	cmd.Flags().BoolVar(&f.refresh, "refresh", true, "refresh from the nodes before planning (-refresh=false skips it)")
	cmd.Flags().StringArrayVar(&f.targets, "target", nil, "limit to this resource or instance and what it depends on (repeatable)")
	cmd.Flags().StringArrayVar(&f.replace, "replace", nil, "force replacement of this instance (repeatable)")
	cmd.Flags().DurationVar(&f.lockTimeout, "lock-timeout", 0, "how long to wait for the state lock (e.g. 30s)")
	cmd.Flags().IntVar(&f.parallelism, "parallelism", 10, "how many nodes have provider operations in flight at once (the node checks, reads, plans and changes; up to as many operations on each of those nodes, over its one connection)")
	cmd.Flags().BoolVar(&f.excludeUnreachable, "exclude-unreachable", false, "leave out the nodes that cannot be reached instead of failing: the plan names each one left out, and apply changes the other nodes, then exits non-zero with one error per node left out")
	cmd.Flags().BoolVar(&f.json, "json", false, "machine-readable output: one JSON object per line (see docs/cli.md)")
	cmd.Flags().BoolVar(&f.input, "input", true, "ask for input when needed; -input=false fails instead (for automation)")
	cmd.Flags().BoolVar(&f.lock, "lock", true, "take the state lock; -lock=false reads state without it (plan only; a warning says so)")
	registerAddressCompletion(cmd, m, "target", "replace")
}

func (f *planFlags) mode() plans.Mode {
	switch {
	case f.destroy:
		return plans.DestroyMode
	case f.refreshOnly:
		return plans.RefreshOnlyMode
	}
	return plans.NormalMode
}

// configDigest identifies the configuration a plan was made from.
func configDigest(mod *config.Module) string {
	names := make([]string, 0, len(mod.Files))
	for n := range mod.Files {
		if !mod.VarFiles[n] { // their values are in the plan
			names = append(names, n)
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(mod.Files[n].Bytes))
		h.Write(mod.Files[n].Bytes)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func newPlanCommand(m *meta) *cobra.Command {
	var f planFlags
	var out string
	var detailed bool
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what apply would change on the nodes",
		Long: `Refresh what the nodes really have, compare it with the configuration, and show
the changes apply would make. Nothing on the nodes is changed.

Exit codes with -detailed-exitcode: 0 no changes, 1 error, 2 changes present.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			defer m.close()
			v := m.newOperationView(viewTypeOf(f.json))
			p, _, code := m.makePlan(v, &f, "sparkform plan")
			if p == nil {
				return &exitError{code}
			}
			if out != "" {
				if err := plans.WriteFile(m.Path(out), p); err != nil {
					return fmt.Errorf("writing plan file: %w", err)
				}
				v.planSaved(out)
			}
			if code != 0 {
				return &exitError{code}
			}
			if detailed && p.HasChanges() {
				return &exitError{2}
			}
			return nil
		},
	}
	addPlanFlags(cmd, m, &f, true)
	cmd.Flags().StringVar(&out, "out", "", "write the plan to this file, for apply to carry out exactly")
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 0 when there are no changes, 2 when there are, 1 on error")
	return cmd
}

// makePlan loads config and state and plans. It returns the plan, the
// engine (for an apply that follows) and an exit code (non-zero: error,
// already reported).
func (m *meta) makePlan(v operationView, f *planFlags, command string) (*plans.Plan, *engine.Engine, int) {
	mod, ok := m.loadConfig()
	if !ok {
		return nil, nil, 1
	}
	vals, ok := m.variables(mod, &f.vars)
	if !ok {
		return nil, nil, 1
	}
	if mod, ok = m.flatten(mod, vals); !ok {
		return nil, nil, 1
	}
	targets, ds := addrs.ParseTargets(f.targets)
	replace, d := addrs.ParseResourceInstances(f.replace)
	if m.diags(append(ds, d...)) {
		return nil, nil, 1
	}
	hooks := newUIHooks(v)
	eng, err := m.newEngine(mod, nil, hooks, f.parallelism)
	if err != nil {
		m.fail(err)
		return nil, nil, 1
	}
	var ahead []sdk.Node
	if f.mode() == plans.NormalMode {
		// Config errors are reported before state is touched, so bad input
		// never creates or locks anything; the configuration graph built
		// here is the plan's.
		if f.refresh && len(f.targets) == 0 {
			ahead = m.prewarmNodes(mod, vals, f.parallelism)
		}
		if m.diags(eng.Validate(context.Background())) {
			return nil, nil, 1
		}
	}
	var st state.Store
	if f.lock {
		st, err = m.openState(f.lockTimeout, command)
	} else {
		st, err = m.openStateUnlocked()
	}
	if err != nil {
		m.fail(err)
		return nil, nil, 1
	}
	m.onClose(func() { st.Close() })
	eng.SetStore(st)
	ctx, stop := m.interruptible()
	defer stop()
	p, ds := eng.Plan(ctx, engine.PlanOptions{Mode: f.mode(), Variables: vals, SkipRefresh: !f.refresh, Targets: targets, Replace: replace, ExcludeUnreachable: f.excludeUnreachable, DialledAhead: ahead})
	if m.diags(ds) || p == nil {
		return nil, nil, 1
	}
	p.ConfigDigest = configDigest(mod)
	cost := hooks.cost()
	if m.host != nil {
		cost.rpcs = m.host.Stats()
	}
	v.planned(p, cost)
	m.flush()
	return p, eng, 0
}

// renderPlan prints p for people, through one buffer written out at the
// end: the plan of 10,000 instances is a few MB in a few dozen writes.
func (m *meta) renderPlan(p *plans.Plan) {
	w := bufio.NewWriterSize(m.stdout, flushSize)
	(&renderer{w: w, color: m.color()}).plan(p)
	_ = w.Flush()
}

func debugLog() bool {
	l := os.Getenv("SPARKFORM_LOG")
	return l == "debug" || l == "DEBUG" || l == "trace" || l == "TRACE"
}

func newApplyCommand(m *meta, destroy bool) *cobra.Command {
	var f planFlags
	var autoApprove bool
	use, short := "apply [PLANFILE]", "Make the changes the configuration calls for"
	long := `Plan (or read a saved plan), show it, ask for approval, then make the changes
in dependency order, in parallel. Each instance's result is saved the moment it
lands. With a saved plan file, no question is asked and exactly that plan runs;
a plan made against a state that has since changed is refused.`
	if destroy {
		use, short = "destroy", "Undo everything: restore every node to what it was"
		long = `Destroy every object in state, in reverse dependency order: containers first,
then manifests and kits, and last the kernel modules are put back to the
parameters observed before the first apply. Same as apply -destroy.`
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			defer m.close()
			if destroy {
				f.destroy = true
			}
			v := m.newOperationView(viewTypeOf(f.json))
			if err := f.checkApply(cmd, args, autoApprove); err != nil {
				return m.failed(err)
			}
			if len(args) == 1 {
				return m.applySaved(v, args[0], &f)
			}
			p, eng, code := m.makePlan(v, &f, "sparkform "+cmd.Name())
			if p == nil {
				return &exitError{code}
			}
			if !p.HasChanges() && len(p.Excluded) == 0 { // a node left out fails the apply (runApply)
				if f.mode() == plans.RefreshOnlyMode || len(p.Drift) == 0 {
					v.nothingToApply(p)
					return nil
				}
			}
			if !autoApprove && !f.input {
				m.fail(fmt.Errorf("approval needed, but -input=false forbids asking: run %s again with -auto-approve, or save the plan (plan -out FILE) and apply that file", cmd.Name()))
				return &exitError{1}
			}
			if !autoApprove {
				q, d := "Do you want to perform these actions?", "sparkform will perform the actions described above."
				if f.destroy {
					q, d = "Do you really want to destroy all resources?", "sparkform will destroy all your managed objects and restore the nodes. There is no undo."
				}
				if !m.confirm(q, d) {
					fmt.Fprintln(m.stderr, "Apply cancelled.")
					return &exitError{1}
				}
			}
			return m.runApply(v, eng, p, false)
		},
	}
	addPlanFlags(cmd, m, &f, !destroy)
	cmd.Flags().BoolVar(&autoApprove, "auto-approve", false, "skip the interactive approval")
	return cmd
}

// applySaved applies a plan file.
func (m *meta) applySaved(v operationView, path string, f *planFlags) error {
	p, err := plans.ReadFile(m.Path(path))
	if err != nil {
		return m.failed(fmt.Errorf("reading plan file %s: %w", path, err))
	}
	mod, ok := m.loadConfig()
	if !ok {
		return &exitError{1}
	}
	if f.excludeUnreachable {
		p.ExcludeUnreachable = true // a node dead now is left out too
	}
	if p.ConfigDigest != configDigest(mod) { // plans.Read refuses a file without one
		return m.failed(fmt.Errorf("%w: the configuration files changed since the plan was made; run plan again", plans.ErrStalePlan))
	}
	if mod, ok = m.flatten(mod, p.Variables); !ok {
		return &exitError{1}
	}
	st, err := m.openState(f.lockTimeout, "sparkform apply "+path)
	if err != nil {
		return m.failed(err)
	}
	m.onClose(func() { st.Close() })
	eng, err := m.newEngine(mod, st, newUIHooks(v), f.parallelism)
	if err != nil {
		return m.failed(err)
	}
	return m.runApply(v, eng, p, true)
}

// runApply applies p (saved: read from a plan file, not shown yet) and
// reports the outcome through v.
func (m *meta) runApply(v operationView, eng *engine.Engine, p *plans.Plan, saved bool) error {
	ctx, stop := m.interruptible()
	defer stop()
	n := 0
	for _, c := range p.Changes {
		if c.Action != plans.NoOp {
			n++
		}
	}
	v.applying(p, saved)
	v.display().setTotal(n)
	res, ds := eng.Apply(ctx, p)
	v.display().close() // the summary below is printed plainly
	failed := m.diags(ds)
	if err := m.saveOutputs(eng, res, p); err != nil {
		m.fail(fmt.Errorf("saving outputs: %w", err))
		failed = true
	}
	if res == nil {
		res = &engine.ApplyResult{}
	}
	v.applied(p, res, failed, ctx.Err() != nil)
	if failed || ctx.Err() != nil {
		return &exitError{1}
	}
	return nil
}

func applyWord(p *plans.Plan) string {
	if p.Mode == plans.DestroyMode {
		return "Destroy"
	}
	return "Apply"
}
