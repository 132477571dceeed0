package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{in: "10m", want: now.Add(-10 * time.Minute)},
		{in: "1h30m", want: now.Add(-90 * time.Minute)},
		{in: "2026-12-06T08:00:00Z", want: time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)},
		{in: "2026-12-06T08:00:00.5+01:00", want: time.Date(2026, 12, 6, 7, 0, 0, 5e8, time.UTC)},
		{in: "2026-12-05", want: time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)},
		{in: "-5m", err: "positive duration"},
		{in: "yesterday", err: "neither a duration"},
	} {
		got, err := parseSince(c.in, now)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseSince(%q) error %v; want one saying %q", c.in, err, c.err)
			}
		case err != nil:
			t.Errorf("parseSince(%q): %v", c.in, err)
		case !got.Equal(c.want):
			t.Errorf("parseSince(%q) = %v; want %v", c.in, got, c.want)
		}
	}
}
