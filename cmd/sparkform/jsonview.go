package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/plans"
)

// jsonUIVersion is the version of the machine-readable stream; it follows
// Terraform's "ui" versioning: a new minor adds fields or message types.
const jsonUIVersion = "1.0"

// jsonView writes the machine-readable UI of -json runs: one JSON object
// per line, in the shape of Terraform's (@level, @message, @module,
// @timestamp, type, and one payload field per type). Nothing else goes to
// stdout while it is in use; see docs/cli.md for the message types.
type jsonView struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time

	errors, warnings int // diagnostics sent, for validate's result
}

func newJSONView(w io.Writer) *jsonView { return &jsonView{w: w, now: time.Now} }

// emit writes one line. fields carry the payload (e.g. "hook": {...}).
func (v *jsonView) emit(level, typ, msg string, fields map[string]any) {
	line := map[string]any{
		"@level": level, "@message": msg, "@module": "sparkform.ui", "type": typ,
	}
	for k, f := range fields {
		line[k] = f
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	line["@timestamp"] = v.now().Format("2006-01-02T15:04:05.000000Z07:00")
	b, err := json.Marshal(line)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"@level": "error", "@message": "cannot encode a UI message: " + err.Error(),
			"@module": "sparkform.ui", "@timestamp": line["@timestamp"], "type": "log"})
	}
	b = append(b, '\n')
	_, _ = v.w.Write(b)
}

func (v *jsonView) version() {
	v.emit("info", "version", "sparkform "+version, map[string]any{"sparkform": version, "ui": jsonUIVersion})
}

func (v *jsonView) log(level, msg string) { v.emit(level, "log", msg, nil) }

// diagnostic writes d with its range and the source snippet, as
// Terraform's diagnostic message does.
func (v *jsonView) diagnostic(d *hcl.Diagnostic, files map[string]*hcl.File) {
	sev, level := "error", "error"
	if d.Severity == hcl.DiagWarning {
		sev, level = "warning", "warn"
	}
	jd := map[string]any{"severity": sev, "summary": d.Summary, "detail": d.Detail}
	if s := d.Subject; s != nil {
		jd["range"] = jsonRange(s)
		if f := files[s.Filename]; f != nil {
			if sn := jsonSnippet(f, s); sn != nil {
				jd["snippet"] = sn
			}
		}
	}
	prefix := "Error: "
	v.mu.Lock()
	if sev == "warning" {
		prefix = "Warning: "
		v.warnings++
	} else {
		v.errors++
	}
	v.mu.Unlock()
	v.emit(level, "diagnostic", prefix+d.Summary, map[string]any{"diagnostic": jd})
}

func (v *jsonView) diagnostics(ds hcl.Diagnostics, files map[string]*hcl.File) {
	for _, d := range dedupe(ds) {
		v.diagnostic(d, files)
	}
}

// errorDiag reports a plain error (no source range) as a diagnostic.
func (v *jsonView) errorDiag(err error) {
	summary, detail, _ := strings.Cut(err.Error(), "\n")
	v.diagnostic(&hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: strings.TrimSpace(detail)}, nil)
}

func jsonRange(r *hcl.Range) map[string]any {
	pos := func(p hcl.Pos) map[string]any {
		return map[string]any{"line": p.Line, "column": p.Column, "byte": p.Byte}
	}
	return map[string]any{"filename": r.Filename, "start": pos(r.Start), "end": pos(r.End)}
}

// jsonSnippet is the source line(s) of r with the highlighted span, as
// byte offsets into code.
func jsonSnippet(f *hcl.File, r *hcl.Range) map[string]any {
	src := f.Bytes
	if r.Start.Byte > len(src) || r.End.Byte > len(src) {
		return nil
	}
	start := r.Start.Byte
	for start > 0 && src[start-1] != '\n' {
		start--
	}
	end := r.End.Byte
	for end < len(src) && src[end] != '\n' {
		end++
	}
	var ctx any
	if c := contextString(f, r); c != "" {
		ctx = c
	}
	return map[string]any{
		"context": ctx, "code": string(src[start:end]), "start_line": r.Start.Line,
		"highlight_start_offset": r.Start.Byte - start, "highlight_end_offset": r.End.Byte - start,
	}
}

// jsonResource describes an instance address as Terraform's "resource"
// object does, plus the node it lives on.
func jsonResource(addr, provider, node string) map[string]any {
	out := map[string]any{"addr": addr, "module": "", "resource": addr, "resource_key": nil}
	if ri, ds := addrs.ParseResourceInstance(addr); !ds.HasErrors() {
		out["resource_type"], out["resource_name"] = ri.Resource.Type, ri.Resource.Name
		if mod := ri.Resource.Module; mod != "" {
			out["module"], out["resource"] = mod, strings.TrimPrefix(addr, mod+".")
		}
		switch k := ri.Key.(type) {
		case addrs.StringKey:
			out["resource_key"] = string(k)
		case addrs.IntKey:
			out["resource_key"] = int(k)
		}
	}
	if provider != "" {
		out["implied_provider"] = provider
	}
	if node != "" {
		out["node"] = node
	}
	return out
}

// uiAction is Terraform's name for a planned action.
func uiAction(a plans.Action) string {
	switch a {
	case plans.DeleteThenCreate, plans.CreateThenDelete:
		return "replace"
	case plans.NoOp:
		return "noop"
	}
	return string(a)
}

var planVerb = map[plans.Action]string{
	plans.Create: "Plan to create", plans.Update: "Plan to update", plans.Delete: "Plan to delete",
	plans.DeleteThenCreate: "Plan to replace", plans.CreateThenDelete: "Plan to replace",
}

// plan writes what a plan found and means to do: drift, every planned
// change, output changes and the summary.
func (v *jsonView) plan(p *plans.Plan) {
	for _, n := range p.Notes {
		v.log("warn", n)
	}
	for _, x := range jsonExcludedNodes(p) {
		v.emit("warn", "node_excluded", fmt.Sprintf("%s: left out (-exclude-unreachable): %s", x.Node, x.Reason),
			map[string]any{"excluded": x})
	}
	for _, d := range p.Drift {
		a := "update"
		if d.After.IsNull() {
			a = "delete"
		}
		v.emit("info", "resource_drift", fmt.Sprintf("%s: Drift detected (%s)", d.Addr, a),
			map[string]any{"change": map[string]any{"resource": jsonResource(d.Addr, "", ""), "action": a}})
	}
	for _, c := range p.Changes {
		if c.Action == plans.NoOp {
			continue
		}
		ch := map[string]any{"resource": jsonResource(c.Addr, c.Provider, c.NodeName()), "action": uiAction(c.Action)}
		if c.Reason != "" {
			ch["reason"] = c.Reason
		}
		if c.Action == plans.DeleteThenCreate || c.Action == plans.CreateThenDelete {
			var paths []string
			for _, rp := range c.RequiresReplace {
				paths = append(paths, pathString(rp))
			}
			if paths != nil {
				ch["replace_paths"] = paths
			}
		}
		v.emit("info", "planned_change", c.Addr+": "+planVerb[c.Action], map[string]any{"change": ch})
	}
	add, change, destroy := p.Counts()
	msg := fmt.Sprintf("Plan: %d to add, %d to change, %d to destroy.", add, change, destroy)
	if !p.HasChanges() {
		msg = "No changes."
	}
	v.changeSummary("plan", msg, add, change, destroy)
	if len(p.Outputs) > 0 {
		outs := map[string]any{}
		for _, n := range slices.Sorted(maps.Keys(p.Outputs)) {
			o := p.Outputs[n]
			a := "update"
			switch {
			case o.Before == cty.NilVal || o.Before.IsNull():
				a = "create"
			case o.After == cty.NilVal || o.After.IsNull():
				a = "delete"
			case o.After.IsWhollyKnown() && o.Before.RawEquals(o.After):
				a = "noop"
			}
			outs[n] = map[string]any{"sensitive": o.Sensitive, "action": a}
		}
		v.emit("info", "outputs", fmt.Sprintf("Outputs: %d", len(outs)), map[string]any{"outputs": outs})
	}
}

func (v *jsonView) changeSummary(op, msg string, add, change, destroy int) {
	v.emit("info", "change_summary", msg, map[string]any{"changes": map[string]any{
		"add": add, "change": change, "remove": destroy, "import": 0, "operation": op}})
}

// outputs writes output values after an apply.
func (v *jsonView) outputs(vals map[string]cty.Value, sensitive func(string) bool) {
	outs := map[string]any{}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		val := vals[n]
		o := map[string]any{"sensitive": sensitive(n)}
		if ty, err := ctyjson.MarshalType(val.Type()); err == nil {
			o["type"] = json.RawMessage(ty)
		}
		if !sensitive(n) {
			o["value"], _ = jsonValue(val)
		}
		outs[n] = o
	}
	v.emit("info", "outputs", fmt.Sprintf("Outputs: %d", len(outs)), map[string]any{"outputs": outs})
}
