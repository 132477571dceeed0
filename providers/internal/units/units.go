// Package units parses the byte sizes users write in configs ("9g",
// "512m", "2GiB", "1.5g", plain bytes) the way Docker and the kernel's
// memparse read them: binary multiples. Providers share it so "9g" means
// the same number everywhere.
package units

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// ErrSyntax is returned for text that is not a size.
var ErrSyntax = errors.New("not a size: use bytes or a number with k, m, g or t (e.g. \"9g\", \"512m\")")

// ParseBytes reads a non-negative size with an optional k/m/g/t suffix
// (optionally followed by "b" or "ib"), in binary multiples. Fractions are
// allowed with a suffix ("1.5g") and rounded down to a whole byte.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, ErrSyntax
	}
	if n := len(t); n > 1 && t[n-1] == 'b' && (t[n-2] < '0' || t[n-2] > '9') {
		t = strings.TrimSuffix(t[:n-1], "i") // "9gb", "9gib"
	}
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
	if i, err := strconv.ParseInt(t, 10, 64); err == nil {
		if i < 0 || (mult > 1 && i > math.MaxInt64/mult) {
			return 0, ErrSyntax
		}
		return i * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || mult == 1 {
		return 0, ErrSyntax
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 {
		return 0, ErrSyntax
	}
	return int64(v), nil
}
