package kernelsim

import (
	"bufio"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Module is one catalogue entry.
type Module struct {
	Name    string
	Depends []string
	// Boot modules are loaded by Reboot (and by New).
	Boot   bool
	Size   int
	Params []Param
}

// Param is one module parameter.
type Param struct {
	Name    string
	Type    string // bool int uint long ulong short ushort byte charp
	Mode    fs.FileMode
	Default string
}

// Catalog is the set of modules a simulated kernel can load, in file order.
type Catalog struct {
	Modules []Module
	byName  map[string]int
}

// Lookup finds a module by name (dash and underscore are the same).
func (c *Catalog) Lookup(name string) (Module, bool) {
	i, ok := c.byName[NormalizeName(name)]
	if !ok {
		return Module{}, false
	}
	return c.Modules[i], true
}

// NormalizeName maps dashes to underscores, as the kernel does.
func NormalizeName(name string) string { return strings.ReplaceAll(name, "-", "_") }

var paramTypes = map[string]bool{"bool": true, "int": true, "uint": true, "long": true,
	"ulong": true, "short": true, "ushort": true, "byte": true, "charp": true}

// ParseCatalog reads the catalogue format described in the package doc.
func ParseCatalog(text string) (*Catalog, error) {
	c := &Catalog{byName: map[string]int{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: line %d: %s (format: NAME [depends=A,B] [boot] [size=N] [pname:type[:ro|rw|hidden]=default]...)",
				ErrCatalog, ln, fmt.Sprintf(format, a...))
		}
		m := Module{Name: NormalizeName(f[0]), Size: 16384}
		if _, dup := c.byName[m.Name]; dup {
			return nil, bad("module %q listed twice", m.Name)
		}
		for _, tok := range f[1:] {
			switch {
			case tok == "boot":
				m.Boot = true
			case strings.HasPrefix(tok, "depends="):
				for _, d := range strings.Split(strings.TrimPrefix(tok, "depends="), ",") {
					if d != "" {
						m.Depends = append(m.Depends, NormalizeName(d))
					}
				}
			case strings.HasPrefix(tok, "size="):
				n, err := strconv.Atoi(strings.TrimPrefix(tok, "size="))
				if err != nil || n <= 0 {
					return nil, bad("size must be a positive integer, got %q", tok)
				}
				m.Size = n
			case strings.Contains(tok, ":"):
				spec, def, ok := strings.Cut(tok, "=")
				if !ok {
					return nil, bad("parameter %q has no default (write pname:type=default)", tok)
				}
				parts := strings.Split(spec, ":")
				if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
					return nil, bad("parameter %q: want pname:type[:mode]=default", tok)
				}
				p := Param{Name: parts[0], Type: parts[1], Mode: 0o444, Default: def}
				if !paramTypes[p.Type] {
					return nil, bad("parameter %q: unknown type %q", p.Name, p.Type)
				}
				if len(parts) == 3 {
					switch parts[2] {
					case "ro":
					case "rw":
						p.Mode = 0o644
					case "hidden":
						p.Mode = 0
					default:
						return nil, bad("parameter %q: mode %q is not ro, rw or hidden", p.Name, parts[2])
					}
				}
				norm, err := formatParam(p.Type, def)
				if err != nil {
					return nil, bad("parameter %q: default %q is not a valid %s", p.Name, def, p.Type)
				}
				p.Default = norm
				m.Params = append(m.Params, p)
			default:
				return nil, bad("unknown token %q", tok)
			}
		}
		c.byName[m.Name] = len(c.Modules)
		c.Modules = append(c.Modules, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, m := range c.Modules {
		for _, d := range m.Depends {
			if _, ok := c.byName[d]; !ok {
				return nil, fmt.Errorf("%w: module %q depends on %q, which is not in the catalogue", ErrCatalog, m.Name, d)
			}
		}
	}
	return c, nil
}

// formatParam parses v as the kernel parses a parameter of type typ and
// returns what sysfs shows afterwards.
func formatParam(typ, v string) (string, error) {
	bits := map[string]int{"byte": 8, "short": 16, "ushort": 16, "int": 32, "uint": 32, "long": 64, "ulong": 64}
	switch typ {
	case "bool":
		// kstrtobool: first character decides; "on"/"off" too.
		switch strings.ToLower(v) {
		case "", "1", "y", "yes", "on", "true":
			return "Y", nil
		case "0", "n", "no", "off", "false":
			return "N", nil
		}
		return "", ErrInvalid
	case "charp":
		return v, nil
	case "uint", "ulong", "ushort", "byte":
		n, err := strconv.ParseUint(v, 0, bits[typ])
		if err != nil {
			return "", ErrInvalid
		}
		return strconv.FormatUint(n, 10), nil
	default:
		n, err := strconv.ParseInt(v, 0, bits[typ])
		if err != nil {
			return "", ErrInvalid
		}
		return strconv.FormatInt(n, 10), nil
	}
}
