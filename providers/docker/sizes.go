package docker

import (
	"fmt"
	"strconv"

	"github.com/sparkform/sparkform/providers/internal/units"
)

// parseSize reads a size the way `docker run -m` does (binary multiples):
// "9g", "512m", "2GiB", "1.5g", or plain bytes "9663676416".
func parseSize(s string) (int64, error) {
	n, err := units.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("%w %q: use bytes or a number with k, m, g or t (e.g. \"9g\", \"512m\")", ErrBadSize, s)
	}
	return n, nil
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
