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

	"github.com/sparkform/sparkform/engine"
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

// jsonDiagnostic is Terraform's diagnostic object (machine-readable UI
// and validate -json alike), field for field.
type jsonDiagnostic struct {
	Severity string           `json:"severity"`
	Summary  string           `json:"summary"`
	Detail   string           `json:"detail"`
	Address  string           `json:"address,omitempty"`
	Range    *jsonDiagRange   `json:"range,omitempty"`
	Snippet  *jsonDiagSnippet `json:"snippet,omitempty"`
}

type jsonDiagPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

type jsonDiagRange struct {
	Filename string      `json:"filename"`
	Start    jsonDiagPos `json:"start"`
	End      jsonDiagPos `json:"end"`
}

// jsonDiagSnippet is the source around a diagnostic: code is whole
// lines from start_line, the highlight byte offsets into code, values
// the expression's inputs that were known when it failed.
type jsonDiagSnippet struct {
	Context              *string         `json:"context"`
	Code                 string          `json:"code"`
	StartLine            int             `json:"start_line"`
	HighlightStartOffset int             `json:"highlight_start_offset"`
	HighlightEndOffset   int             `json:"highlight_end_offset"`
	Values               []jsonExprValue `json:"values"`
}

type jsonExprValue struct {
	Traversal string `json:"traversal"`
	Statement string `json:"statement"`
}

// newJSONDiagnostic is d as Terraform writes it, with its range and the
// source snippet when files hold its file.
func newJSONDiagnostic(d *hcl.Diagnostic, files map[string]*hcl.File) jsonDiagnostic {
	jd := jsonDiagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail, Address: engine.DiagnosticAddress(d)}
	if d.Severity == hcl.DiagWarning {
		jd.Severity = "warning"
	}
	if s := d.Subject; s != nil {
		jd.Range = jsonRange(s)
		if f := files[s.Filename]; f != nil {
			jd.Snippet = jsonSnippet(f, d)
		}
	}
	return jd
}

// diagnostic writes d with its range and the source snippet, as
// Terraform's diagnostic message does.
func (v *jsonView) diagnostic(d *hcl.Diagnostic, files map[string]*hcl.File) {
	jd := newJSONDiagnostic(d, files)
	level, prefix := "error", "Error: "
	if jd.Severity == "warning" {
		level, prefix = "warn", "Warning: "
	}
	v.emit(level, "diagnostic", prefix+d.Summary, map[string]any{"diagnostic": jd})
}

func (v *jsonView) diagnostics(ds hcl.Diagnostics, files map[string]*hcl.File) {
	for _, d := range dedupe(ds) {
		v.diagnostic(d, files)
	}
}

func jsonRange(r *hcl.Range) *jsonDiagRange {
	pos := func(p hcl.Pos) jsonDiagPos { return jsonDiagPos{Line: p.Line, Column: p.Column, Byte: p.Byte} }
	return &jsonDiagRange{Filename: r.Filename, Start: pos(r.Start), End: pos(r.End)}
}

// jsonSnippet is the source line(s) of d's context (its subject when it
// has none), with the subject highlighted as byte offsets into code.
func jsonSnippet(f *hcl.File, d *hcl.Diagnostic) *jsonDiagSnippet {
	src, r := f.Bytes, d.Subject
	ctxRange := r
	if d.Context != nil && d.Context.Filename == r.Filename && d.Context.Start.Byte <= r.Start.Byte && d.Context.End.Byte >= r.End.Byte {
		ctxRange = d.Context
	}
	if ctxRange.Start.Byte > len(src) || ctxRange.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
		return nil
	}
	start := ctxRange.Start.Byte
	for start > 0 && src[start-1] != '\n' {
		start--
	}
	end := ctxRange.End.Byte
	for end < len(src) && src[end] != '\n' {
		end++
	}
	sn := &jsonDiagSnippet{
		Code: string(src[start:end]), StartLine: ctxRange.Start.Line,
		HighlightStartOffset: r.Start.Byte - start, HighlightEndOffset: r.End.Byte - start,
		Values: jsonExprValues(d),
	}
	if c := contextString(f, r); c != "" {
		sn.Context = &c
	}
	return sn
}

// jsonExprValues are the values of the variables d's expression read, as
// Terraform lists them: one statement each, sorted by traversal, none
// that is sensitive (marked) or that the evaluation did not have.
func jsonExprValues(d *hcl.Diagnostic) []jsonExprValue {
	out := []jsonExprValue{}
	if d.Expression == nil || d.EvalContext == nil {
		return out
	}
	seen := map[string]bool{}
	for _, t := range d.Expression.Variables() {
		name := traversalString(t)
		if name == "" || seen[name] {
			continue
		}
		val, diags := t.TraverseAbs(d.EvalContext)
		if diags.HasErrors() || val.ContainsMarked() {
			continue
		}
		seen[name] = true
		out = append(out, jsonExprValue{Traversal: name, Statement: valueStatement(val)})
	}
	slices.SortFunc(out, func(a, b jsonExprValue) int { return strings.Compare(a.Traversal, b.Traversal) })
	return out
}

// traversalString is t as written (var.x, each.value.host, a["k"]).
func traversalString(t hcl.Traversal) string {
	var b strings.Builder
	for _, step := range t {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			k := s.Key
			switch {
			case !k.IsKnown() || k.IsNull():
				return ""
			case k.Type() == cty.String:
				fmt.Fprintf(&b, "[%q]", k.AsString())
			case k.Type() == cty.Number:
				fmt.Fprintf(&b, "[%s]", k.AsBigFloat().Text('f', -1))
			default:
				return ""
			}
		default:
			return ""
		}
	}
	return b.String()
}

// valueStatement describes v as Terraform's diagnostic values do: "is
// \"x\"", "is 3", "is null", "is a string, known only after apply", "is
// list of string with 2 elements", "is object with 3 attributes".
func valueStatement(v cty.Value) string {
	ty := v.Type()
	switch {
	case !v.IsKnown():
		return fmt.Sprintf("is a %s, known only after apply", ty.FriendlyName())
	case v.IsNull():
		return "is null"
	case ty == cty.String:
		return fmt.Sprintf("is %q", v.AsString())
	case ty == cty.Number:
		return "is " + v.AsBigFloat().Text('f', -1)
	case ty == cty.Bool:
		return fmt.Sprintf("is %t", v.True())
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType():
		n := v.LengthInt()
		what := "elements"
		if n == 1 {
			what = "element"
		}
		switch {
		case ty.IsMapType():
			return fmt.Sprintf("is map of %s with %d %s", ty.ElementType().FriendlyName(), n, what)
		case ty.IsTupleType():
			return fmt.Sprintf("is tuple with %d %s", n, what)
		}
		return fmt.Sprintf("is %s with %d %s", ty.FriendlyName(), n, what)
	case ty.IsObjectType():
		n := len(ty.AttributeTypes())
		return fmt.Sprintf("is object with %d %s", n, plural(n, "attribute", "attributes"))
	}
	return "is a " + ty.FriendlyName()
}

// jsonResource describes an instance address as Terraform's "resource"
// object does (implied_provider: the provider, or as Terraform implies
// it, the type's name up to its first "_"), plus the node it lives on
// ("node", sparkform's).
func jsonResource(addr, provider, node string) map[string]any {
	out := map[string]any{"addr": addr, "module": "", "resource": addr, "resource_key": nil,
		"resource_type": "", "resource_name": "", "implied_provider": provider}
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
		if provider == "" {
			out["implied_provider"], _, _ = strings.Cut(ri.Resource.Type, "_")
		}
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

// uiReason is Terraform's "reason" for c, where one of Terraform's
// reasons says it ("" where none does: c.Reason, sparkform's own words,
// is in "reason_detail" either way).
func uiReason(c *plans.ResourceChange) string {
	r := c.Reason
	switch {
	case strings.HasPrefix(r, "tainted"):
		return "tainted"
	case strings.HasPrefix(r, "replacement requested"):
		return "requested"
	case r == "no longer in the configuration":
		return "delete_because_no_resource_config"
	case strings.HasPrefix(r, "its key is no longer produced"):
		ri, ds := addrs.ParseResourceInstance(c.Addr)
		if ds.HasErrors() {
			return ""
		}
		switch ri.Key.(type) {
		case addrs.StringKey:
			return "delete_because_each_key"
		case addrs.IntKey:
			return "delete_because_count_index"
		}
		return "delete_because_wrong_repetition"
	case r == "" && (c.Action == plans.DeleteThenCreate || c.Action == plans.CreateThenDelete) && len(c.RequiresReplace) > 0:
		return "cannot_update"
	}
	return ""
}

// plan writes what a plan found and means to do: drift, every planned
// change, the summary and the output changes, in Terraform's order.
func (v *jsonView) plan(p *plans.Plan) {
	for _, n := range p.Notes {
		v.log("warn", n)
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
		if r := uiReason(c); r != "" {
			ch["reason"] = r
		}
		if c.Reason != "" {
			ch["reason_detail"] = c.Reason
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
	v.changeSummary("plan", fmt.Sprintf("Plan: %d to add, %d to change, %d to destroy.", add, change, destroy), add, change, destroy)
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
