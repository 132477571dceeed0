package docker

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseSize reads a size the way `docker run -m` does (binary multiples):
// "9g", "512m", "2GiB", "1.5g", or plain bytes "9663676416".
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, fmt.Errorf("%w %q: empty; use bytes or a number with k, m, g or t (e.g. \"9g\")", ErrBadSize, s)
	}
	t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult = 1 << 10
		case 'm':
			mult = 1 << 20
		case 'g':
			mult = 1 << 30
		case 't':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%w %q: use bytes or a number with k, m, g or t (e.g. \"9g\", \"512m\")", ErrBadSize, s)
	}
	v := f * float64(mult)
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("%w %q: too large", ErrBadSize, s)
	}
	return int64(v), nil
}

// formatSize writes n in the largest unit that divides it ("9g"), or as
// plain bytes.
func formatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// sizesEqual compares two size strings by value; "-1" is only equal to
// itself. An unparsable string equals only an identical string.
func sizesEqual(a, b string) bool {
	if a == b {
		return true
	}
	if a == "-1" || b == "-1" {
		return false
	}
	x, err1 := parseSize(a)
	y, err2 := parseSize(b)
	return err1 == nil && err2 == nil && x == y
}
