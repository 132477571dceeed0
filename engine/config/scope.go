package config

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Scope holds the values an expression may refer to. The engine fills it
// with what it has evaluated so far.
type Scope struct {
	BaseDir   string
	Variables map[string]cty.Value
	Locals    map[string]cty.Value
	// Nodes maps a node name to its object (single) or to an object of
	// instances by key (for_each) or a tuple (count).
	Nodes map[string]cty.Value
	// Resources maps type -> name -> value: an object for a single
	// instance, an object by key (for_each) or a tuple (count).
	Resources map[string]map[string]cty.Value
	// Each is nil outside for_each.
	Each *EachValues
	// CountIndex is cty.NilVal outside count.
	CountIndex cty.Value
}

// funcCache shares one function table per base directory: building it
// allocates, and Scope.EvalContext is called once per block.
var funcCache sync.Map // string -> map[string]function.Function

func cachedFunctions(baseDir string) map[string]function.Function {
	if f, ok := funcCache.Load(baseDir); ok {
		return f.(map[string]function.Function)
	}
	f, _ := funcCache.LoadOrStore(baseDir, Functions(baseDir))
	return f.(map[string]function.Function)
}

// EvalContext builds the HCL evaluation context: var, local, node, each,
// count, path, every resource type as a top-level variable, and the
// functions.
func (s *Scope) EvalContext() *hcl.EvalContext {
	vars := map[string]cty.Value{
		"var":   objectOf(s.Variables),
		"local": objectOf(s.Locals),
		"node":  objectOf(s.Nodes),
	}
	cwd, _ := os.Getwd()
	// path.module is absolute so that both file("x") (relative to the
	// module, like every file function here) and the Terraform idiom
	// file("${path.module}/x") name the same file.
	base := s.BaseDir
	if base == "" {
		base = "."
	}
	if abs, err := filepath.Abs(base); err == nil {
		base = abs
	}
	vars["path"] = cty.ObjectVal(map[string]cty.Value{
		"module": cty.StringVal(base),
		"root":   cty.StringVal(base),
		"cwd":    cty.StringVal(cwd),
	})
	for typ, byName := range s.Resources {
		vars[typ] = objectOf(byName)
	}
	if s.Each != nil {
		vars["each"] = cty.ObjectVal(map[string]cty.Value{"key": s.Each.Key, "value": s.Each.Value})
	}
	if s.CountIndex != cty.NilVal {
		vars["count"] = cty.ObjectVal(map[string]cty.Value{"index": s.CountIndex})
	}
	return &hcl.EvalContext{Variables: vars, Functions: cachedFunctions(s.BaseDir)}
}

func objectOf(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.EmptyObjectVal
	}
	return cty.ObjectVal(m)
}
