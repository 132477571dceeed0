package main

import "testing"

// termSafe escapes what could forge output lines or drive a terminal,
// and leaves every other name as it is (issue 31).
func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, line, text string }{
		{`gitkit_checkout.kit["spark-01"]`, `gitkit_checkout.kit["spark-01"]`, `gitkit_checkout.kit["spark-01"]`},
		{`x["ünïcödé ✓"]`, `x["ünïcödé ✓"]`, `x["ünïcödé ✓"]`},
		{"a\nApply complete!", `a\nApply complete!`, "a\nApply complete!"},
		{"a\x1b[2K\x1b]0;title\a", `a\x1b[2K\x1b]0;title\x07`, `a\x1b[2K\x1b]0;title\x07`},
		{"a\rb\x00c\x7f", `a\rb\x00c\x7f`, `a\rb\x00c\x7f`},
		{"a\tb", `a\tb`, "a\tb"},
		{"a\u202eb\u2066c", `a\u202eb\u2066c`, `a\u202eb\u2066c`},
		{"a\u2028b\u0085c", `a\u2028b\u0085c`, `a\u2028b\u0085c`},
		{"a\xffb", `a\xffb`, `a\xffb`},
		{"\u009b31m", `\u009b31m`, `\u009b31m`},
	} {
		if got := termSafe(tc.in); got != tc.line {
			t.Errorf("termSafe(%q) = %q, want %q", tc.in, got, tc.line)
		}
		if got := termSafeText(tc.in); got != tc.text {
			t.Errorf("termSafeText(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
	if n := testing.AllocsPerRun(100, func() { termSafe(`gitkit_checkout.kit["spark-01"]`) }); n != 0 {
		t.Errorf("termSafe of a plain address allocates %.0f times", n)
	}
}
