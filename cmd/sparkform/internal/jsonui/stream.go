package jsonui

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// UIVersion is the version of the stream; it follows Terraform's "ui"
// versioning: a new minor adds fields or message types.
const UIVersion = "1.0"

// Module is the @module of every message.
const Module = "sparkform.ui"

// Stream writes the machine-readable UI: one JSON object per line, each
// with @level, @message, @module, @timestamp, type and its payload.
// Methods may be called concurrently; each line is written whole.
type Stream struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewStream writes to w.
func NewStream(w io.Writer) *Stream { return &Stream{w: w, now: time.Now} }

// Emit writes one line. fields carry the payload (e.g. "hook": {...}).
func (s *Stream) Emit(level, typ, msg string, fields map[string]any) {
	line := map[string]any{"@level": level, "@message": msg, "@module": Module, "type": typ}
	for k, f := range fields {
		line[k] = f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	line["@timestamp"] = s.now().Format("2006-01-02T15:04:05.000000Z07:00")
	b, err := json.Marshal(line)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"@level": "error", "@message": "cannot encode a UI message: " + err.Error(),
			"@module": Module, "@timestamp": line["@timestamp"], "type": "log"})
	}
	b = append(b, '\n')
	_, _ = s.w.Write(b)
}

// Version is the first message: the program's version under its own
// name (Terraform writes "terraform", OpenTofu "tofu") and the UI's.
func (s *Stream) Version(program, version string) {
	s.Emit("info", "version", program+" "+version, map[string]any{program: version, "ui": UIVersion})
}

// Log is a "log" message.
func (s *Stream) Log(level, msg string) { s.Emit(level, "log", msg, nil) }

// Diagnostic writes d with its range and the source snippet (files hold
// the sources), as Terraform's diagnostic message does.
func (s *Stream) Diagnostic(d *hcl.Diagnostic, files map[string]*hcl.File) {
	jd := NewDiagnostic(d, files)
	level, prefix := "error", "Error: "
	if jd.Severity == "warning" {
		level, prefix = "warn", "Warning: "
	}
	s.Emit(level, "diagnostic", prefix+d.Summary, map[string]any{"diagnostic": jd})
}

// ChangeSummary is Terraform's change_summary; op is plan, apply or
// destroy, msg its text.
func (s *Stream) ChangeSummary(op, msg string, add, change, destroy int) {
	s.Emit("info", "change_summary", msg, map[string]any{"changes": map[string]any{
		"add": add, "change": change, "remove": destroy, "import": 0, "operation": op}})
}

// PlanSummaryText is a plan's change_summary text.
func PlanSummaryText(add, change, destroy int) string {
	return fmt.Sprintf("Plan: %d to add, %d to change, %d to destroy.", add, change, destroy)
}
