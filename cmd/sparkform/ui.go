package main

import (
	"fmt"
	"os"

	"golang.org/x/term"
)

// stdoutIsTerminal reports whether progress may be redrawn in place.
func (m *meta) stdoutIsTerminal() bool {
	f, ok := outputFile(m.stdout)
	return ok && term.IsTerminal(int(f.Fd()))
}

// plainProgress is true when the terminal cannot redraw (TERM=dumb) or
// the user asked for plain lines (SPARKFORM_PROGRESS=plain).
func (m *meta) plainProgress() bool {
	return os.Getenv("TERM") == "dumb" || os.Getenv("SPARKFORM_PROGRESS") == "plain"
}

// startJSON switches this command to the machine-readable stream and
// sends its first message.
func (m *meta) startJSON() {
	m.jsonOut = newJSONView(m.stdout)
	m.jsonOut.version()
}

// fail reports an error that has no source range: a diagnostic in the
// -json stream, "Error: ..." on stderr otherwise.
func (m *meta) fail(err error) {
	if m.jsonOut != nil {
		m.jsonOut.errorDiag(err)
		return
	}
	fmt.Fprintln(m.stderr, "Error:", termSafeText(err.Error()))
}

// failed is fail, as the command's result (exit status 1).
func (m *meta) failed(err error) error {
	m.fail(err)
	return &exitError{1}
}

// validated ends validate: the success line, or in the -json stream a
// "validate" message with the verdict and the diagnostic counts.
func (m *meta) validated(valid bool) error {
	if v := m.jsonOut; v != nil {
		v.mu.Lock()
		errs, warns := v.errors, v.warnings
		v.mu.Unlock()
		msg := "Success! The configuration is valid."
		if !valid {
			msg = fmt.Sprintf("The configuration is invalid: %d %s, %d %s.", errs, plural(errs, "error", "errors"), warns, plural(warns, "warning", "warnings"))
		}
		v.emit(map[bool]string{true: "info", false: "error"}[valid], "validate", msg,
			map[string]any{"valid": valid, "error_count": errs, "warning_count": warns})
	} else if valid {
		fmt.Fprintln(m.stdout, "Success! The configuration is valid.")
	}
	if !valid {
		return &exitError{1}
	}
	return nil
}
