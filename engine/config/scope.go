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
		"path":  pathValue(s.BaseDir),
	}
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

// RootContext is what every evaluation context of one module shares: var
// (all of vars), path, the functions, and local and node empty. A block's
// own context is a child of it that adds only what the block references
// (see the engine's evaluator), so building one costs O(references), and
// the shared part is built once per walk instead of once per block.
func RootContext(baseDir string, vars map[string]cty.Value) *hcl.EvalContext {
	return &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":   objectOf(vars),
			"local": cty.EmptyObjectVal,
			"node":  cty.EmptyObjectVal,
			"path":  pathValue(baseDir),
		},
		Functions: cachedFunctions(baseDir),
	}
}

// pathValue is the path object for a module in baseDir. path.module is
// absolute so that both file("x") (relative to the module, like every
// file function here) and the Terraform idiom file("${path.module}/x")
// name the same file.
func pathValue(baseDir string) cty.Value {
	cwd, _ := os.Getwd()
	base := baseDir
	if base == "" {
		base = "."
	}
	if abs, err := filepath.Abs(base); err == nil {
		base = abs
	}
	return cty.ObjectVal(map[string]cty.Value{
		"module": cty.StringVal(base),
		"root":   cty.StringVal(base),
		"cwd":    cty.StringVal(cwd),
	})
}

func objectOf(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.EmptyObjectVal
	}
	return cty.ObjectVal(m)
}
