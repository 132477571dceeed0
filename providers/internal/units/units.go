// Package units parses and prints the byte sizes users write in configs
// ("9g", "512m", "2GiB", "1.5g", plain bytes) the way Docker and the
// kernel's memparse read them: binary multiples. Providers share it so "9g"
// means the same number everywhere.
//
// Parsing and printing are docker/go-units' (RAMInBytes, BytesSize), the
// code `docker run -m` itself uses. This package only adds the guards that
// library leaves out: the number is plain decimal (no "1e3"), a fraction
// needs a unit ("1.5" is not a byte count), and a size past int64 is an
// error instead of a wrapped number. Whole-number-only input (the kernel's
// memparse) is the caller's rule: see providers/kmod.
package units

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"

	gounits "github.com/docker/go-units"
)

// ErrSyntax is returned for text that is not a size.
var ErrSyntax = errors.New("not a size: use bytes or a number with k, m, g or t (e.g. \"9g\", \"512m\")")

// shape is a plain decimal number and an optional unit; go-units says
// whether the unit is one.
var shape = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) ?([A-Za-z]*)$`)

// ParseBytes reads a non-negative size with an optional k/m/g/t/p suffix
// (optionally followed by "b" or "ib"), in binary multiples. Fractions are
// allowed with a suffix ("1.5g") and rounded down to a whole byte.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	m := shape.FindStringSubmatch(t)
	if m == nil {
		return 0, ErrSyntax
	}
	num, unit := m[1], m[2]
	mult := int64(1)
	if unit != "" {
		var err error
		if mult, err = gounits.RAMInBytes("1" + unit); err != nil {
			return 0, ErrSyntax
		}
	}
	if mult == 1 && strings.Contains(num, ".") {
		return 0, ErrSyntax // a fraction of a byte
	}
	// go-units multiplies in float64; a size at or past 2^63 would wrap.
	if f, err := strconv.ParseFloat(num, 64); err != nil || f*float64(mult) >= math.MaxInt64 {
		return 0, ErrSyntax
	}
	n, err := gounits.RAMInBytes(t)
	if err != nil || n < 0 {
		return 0, ErrSyntax
	}
	return n, nil
}

// Human is n for people in binary units with four significant digits
// ("1.5 GiB", "512 KiB", "17 B"): go-units' BytesSize with a space.
func Human(n int64) string {
	return gounits.CustomSize("%.4g %s", float64(n), 1024, binaryAbbrs)
}

var binaryAbbrs = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
