package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/cmd/sparkform/internal/jsonui"
)

// writeDiagnostic prints one diagnostic as
//
//	Error: Summary
//
//	  on main.sf.hcl:3:7, in resource "x" "y":
//	   3:   path = 42
//	               ^^
//
//	Detail, with what to do.
//
// file:line:col first, so editors and terminals can jump to it.
func writeDiagnostic(w io.Writer, d *hcl.Diagnostic, files map[string]*hcl.File, color bool) {
	sev := "Error"
	style := boldRed
	if d.Severity == hcl.DiagWarning {
		sev, style = "Warning", boldYellow
	}
	head := sev + ":"
	if color {
		head = style.Sprint(head)
	}
	// Summaries and details name addresses and keys read from state and
	// plan files: escaped, they cannot forge lines or drive the terminal.
	fmt.Fprintf(w, "%s %s\n", head, termSafe(d.Summary))
	if d.Subject != nil {
		s := d.Subject
		fmt.Fprintf(w, "\n  on %s:%d:%d", s.Filename, s.Start.Line, s.Start.Column)
		var src []byte
		if f := files[s.Filename]; f != nil {
			src = f.Bytes
		}
		if ctx := jsonui.ContextString(files[s.Filename], s); ctx != "" {
			fmt.Fprintf(w, ", in %s", ctx)
		}
		fmt.Fprintln(w, ":")
		if src != nil {
			writeSnippet(w, src, s)
		}
	}
	if d.Detail != "" {
		fmt.Fprintf(w, "\n%s\n", termSafeText(d.Detail))
	}
	fmt.Fprintln(w)
}

// writeSnippet prints the lines of r with their numbers and marks the
// range with carets.
func writeSnippet(w io.Writer, src []byte, r *hcl.Range) {
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if line < r.Start.Line {
			continue
		}
		if line > r.End.Line || line > r.Start.Line+4 {
			break
		}
		text := strings.ReplaceAll(sc.Text(), "\t", " ")
		fmt.Fprintf(w, "  %3d: %s\n", line, text)
		from, to := 1, len(text)+1
		if line == r.Start.Line {
			from = r.Start.Column
		}
		if line == r.End.Line {
			to = r.End.Column
		}
		if to <= from {
			to = from + 1
		}
		if from-1 <= len(text) {
			fmt.Fprintf(w, "       %s%s\n", strings.Repeat(" ", from-1), strings.Repeat("^", to-from))
		}
	}
}
