package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/plans"
)

var (
	_ view          = (*jsonStreamView)(nil)
	_ operationView = (*jsonOperation)(nil)
	_ validateView  = (*jsonValidate)(nil)
	_ refreshView   = (*jsonView)(nil)
)

// jsonStreamView sends diagnostics and errors to the -json stream.
type jsonStreamView struct{ s *jsonView }

func (v *jsonStreamView) diagnostics(ds hcl.Diagnostics, files map[string]*hcl.File) {
	v.s.diagnostics(ds, files)
}

func (v *jsonStreamView) fail(err error) { v.s.errorDiag(err) }

func (v *jsonStreamView) warn(msg string) { v.s.log("warn", "Warning: "+msg) }

// jsonOperation is the -json stream of plan, apply and destroy.
type jsonOperation struct {
	jsonStreamView
	m    *meta
	disp *jsonDisplay
}

func (v *jsonOperation) display() opDisplay {
	if v.disp == nil {
		v.disp = newJSONDisplay(v.s)
		v.m.onClose(v.disp.close)
	}
	return v.disp
}

func (v *jsonOperation) refresh() refreshView { return v.s }

// escape is false: encoding/json escapes what it writes.
func (v *jsonOperation) escape() bool { return false }

func (v *jsonOperation) planned(p *plans.Plan, cost refreshCost) {
	v.s.emit("info", "refresh_summary", fmt.Sprintf("Refreshed with %d ReadResources %s, %d remote round trips",
		cost.calls, plural(cost.calls, "call", "calls"), cost.roundTrips),
		map[string]any{"refresh": jsonRefresh{ReadResourcesCalls: cost.calls, RemoteRoundTrips: cost.roundTrips, RPCs: cost.rpcs}})
	v.s.plan(p)
}

func (v *jsonOperation) planSaved(string) {}

func (v *jsonOperation) applying(p *plans.Plan, saved bool) {
	if saved {
		v.s.plan(p)
	}
	v.display().(*jsonDisplay).describe(p)
}

func (v *jsonOperation) nothingToApply(p *plans.Plan) {
	v.s.changeSummary(jsonOperationName(p), fmt.Sprintf("%s complete! Resources: 0 added, 0 changed, 0 destroyed.", applyWord(p)), 0, 0, 0)
}

func (v *jsonOperation) applied(p *plans.Plan, res *engine.ApplyResult, failed, interrupted bool) {
	a := res.Applied
	added := a[plans.Create] + a[plans.DeleteThenCreate] + a[plans.CreateThenDelete]
	op, word := jsonOperationName(p), applyWord(p)
	msg := fmt.Sprintf("%s complete! Resources: %d added, %d changed, %d destroyed.", word, added, a[plans.Update], a[plans.Delete])
	if failed || interrupted {
		msg = fmt.Sprintf("%s failed. What finished is saved in state (%d added, %d changed, %d destroyed); run plan to see what is left.",
			word, added, a[plans.Update], a[plans.Delete])
	}
	v.s.changeSummary(op, msg, added, a[plans.Update], a[plans.Delete])
	if !failed && p.Mode != plans.DestroyMode && len(res.Outputs) > 0 {
		v.s.outputs(res.Outputs, func(n string) bool { o := p.Outputs[n]; return o != nil && o.Sensitive })
	}
}

// refreshStart and refreshDone send a batched read of the refresh.
func (v *jsonView) refreshStart(provider, node string, n int) {
	v.emit("info", "refresh_start", fmt.Sprintf("%s: Refreshing %d %s of provider %s...", orLocal(node), n, plural(n, "instance", "instances"), provider),
		map[string]any{"refresh": map[string]any{"provider": provider, "node": node, "instances": n}})
}

func (v *jsonView) refreshDone(provider, node string, n int, took time.Duration, roundTrips int, err error) {
	level, msg := "info", fmt.Sprintf("%s: Refresh complete after %s", orLocal(node), took.Round(time.Millisecond))
	if err != nil {
		level, msg = "error", fmt.Sprintf("%s: Refresh errored after %s", orLocal(node), took.Round(time.Millisecond))
	}
	v.emit(level, "refresh_complete", msg, map[string]any{"refresh": map[string]any{"provider": provider, "node": node,
		"instances": n, "remote_round_trips": roundTrips, "elapsed_seconds": took.Seconds()}})
}

// jsonValidate is validate in the -json stream: its diagnostics, then a
// "validate" message with the verdict and their counts.
type jsonValidate struct{ jsonStreamView }

func (v *jsonValidate) result(valid bool) {
	s := v.s
	s.mu.Lock()
	errs, warns := s.errors, s.warnings
	s.mu.Unlock()
	msg := "Success! The configuration is valid."
	if !valid {
		msg = fmt.Sprintf("The configuration is invalid: %d %s, %d %s.", errs, plural(errs, "error", "errors"), warns, plural(warns, "warning", "warnings"))
	}
	s.emit(map[bool]string{true: "info", false: "error"}[valid], "validate", msg,
		map[string]any{"valid": valid, "error_count": errs, "warning_count": warns})
}

// errorDiag reports a plain error (no source range) as a diagnostic.
func (v *jsonView) errorDiag(err error) {
	summary, detail, _ := strings.Cut(err.Error(), "\n")
	v.diagnostic(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: strings.TrimSpace(detail)}, nil)
}

// jsonOperationName is the change_summary operation of applying p.
func jsonOperationName(p *plans.Plan) string {
	if p.Mode == plans.DestroyMode {
		return "destroy"
	}
	return "apply"
}
