package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdJSONStream is `jsonstream FILE REGEXP`: every line of FILE (a saved
// stdout) must be one message of Terraform's machine-readable UI, read as
// a client reads it: terraform-json's UnmarshalLogMessage decodes it (the
// version and diagnostic messages into its own types), and the rest is
// decoded into structs shaped as Terraform's documentation says and
// checked field by field (checkUIMessage). The sequence of types, joined
// by spaces, must match REGEXP (anchored). Every apply_start must be
// followed by exactly one apply_complete or apply_errored of the same
// address, with any apply_progress of it in between.
func cmdJSONStream(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: jsonstream FILE REGEXP")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	types, err := checkUIStream(data)
	if err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	seq := strings.Join(types, " ")
	re, err := regexp.Compile("^(?:" + args[1] + ")$")
	ts.Check(err)
	if re.MatchString(seq) == neg {
		ts.Fatalf("%s: message types %q; want a match of %q", args[0], seq, args[1])
	}
}

// cmdValidateJSON is `validatejson FILE`: FILE (a saved stdout of validate
// -json) must be one JSON document that terraform-json decodes as a
// ValidateOutput and validates (format_version), with counts that match
// its diagnostics and valid exactly when there is no error.
func cmdValidateJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: validatejson FILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	if err := checkValidateJSON(data); err != nil {
		ts.Fatalf("%s: %v\n%s", args[0], err, data)
	}
}

func checkValidateJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out tfjson.ValidateOutput
	if err := dec.Decode(&out); err != nil { // UnmarshalJSON runs Validate
		return fmt.Errorf("terraform-json: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON document")
	}
	if out.FormatVersion != "1.0" {
		return fmt.Errorf("format_version %q, want 1.0", out.FormatVersion)
	}
	errs, warns := 0, 0
	for i, d := range out.Diagnostics {
		if err := checkDiagnostic(d); err != nil {
			return fmt.Errorf("diagnostics[%d]: %w", i, err)
		}
		if d.Severity == tfjson.DiagnosticSeverityError {
			errs++
		} else {
			warns++
		}
	}
	if out.ErrorCount != errs || out.WarningCount != warns || out.Valid != (errs == 0) {
		return fmt.Errorf("valid %t, error_count %d, warning_count %d; the diagnostics hold %d errors, %d warnings",
			out.Valid, out.ErrorCount, out.WarningCount, errs, warns)
	}
	var raw struct{ Diagnostics []json.RawMessage }
	_ = json.Unmarshal(data, &raw)
	if raw.Diagnostics == nil {
		return fmt.Errorf("diagnostics is not a list")
	}
	return nil
}

// checkDiagnostic checks a diagnostic as Terraform writes it.
func checkDiagnostic(d tfjson.Diagnostic) error {
	if d.Severity != tfjson.DiagnosticSeverityError && d.Severity != tfjson.DiagnosticSeverityWarning {
		return fmt.Errorf("severity %q", d.Severity)
	}
	if d.Summary == "" {
		return fmt.Errorf("no summary")
	}
	if d.Snippet != nil {
		if d.Range == nil {
			return fmt.Errorf("a snippet without a range")
		}
		sn := d.Snippet
		if sn.Values == nil {
			return fmt.Errorf("snippet.values is not a list")
		}
		if sn.StartLine < 1 || sn.StartLine > d.Range.Start.Line || sn.HighlightStartOffset < 0 ||
			sn.HighlightEndOffset < sn.HighlightStartOffset || sn.HighlightEndOffset > len(sn.Code) {
			return fmt.Errorf("snippet start_line %d, highlight %d..%d of %d bytes of code, range from line %d",
				sn.StartLine, sn.HighlightStartOffset, sn.HighlightEndOffset, len(sn.Code), d.Range.Start.Line)
		}
	}
	return nil
}

// The messages of the machine-readable UI, shaped as Terraform's
// documentation describes them (internals/machine-readable-ui).
type (
	uiLine struct {
		Level     string              `json:"@level"`
		Message   string              `json:"@message"`
		Module    string              `json:"@module"`
		Timestamp string              `json:"@timestamp"`
		Type      string              `json:"type"`
		Change    *uiChange           `json:"change"`
		Hook      *uiHook             `json:"hook"`
		Changes   *uiChangeSummary    `json:"changes"`
		Outputs   map[string]uiOutput `json:"outputs"`
	}
	uiResource struct {
		Addr            string `json:"addr"`
		Module          *string
		Resource        string `json:"resource"`
		ImpliedProvider string `json:"implied_provider"`
		ResourceType    string `json:"resource_type"`
		ResourceName    string `json:"resource_name"`
		ResourceKey     any    `json:"resource_key"`
	}
	uiChange struct {
		Resource *uiResource `json:"resource"`
		Action   string      `json:"action"`
		Reason   string      `json:"reason"`
	}
	uiHook struct {
		Resource       *uiResource `json:"resource"`
		Action         string      `json:"action"`
		IDKey          string      `json:"id_key"`
		IDValue        string      `json:"id_value"`
		ElapsedSeconds *float64    `json:"elapsed_seconds"`
	}
	uiChangeSummary struct {
		Add, Change, Import, Remove *int
		Operation                   string
	}
	uiOutput struct {
		Sensitive *bool           `json:"sensitive"`
		Type      json.RawMessage `json:"type"`
		Value     json.RawMessage `json:"value"`
		Action    string          `json:"action"`
	}
)

// Terraform's values of the fields the checks know.
var (
	uiActions = map[string]bool{"noop": true, "create": true, "read": true, "update": true, "replace": true, "delete": true,
		"move": true, "import": true, "forget": true}
	uiReasons = map[string]bool{"tainted": true, "requested": true, "cannot_update": true, "delete_because_no_resource_config": true,
		"delete_because_wrong_repetition": true, "delete_because_count_index": true, "delete_because_each_key": true,
		"delete_because_no_module": true, "delete_because_no_move_target": true, "read_because_config_unknown": true,
		"read_because_dependency_pending": true, "read_because_check_nested": true, "replace_by_triggers": true,
		"replace_by_request": true}
	// uiTypes are Terraform's message types and sparkform's own (which
	// Terraform does not use).
	uiTypes = map[string]bool{"version": true, "log": true, "diagnostic": true, "resource_drift": true, "planned_change": true,
		"change_summary": true, "outputs": true, "apply_start": true, "apply_progress": true, "apply_complete": true,
		"apply_errored": true, "refresh_start": true, "refresh_complete": true,
		"refresh_summary": true, "provider_refresh_start": true, "provider_refresh_complete": true}
	uiSummaryText = map[string]*regexp.Regexp{
		"plan":    regexp.MustCompile(`^Plan: (\d+) to add, (\d+) to change, (\d+) to destroy\.$`),
		"apply":   regexp.MustCompile(`^Apply complete! Resources: (\d+) added, (\d+) changed, (\d+) destroyed\.$`),
		"destroy": regexp.MustCompile(`^Destroy complete! Resources: (\d+) destroyed\.$`),
	}
)

// checkUIStream checks every line of a -json stream and returns the
// sequence of message types.
func checkUIStream(data []byte) ([]string, error) {
	var types []string
	open := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		var m uiLine
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&m); err != nil || dec.More() {
			return nil, fmt.Errorf("line %d is not one JSON object (%v): %q", n, err, line)
		}
		if err := checkUIMessage(line, &m, n == 1); err != nil {
			return nil, fmt.Errorf("line %d: %w: %s", n, err, line)
		}
		types = append(types, m.Type)
		if m.Hook == nil || !strings.HasPrefix(m.Type, "apply_") {
			continue
		}
		addr := m.Hook.Resource.Addr
		switch m.Type {
		case "apply_start":
			if open[addr] {
				return nil, fmt.Errorf("line %d: second apply_start of %s", n, addr)
			}
			open[addr] = true
		case "apply_progress":
			if !open[addr] {
				return nil, fmt.Errorf("line %d: apply_progress of %s outside its start and end", n, addr)
			}
		default:
			if !open[addr] {
				return nil, fmt.Errorf("line %d: %s of %s without apply_start", n, m.Type, addr)
			}
			delete(open, addr)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(open) > 0 {
		return nil, fmt.Errorf("operations started and never ended: %v", open)
	}
	return types, nil
}

// checkUIMessage checks one message against Terraform's documentation;
// line is its text, m its decoding; first says it is the stream's first.
func checkUIMessage(line []byte, m *uiLine, first bool) error {
	msg, err := tfjson.UnmarshalLogMessage(line)
	if err != nil {
		return fmt.Errorf("terraform-json: %w", err)
	}
	if m.Level == "" || m.Message == "" || m.Module == "" || m.Type == "" {
		return fmt.Errorf("no @level, @message, @module or type")
	}
	if _, err := time.Parse(time.RFC3339Nano, m.Timestamp); err != nil || msg.Timestamp().IsZero() {
		return fmt.Errorf("@timestamp: %v", err)
	}
	if !uiTypes[m.Type] {
		return fmt.Errorf("type %q is neither Terraform's nor sparkform's", m.Type)
	}
	if first != (m.Type == "version") {
		return fmt.Errorf("the version message must come first, and only first")
	}
	switch m.Type {
	case "version":
		v, ok := msg.(tfjson.VersionLogMessage)
		if !ok || v.UI == nil || v.UI.Segments()[0] != 1 {
			return fmt.Errorf("terraform-json reads no ui version 1.x: %#v", msg)
		}
	case "diagnostic":
		d, ok := msg.(tfjson.DiagnosticLogMessage)
		if !ok {
			return fmt.Errorf("terraform-json reads %T", msg)
		}
		if err := checkDiagnostic(d.Diagnostic); err != nil {
			return err
		}
		want := map[tfjson.DiagnosticSeverity]string{tfjson.DiagnosticSeverityError: "error", tfjson.DiagnosticSeverityWarning: "warn"}[d.Severity]
		if m.Level != want || !strings.HasSuffix(m.Message, d.Summary) {
			return fmt.Errorf("a %s diagnostic at @level %s, @message %q", d.Severity, m.Level, m.Message)
		}
	case "planned_change", "resource_drift":
		if m.Change == nil || !uiActions[m.Change.Action] || (m.Change.Reason != "" && !uiReasons[m.Change.Reason]) {
			return fmt.Errorf("change: %+v", m.Change)
		}
		if err := checkUIResource(m.Change.Resource); err != nil {
			return err
		}
	case "apply_start", "apply_progress", "apply_complete", "apply_errored", "refresh_start", "refresh_complete":
		h := m.Hook
		if h == nil {
			return fmt.Errorf("no hook")
		}
		if err := checkUIResource(h.Resource); err != nil {
			return err
		}
		if (h.IDKey == "") != (h.IDValue == "") {
			return fmt.Errorf("id_key %q, id_value %q", h.IDKey, h.IDValue)
		}
		if m.Level != "info" {
			return fmt.Errorf("a hook at @level %s: Terraform sends every hook at info", m.Level)
		}
		if strings.HasPrefix(m.Type, "apply_") && !uiActions[h.Action] {
			return fmt.Errorf("hook action %q", h.Action)
		}
		timed := m.Type == "apply_progress" || m.Type == "apply_complete" || m.Type == "apply_errored"
		if timed != (h.ElapsedSeconds != nil) {
			return fmt.Errorf("elapsed_seconds %v", h.ElapsedSeconds)
		}
		suffix := ""
		if h.IDKey != "" {
			suffix = fmt.Sprintf(" [%s=%s]", h.IDKey, h.IDValue)
		}
		var want string
		switch m.Type {
		case "apply_start":
			want = `^` + regexp.QuoteMeta(h.Resource.Addr) + `: (Creating|Modifying|Destroying|Replacing)\.\.\.` + regexp.QuoteMeta(suffix) + `$`
		case "apply_progress":
			want = `^` + regexp.QuoteMeta(h.Resource.Addr) + `: Still (creating|modifying|destroying|replacing)\.\.\. \[[0-9hms]+ elapsed\]$`
		case "apply_complete":
			want = `^` + regexp.QuoteMeta(h.Resource.Addr) + `: (Creation|Modifications|Destruction|Replacement) complete after [0-9hms]+` + regexp.QuoteMeta(suffix) + `$`
		case "apply_errored":
			want = `^` + regexp.QuoteMeta(h.Resource.Addr) + `: (Creation|Modifications|Destruction|Replacement) errored after [0-9hms]+$`
		}
		if want != "" && !regexp.MustCompile(want).MatchString(m.Message) {
			return fmt.Errorf("@message %q, want a match of %s", m.Message, want)
		}
	case "change_summary":
		c := m.Changes
		if c == nil || c.Add == nil || c.Change == nil || c.Import == nil || c.Remove == nil {
			return fmt.Errorf("changes lacks add, change, import or remove")
		}
		re := uiSummaryText[c.Operation]
		if re == nil {
			return fmt.Errorf("operation %q", c.Operation)
		}
		got := re.FindStringSubmatch(m.Message)
		want := []string{fmt.Sprint(*c.Add), fmt.Sprint(*c.Change), fmt.Sprint(*c.Remove)}
		if c.Operation == "destroy" {
			want = want[2:]
		}
		if got == nil || fmt.Sprint(got[1:]) != fmt.Sprint(want) {
			return fmt.Errorf("@message %q does not say %v", m.Message, want)
		}
	case "outputs":
		if m.Outputs == nil {
			return fmt.Errorf("no outputs")
		}
		for name, o := range m.Outputs {
			if o.Sensitive == nil || (*o.Sensitive && o.Value != nil) || (o.Action != "" && !uiActions[o.Action]) {
				return fmt.Errorf("output %s: %+v", name, o)
			}
			if o.Action == "" && o.Type == nil {
				return fmt.Errorf("output %s has neither a planned action nor a type", name)
			}
		}
	}
	return nil
}

func checkUIResource(r *uiResource) error {
	if r == nil || r.Addr == "" || r.Module == nil || r.Resource == "" || r.ImpliedProvider == "" || r.ResourceType == "" || r.ResourceName == "" {
		return fmt.Errorf("resource: %+v", r)
	}
	want := r.Resource
	if *r.Module != "" {
		want = *r.Module + "." + want
	}
	if want != r.Addr || !strings.HasPrefix(r.Resource, r.ResourceType+"."+r.ResourceName) {
		return fmt.Errorf("resource %+v: module, resource, type and name do not make its addr", r)
	}
	return nil
}

// cmdEnvMatch is `envmatch NAME FILE REGEXP`: set NAME to the first
// submatch of REGEXP in FILE (e.g. the lock id an error printed).
func cmdEnvMatch(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: envmatch NAME FILE REGEXP")
	}
	data, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	m := regexp.MustCompile(args[2]).FindSubmatch(data)
	if len(m) < 2 {
		ts.Fatalf("envmatch: no match of %q in %s:\n%s", args[2], args[1], data)
	}
	ts.Setenv(args[0], string(m[1]))
}
