package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/cmd/sparkform/internal/jsonui"
	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/plans"
)

var (
	_ view          = (*jsonStreamView)(nil)
	_ operationView = (*jsonOperation)(nil)
	_ validateView  = (*jsonValidate)(nil)
	_ view          = (*jsonValidate)(nil)
	_ refreshView   = (*jsonView)(nil)
)

// jsonStreamView sends diagnostics and errors to the -json stream.
type jsonStreamView struct{ s *jsonView }

func (v *jsonStreamView) diagnostics(ds hcl.Diagnostics, files map[string]*hcl.File) {
	v.s.diagnostics(ds, files)
}

func (v *jsonStreamView) fail(err error) { v.s.errorDiag(err) }

func (v *jsonStreamView) warn(msg string) { v.s.Log("warn", "Warning: "+msg) }

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
	v.s.Emit("info", "refresh_summary", fmt.Sprintf("Refreshed with %d ReadResources %s, %d remote round trips",
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
	v.s.ChangeSummary(jsonOperationName(p), appliedMessage(p, 0, 0, 0), 0, 0, 0)
}

// applied ends the stream as Terraform's does: a change_summary and the
// outputs after a complete apply. A failed or interrupted one, whose
// diagnostics are above, ends with an error log line instead (Terraform
// sends no summary then): it says what finished.
func (v *jsonOperation) applied(p *plans.Plan, res *engine.ApplyResult, failed, interrupted bool) {
	a := res.Applied
	added := a[plans.Create] + a[plans.DeleteThenCreate] + a[plans.CreateThenDelete]
	if failed || interrupted {
		v.s.Log("error", fmt.Sprintf("%s failed. What finished is saved in state (%d added, %d changed, %d destroyed); run plan to see what is left.",
			applyWord(p), added, a[plans.Update], a[plans.Delete]))
		return
	}
	v.s.ChangeSummary(jsonOperationName(p), appliedMessage(p, added, a[plans.Update], a[plans.Delete]), added, a[plans.Update], a[plans.Delete])
	if p.Mode != plans.DestroyMode && len(res.Outputs) > 0 {
		v.s.outputs(res.Outputs, func(n string) bool { o := p.Outputs[n]; return o != nil && o.Sensitive })
	}
}

// appliedMessage is Terraform's change_summary message of an apply.
func appliedMessage(p *plans.Plan, add, change, destroy int) string {
	if p.Mode == plans.DestroyMode {
		return fmt.Sprintf("Destroy complete! Resources: %d destroyed.", destroy)
	}
	return fmt.Sprintf("Apply complete! Resources: %d added, %d changed, %d destroyed.", add, change, destroy)
}

var _ instanceRefreshView = (*jsonView)(nil)

// instanceRefreshStart and instanceRefreshDone are Terraform's
// refresh_start and refresh_complete of one instance of a batched read.
func (v *jsonView) instanceRefreshStart(addr string, prior cty.Value, sensitive []string) {
	k, id := jsonui.ObjectID(prior, sensitive)
	v.Emit("info", "refresh_start", jsonui.RefreshStartText(addr, k, id), map[string]any{"hook": jsonui.RefreshHook(addr, k, id)})
}

func (v *jsonView) instanceRefreshDone(addr string, obj cty.Value, sensitive []string) {
	k, id := jsonui.ObjectID(obj, sensitive)
	v.Emit("info", "refresh_complete", jsonui.RefreshCompleteText(addr, k, id), map[string]any{"hook": jsonui.RefreshHook(addr, k, id)})
}

// refreshStart and refreshDone send a batched read of the refresh (one
// ReadResources call of a provider on a node) under sparkform's own
// names: Terraform's refresh_start and refresh_complete are per instance.
func (v *jsonView) refreshStart(provider, node string, n int) {
	v.Emit("info", "provider_refresh_start", fmt.Sprintf("%s: Refreshing %d %s of provider %s...", orLocal(node), n, plural(n, "instance", "instances"), provider),
		map[string]any{"refresh": map[string]any{"provider": provider, "node": node, "instances": n}})
}

func (v *jsonView) refreshDone(provider, node string, n int, took time.Duration, roundTrips int, err error) {
	level, msg := "info", fmt.Sprintf("%s: Refresh complete after %s", orLocal(node), took.Round(time.Millisecond))
	if err != nil {
		level, msg = "error", fmt.Sprintf("%s: Refresh errored after %s", orLocal(node), took.Round(time.Millisecond))
	}
	v.Emit(level, "provider_refresh_complete", msg, map[string]any{"refresh": map[string]any{"provider": provider, "node": node,
		"instances": n, "remote_round_trips": roundTrips, "elapsed_seconds": took.Seconds()}})
}

// jsonValidate is validate -json: like Terraform's, one JSON document
// (not a stream) written at the end, with the verdict, the counts and
// every diagnostic.
type jsonValidate struct {
	w     io.Writer
	diags []jsonui.Diagnostic
}

func (v *jsonValidate) diagnostics(ds hcl.Diagnostics, files map[string]*hcl.File) {
	for _, d := range dedupe(ds) {
		v.diags = append(v.diags, jsonui.NewDiagnostic(d, files))
	}
}

func (v *jsonValidate) fail(err error) {
	summary, detail, _ := strings.Cut(err.Error(), "\n")
	v.diags = append(v.diags, jsonui.Diagnostic{Severity: "error", Summary: summary, Detail: strings.TrimSpace(detail)})
}

func (v *jsonValidate) warn(msg string) {
	v.diags = append(v.diags, jsonui.Diagnostic{Severity: "warning", Summary: msg})
}

func (v *jsonValidate) result(valid bool) {
	out := jsonui.ValidateOutput{FormatVersion: jsonui.ValidateFormatVersion, Diagnostics: v.diags}
	if out.Diagnostics == nil {
		out.Diagnostics = []jsonui.Diagnostic{}
	}
	for _, d := range v.diags {
		if d.Severity == "warning" {
			out.WarningCount++
		} else {
			out.ErrorCount++
		}
	}
	out.Valid = valid && out.ErrorCount == 0
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil { // only plain strings and numbers: cannot happen
		panic(err)
	}
	_, _ = v.w.Write(append(b, '\n'))
}

// errorDiag reports a plain error (no source range) as a diagnostic.
func (v *jsonView) errorDiag(err error) {
	summary, detail, _ := strings.Cut(err.Error(), "\n")
	v.Diagnostic(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: strings.TrimSpace(detail)}, nil)
}

// jsonOperationName is the change_summary operation of applying p.
func jsonOperationName(p *plans.Plan) string {
	if p.Mode == plans.DestroyMode {
		return "destroy"
	}
	return "apply"
}

var _ statusView = (*jsonStatus)(nil)

// jsonStatus is status -json: one document, the report's or, when status
// could not be read, one with status "error" and the first error.
type jsonStatus struct {
	w    io.Writer
	done bool // a document was written: one per run
}

func (v *jsonStatus) diagnostics(ds hcl.Diagnostics, files map[string]*hcl.File) {
	if errs := ds.Errs(); len(errs) > 0 {
		v.fail(errs[0])
	}
}

func (v *jsonStatus) fail(err error) {
	if !v.done {
		v.done = true
		statusJSONError(v.w, err)
	}
}

// warn is not in the document: status -json holds facts, not notes.
func (v *jsonStatus) warn(string) {}

func (v *jsonStatus) report(rep *engine.StatusReport, code int) {
	v.done = true
	b, _ := json.MarshalIndent(statusJSON(rep, code), "", "  ")
	fmt.Fprintln(v.w, string(b))
}
