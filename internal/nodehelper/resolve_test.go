package nodehelper

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// find's %T@ and its complaint quoting, as GNU find 4.9 prints them (the
// wanted strings are its output; the provider's differential test runs
// find itself).
func TestResolveFormats(t *testing.T) {
	for _, tc := range []struct {
		ts   unix.Timespec
		want string
	}{
		{unix.Timespec{Sec: 1796565240, Nsec: 162737406}, "1796565240.1627374060"},
		{unix.Timespec{Sec: 1700000000}, "1700000000.0000000000"},
		{unix.Timespec{Sec: -315619200, Nsec: 500000000}, "-315619200.5000000000"},
	} {
		if got := findTime(tc.ts); got != tc.want {
			t.Errorf("findTime(%v) = %q, want %q", tc.ts, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name, c, utf8 string
	}{
		{"./a\tb\nc\rd\ae\bf\vg\fh\x1b", `'./a\tb\nc\rd\ae\bf\vg\fh\033'`, "‘./a\\tb\\nc\\rd\\ae\\bf\\vg\\fh\\033’"},
		{"./q'u\\o\x01c\xff", `'./q\'u\\o\001c\377'`, "‘./q'u\\\\o\\001c\\377’"},
		{"./é", `'./\303\251'`, "‘./é’"},
		{"./ü’x", `'./\303\274\342\200\231x'`, "‘./ü\\’x’"},
		{`./"dq?? $` + "`", `'./"dq?? $` + "`'", "‘./\"dq?? $`’"},
	} {
		c, u := &resolver{}, &resolver{utf8: true}
		if got := c.quote(tc.name); got != tc.c {
			t.Errorf("C quote(%q) = %s, want %s", tc.name, got, tc.c)
		}
		if got := u.quote(tc.name); got != tc.utf8 {
			t.Errorf("UTF-8 quote(%q) = %s, want %s", tc.name, got, tc.utf8)
		}
	}
}

func TestResolveLocale(t *testing.T) {
	for _, tc := range []struct {
		all, ctype, lang string
		utf8             bool
	}{
		{"", "", "C.UTF-8", true},
		{"", "", "en_US.utf8", true},
		{"", "", "de_DE.UTF-8@euro", true},
		{"C", "", "en_US.UTF-8", false},
		{"", "POSIX", "C.UTF-8", false},
		{"", "", "", false},
		{"", "", "en_US.ISO-8859-1", false},
	} {
		t.Setenv("LC_ALL", tc.all)
		t.Setenv("LC_CTYPE", tc.ctype)
		t.Setenv("LANG", tc.lang)
		if got := utf8Locale(); got != tc.utf8 {
			t.Errorf("LC_ALL=%q LC_CTYPE=%q LANG=%q: UTF-8 %v, want %v", tc.all, tc.ctype, tc.lang, got, tc.utf8)
		}
	}
}

// Bad arguments are ExitUsage with nothing on stdout, so the provider
// runs the script's tools instead.
func TestResolveUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"64", "1"}, {"x", "1", "m"}, {"-1", "1", "m"}, {"64", "", "m"}} {
		var out, errb bytes.Buffer
		if rc := Main(append([]string{"resolve"}, args...), nil, &out, &errb); rc != ExitUsage || out.Len() != 0 {
			t.Errorf("resolve %q: status %d, stdout %q", args, rc, out.String())
		}
	}
}
