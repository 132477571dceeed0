package main

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/plans"
)

// The views: what a command shows, one interface per command with an
// implementation for people (text on stdout and stderr) and one for the
// machine-readable -json stream (OpenTofu's internal/command/views is the
// model). A command picks its view once, from its parsed arguments (see
// arguments.go); nothing after that asks which kind it has.

// view is what every view does: the shared steps (loading the
// configuration, opening the state) report through it.
type view interface {
	// diagnostics reports ds; files are the sources, for snippets.
	diagnostics(ds hcl.Diagnostics, files map[string]*hcl.File)
	// fail reports an error that has no source range.
	fail(err error)
	// warn reports a warning that has no source range.
	warn(msg string)
}

// operationView is what plan, apply and destroy show.
type operationView interface {
	view
	// display is where apply progress goes (built once per command).
	display() opDisplay
	// refresh reports the batched reads of the refresh; escape says
	// whether addresses must be made safe for a terminal.
	refresh() refreshView
	escape() bool
	// planned shows the plan, after the refresh that fed it.
	planned(p *plans.Plan, cost refreshCost)
	// planSaved says where plan -out wrote the plan.
	planSaved(path string)
	// applying is called before the apply of p starts; saved says p was
	// read from a plan file and has not been shown.
	applying(p *plans.Plan, saved bool)
	// nothingToApply ends an apply that had nothing to do.
	nothingToApply(p *plans.Plan)
	// applied ends an apply: its counts and outputs, or that it failed.
	applied(p *plans.Plan, res *engine.ApplyResult, failed, interrupted bool)
}

// validateView is what validate shows.
type validateView interface {
	view
	// result ends validate with its verdict.
	result(valid bool)
}

// refreshView reports each batched read of the refresh.
type refreshView interface {
	refreshStart(provider, node string, n int)
	refreshDone(provider, node string, n int, took time.Duration, roundTrips int, err error)
}

// refreshCost is what the refresh took, for the plan's summary.
type refreshCost struct {
	calls, roundTrips int
	rpcs              map[string]map[string]int64
}

var (
	_ view          = (*humanView)(nil)
	_ operationView = (*humanOperation)(nil)
	_ validateView  = (*humanValidate)(nil)
	_ refreshView   = (*humanRefresh)(nil)
)

// humanView prints for people: diagnostics with their snippets, and
// errors, on stderr.
type humanView struct{ m *meta }

func (v *humanView) diagnostics(ds hcl.Diagnostics, files map[string]*hcl.File) {
	for _, d := range dedupe(ds) {
		writeDiagnostic(v.m.stderr, d, files, v.m.color())
	}
}

func (v *humanView) fail(err error) {
	fmt.Fprintln(v.m.stderr, "Error:", termSafeText(err.Error()))
}

func (v *humanView) warn(msg string) { fmt.Fprintln(v.m.stderr, "Warning: "+msg) }

// humanOperation shows plan, apply and destroy for people.
type humanOperation struct {
	humanView
	disp opDisplay
}

func (v *humanOperation) display() opDisplay {
	if v.disp == nil {
		m := v.m
		if m.stdoutIsTerminal() && !m.plainProgress() {
			f, _ := outputFile(m.stdout)
			v.disp = newBarDisplay(m.stdout, int(f.Fd()))
		} else {
			v.disp = newPlainDisplay(m.stdout)
		}
		m.onClose(v.disp.close)
	}
	return v.disp
}

func (v *humanOperation) refresh() refreshView {
	return &humanRefresh{d: v.display(), debug: debugLog()}
}

func (v *humanOperation) escape() bool { return true }

func (v *humanOperation) planned(p *plans.Plan, cost refreshCost) {
	if cost.calls > 0 {
		fmt.Fprintln(v.m.stdout)
	}
	v.m.renderPlan(p)
}

func (v *humanOperation) planSaved(path string) {
	fmt.Fprintf(v.m.stdout, "\nSaved the plan to: %s\n\nTo perform exactly these actions, run:\n  sparkform apply %q\n", path, path)
}

func (v *humanOperation) applying(*plans.Plan, bool) {}
func (v *humanOperation) nothingToApply(*plans.Plan) {}

func (v *humanOperation) applied(p *plans.Plan, res *engine.ApplyResult, failed, interrupted bool) {
	m := v.m
	a := res.Applied
	added := a[plans.Create] + a[plans.DeleteThenCreate] + a[plans.CreateThenDelete]
	if failed {
		if p.Mode == plans.DestroyMode {
			fmt.Fprintf(m.stderr, "\nDestroy failed. What finished is saved in state (%d destroyed); what is left stays in state with what it needs to be restored: fix the cause above, then run destroy again (plan -destroy shows what is left).\n",
				a[plans.Delete])
			return
		}
		fmt.Fprintf(m.stderr, "\nApply failed. What finished is saved in state (%d added, %d changed, %d destroyed); run plan to see what is left.\n",
			added, a[plans.Update], a[plans.Delete])
		return
	}
	if interrupted { // said when it happened, not complete
		return
	}
	fmt.Fprintf(m.stdout, "\n%s complete! Resources: %d added, %d changed, %d destroyed.\n", applyWord(p), added, a[plans.Update], a[plans.Delete])
	m.printOutputs(res, p)
}

// humanRefresh prints a line per batched read, and its cost with
// SPARKFORM_LOG=debug.
type humanRefresh struct {
	d     opDisplay
	debug bool
}

func (r *humanRefresh) refreshStart(provider, node string, n int) {
	r.d.line(fmt.Sprintf("%s: refreshing %d %s of provider %s...", termSafe(orLocal(node)), n, plural(n, "instance", "instances"), provider))
}

func (r *humanRefresh) refreshDone(provider, node string, n int, took time.Duration, roundTrips int, err error) {
	if r.debug {
		r.d.line(fmt.Sprintf("[DEBUG] refresh %s on %s: %d instances, 1 ReadResources call, %d remote round trips, %s",
			provider, termSafe(orLocal(node)), n, roundTrips, took.Round(time.Millisecond)))
	}
}

// humanValidate shows validate's verdict for people.
type humanValidate struct{ humanView }

func (v *humanValidate) result(valid bool) {
	if valid {
		fmt.Fprintln(v.m.stdout, "Success! The configuration is valid.")
	}
}

// statusView is what status shows.
type statusView interface {
	view
	// report shows what status found, with its exit status.
	report(rep *engine.StatusReport, code int)
}

var _ statusView = (*humanStatus)(nil)

// humanStatus prints status's table per node.
type humanStatus struct{ humanView }

func (v *humanStatus) report(rep *engine.StatusReport, code int) { renderStatus(v.m, rep) }
