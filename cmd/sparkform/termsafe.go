package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// termSafe is s as it may be printed on one line of a terminal: every
// control character (newline, carriage return, ESC, NUL, DEL, C1), line
// and paragraph separator, bidirectional override and byte of invalid
// UTF-8 is written as an escape (\n, \x1b, \u202e), so a name read from
// a state or plan file cannot forge lines of output or drive the terminal.
// Every address, state key and node name printed for people goes through
// it; the -json stream needs nothing (encoding/json escapes them).
func termSafe(s string) string { return escapeTerm(s, false) }

// termSafeText is termSafe for a message of several lines (an error, a
// diagnostic's detail): newlines and tabs stay, everything else is escaped.
func termSafeText(s string) string { return escapeTerm(s, true) }

func escapeTerm(s string, keepLines bool) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s // plain ASCII: the common case, no allocation
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
