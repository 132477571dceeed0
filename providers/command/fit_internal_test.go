package command

import (
	"errors"
	"testing"
)

// TestParseMemProbe: the probe's output read as figures, table by table.
func TestParseMemProbe(t *testing.T) {
	const meminfo = "== meminfo\nMemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   20480000 kB\n"
	for _, tc := range []struct {
		name, out, source string
		total, avail      int64
		err               error
	}{
		{"no nvidia-smi", meminfo, "/proc/meminfo", 24576000 << 10, 20480000 << 10, nil},
		{"two GPUs summed", "== nvidia-smi\n81920, 80000\n81920, 70000\n" + meminfo, "nvidia-smi", 163840 << 20, 150000 << 20, nil},
		{"unified memory", "== nvidia-smi\n[N/A], [N/A]\n" + meminfo, "/proc/meminfo (nvidia-smi gave no memory figures: [N/A], [N/A])", 24576000 << 10, 20480000 << 10, nil},
		{"nvidia-smi fails", "== nvidia-smi\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\nexit status 9\n" + meminfo,
			"/proc/meminfo (nvidia-smi gave no memory figures: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.)", 24576000 << 10, 20480000 << 10, nil},
		{"no MemAvailable", "== meminfo\nMemTotal: 100 kB\n", "", 0, 0, ErrNoMemFigures},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseMemProbe(tc.out)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if m.source != tc.source || m.total != tc.total || m.available != tc.avail {
				t.Errorf("got %+v, want %q %d %d", m, tc.source, tc.total, tc.avail)
			}
		})
	}
}
