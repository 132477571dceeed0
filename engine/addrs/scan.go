package addrs

import "strings"

// ScanModuleResourceInstance reads (module.NAME[KEY]?.)+TYPE.NAME[KEY]? with
// ASCII names, keys of at most 9 digits (no leading zero) or quoted printable ASCII with no
// escapes or template characters, and a TYPE that is no reserved word:
// the addresses that ParseResourceInstance certainly reads the same way:
// the form String writes them in, for the keys users mostly have. It
// returns the resource's address (s without the instance's own key) and
// its name; ok is false for anything else, which the caller parses. A
// state or plan of a module used many times holds an address per
// instance, and parsing each as HCL was most of reading them.
func ScanModuleResourceInstance(s string) (resource, name string, ok bool) {
	i := 0
	ident := func() string {
		start := i
		if i >= len(s) || !isASCIILetter(s[i]) {
			return ""
		}
		for i < len(s) && (isASCIILetter(s[i]) || s[i] >= '0' && s[i] <= '9' || s[i] == '_' || s[i] == '-') {
			i++
		}
		return s[start:i]
	}
	key := func() bool { // an optional [KEY]; false when malformed
		if i >= len(s) || s[i] != '[' {
			return true
		}
		i++
		switch {
		case i < len(s) && s[i] == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if c := s[i]; c < 0x20 || c > 0x7e || c == '\\' || c == '$' || c == '%' {
					return false
				}
			}
			i++ // the closing quote
		default:
			start := i
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			// Leading zeros parse to another key than written: the
			// resource's address would not be s's prefix.
			if i == start || i-start > 9 || s[start] == '0' && i-start > 1 {
				return false
			}
		}
		if i >= len(s) || s[i] != ']' {
			return false
		}
		i++
		return true
	}
	dot := func() bool {
		if i < len(s) && s[i] == '.' {
			i++
			return true
		}
		return false
	}
	modules := 0
	for strings.HasPrefix(s[i:], "module.") {
		i += len("module.")
		if ident() == "" || !key() || !dot() {
			return "", "", false
		}
		modules++
	}
	typ := ident()
	if modules == 0 || typ == "" || ReservedRoot(typ) || !dot() {
		return "", "", false
	}
	name = ident()
	end := i
	if name == "" || !key() || i != len(s) {
		return "", "", false
	}
	return s[:end], name, true
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
