package kmod

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/sparkform/sparkform/providers/internal/units"
)

// kbool parses a bool as the kernel's kstrtobool does.
func kbool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "1", "y", "yes", "on", "t", "true":
		return true, true
	case "0", "n", "no", "off", "f", "false":
		return false, true
	}
	return false, false
}

// paramEqual reports whether the kernel showing observed means the value
// want: bool parameters read Y/N, integers compare by value (0x10 is 16).
func paramEqual(want, observed string) bool {
	if want == observed {
		return true
	}
	if observed == "Y" || observed == "N" {
		b, ok := kbool(want)
		return ok && b == (observed == "Y")
	}
	a, err1 := strconv.ParseInt(want, 0, 64)
	b, err2 := strconv.ParseInt(observed, 10, 64)
	if err1 == nil && err2 == nil {
		return a == b
	}
	ua, err1 := strconv.ParseUint(want, 0, 64)
	ub, err2 := strconv.ParseUint(observed, 10, 64)
	return err1 == nil && err2 == nil && ua == ub
}

// pageSize is what memory.max rounds down to on every node sparkform
// targets (x86_64 and arm64 with 4k pages; 64k-page kernels compare within
// a page as well, see memEqual).
const pageSize = 4096

// parseBytes parses "max", or a size as units.ParseBytes reads it
// (binary units, as the kernel's memparse and docker take them).
func parseBytes(s string) (uint64, bool, error) {
	if strings.TrimSpace(strings.ToLower(s)) == "max" {
		return 0, true, nil
	}
	// The kernel's memparse takes whole numbers only: no "1.5g" here.
	n, err := units.ParseBytes(s)
	if err != nil || strings.Contains(s, ".") {
		return 0, false, fmt.Errorf("%w: %q is not a size: use bytes, a number with k, m, g or t (\"9g\"), or \"max\"", ErrBadValue, s)
	}
	return uint64(n), false, nil
}

// memKernel is what the kernel will show for a memory limit written as s.
func memKernel(s string) (string, error) {
	n, isMax, err := parseBytes(s)
	if err != nil {
		return "", err
	}
	if isMax {
		return "max", nil
	}
	return strconv.FormatUint(n/pageSize*pageSize, 10), nil
}

// memEqual compares a configured memory limit with the file's content.
func memEqual(want, observed string) bool {
	w, err := memKernel(want)
	if err != nil {
		return false
	}
	if w == observed {
		return true
	}
	a, err1 := strconv.ParseUint(w, 10, 64)
	b, err2 := strconv.ParseUint(observed, 10, 64)
	return err1 == nil && err2 == nil && a >= b && a-b < 65536 // larger pages round further
}

const cpuPeriod = 100000

// cpusToMax turns a CPU count into cpu.max "QUOTA PERIOD".
func cpusToMax(cpus *big.Float) (string, error) {
	f, _ := cpus.Float64()
	if !(f > 0) || f > 1e6 {
		return "", fmt.Errorf("%w: cpus = %v: want a number of CPUs above 0, e.g. 6 or 0.5", ErrBadValue, cpus)
	}
	q := int64(math.Round(f * cpuPeriod))
	if q < 1000 {
		q = 1000 // the kernel's minimum quota (1ms)
	}
	return fmt.Sprintf("%d %d", q, cpuPeriod), nil
}

// cpuMaxNorm normalises a raw cpu.max value ("max", "600000",
// "600000 100000") to the kernel's two-field form.
func cpuMaxNorm(s string) (string, error) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 2 {
		return "", fmt.Errorf("%w: cpu_max = %q: want \"QUOTA PERIOD\" (\"600000 100000\") or \"max\"", ErrBadValue, s)
	}
	if f[0] != "max" {
		if n, err := strconv.ParseUint(f[0], 10, 64); err != nil || n == 0 {
			return "", fmt.Errorf("%w: cpu_max quota %q is not a positive integer or \"max\"", ErrBadValue, f[0])
		}
	}
	period := strconv.Itoa(cpuPeriod)
	if len(f) == 2 {
		if n, err := strconv.ParseUint(f[1], 10, 64); err != nil || n == 0 {
			return "", fmt.Errorf("%w: cpu_max period %q is not a positive integer", ErrBadValue, f[1])
		}
		period = f[1]
	}
	return f[0] + " " + period, nil
}

// pidsNorm checks pids_max ("max" or a count).
func pidsNorm(s string) (string, error) {
	t := strings.TrimSpace(s)
	if t == "max" {
		return t, nil
	}
	if _, err := strconv.ParseUint(t, 10, 64); err != nil {
		return "", fmt.Errorf("%w: pids_max = %q: want a number of processes or \"max\"", ErrBadValue, s)
	}
	return t, nil
}
