package addrs

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// ModuleStep is one call in a module instance path: module.NAME[KEY].
type ModuleStep struct {
	Name string
	Key  InstanceKey
}

// ModuleInstance is the path of a module instance from the root; the root
// module is the empty path.
type ModuleInstance []ModuleStep

// String renders the path as users type it: module.a["x"].module.b.
func (m ModuleInstance) String() string {
	var b strings.Builder
	for i, s := range m {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString("module.")
		b.WriteString(s.Name)
		b.WriteString(keyString(s.Key))
	}
	return b.String()
}

// Child is m extended by one call.
func (m ModuleInstance) Child(name string, k InstanceKey) ModuleInstance {
	if k == nil {
		k = NoKey
	}
	out := make(ModuleInstance, len(m), len(m)+1)
	copy(out, m)
	return append(out, ModuleStep{Name: name, Key: k})
}

// Prefix joins a module path string and a name with a dot; the root's
// prefix is nothing.
func Prefix(module, name string) string {
	if module == "" {
		return name
	}
	return module + "." + name
}

// splitScoped splits a flattened name MODULE.NAME at its last dot. Names
// are identifiers, so the last dot outside a quoted key is the separator;
// keys may hold dots, so the scan skips quoted strings.
func splitScoped(s string) (module, name string, ok bool) {
	last := -1
	inStr := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && c == '.':
			last = i
		}
	}
	if last <= 0 || !strings.HasPrefix(s, "module.") {
		return "", "", false
	}
	return s[:last], s[last+1:], true
}

// WithinModule reports whether addr (a resource or instance address) lies
// in the module instance or call named by module (module.a, module.a["x"],
// module.a["x"].module.b), including its nested modules.
func WithinModule(addr, module string) bool {
	if !strings.HasPrefix(addr, module) || len(addr) == len(module) {
		return false
	}
	switch addr[len(module)] {
	case '.':
		return true
	case '[':
		// module.a matches module.a["x"]..., but module.a["x"] must not
		// match module.a["x2"]: only a bare call takes any key.
		return !strings.HasSuffix(module, "]")
	}
	return false
}

// moduleSteps reads the leading module.NAME[KEY] steps of trav.
func moduleSteps(trav hcl.Traversal) (ModuleInstance, hcl.Traversal, string) {
	var m ModuleInstance
	i := 0
	for i < len(trav) {
		var root string
		switch t := trav[i].(type) {
		case hcl.TraverseRoot:
			root = t.Name
		case hcl.TraverseAttr:
			root = t.Name
		default:
			return nil, nil, "a key must follow a name"
		}
		if root != "module" {
			break
		}
		if i+1 >= len(trav) {
			return nil, nil, "module must be followed by .NAME"
		}
		a, ok := trav[i+1].(hcl.TraverseAttr)
		if !ok {
			return nil, nil, "module must be followed by .NAME"
		}
		step := ModuleStep{Name: a.Name, Key: NoKey}
		i += 2
		if i < len(trav) {
			if ix, ok := trav[i].(hcl.TraverseIndex); ok {
				k, err := KeyFromValue(ix.Key)
				if err != nil {
					return nil, nil, err.Error()
				}
				step.Key = k
				i++
			}
		}
		m = append(m, step)
	}
	rest := trav[i:]
	if len(rest) > 0 {
		if a, ok := rest[0].(hcl.TraverseAttr); ok {
			rest = append(hcl.Traversal{hcl.TraverseRoot{Name: a.Name, SrcRange: a.SrcRange}}, rest[1:]...)
		}
	}
	return m, rest, ""
}
