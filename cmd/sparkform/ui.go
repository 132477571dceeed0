package main

import (
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

// startJSON starts the machine-readable stream on stdout and sends its
// first message.
func (m *meta) startJSON() *jsonView {
	s := newJSONView(m.stdout)
	s.Version("sparkform", version)
	return s
}

// fail reports an error that has no source range through the command's
// view: a diagnostic in the -json stream, "Error: ..." on stderr
// otherwise.
func (m *meta) fail(err error) { m.view.fail(err) }

// failed is fail, as the command's result (exit status 1).
func (m *meta) failed(err error) error {
	m.fail(err)
	return &exitError{1}
}
