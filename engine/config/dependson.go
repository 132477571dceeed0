package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// dependsOnKinds says, for the messages of decodeDependsOn, what a block's
// depends_on may list: a resource's resources and nodes, a module call's
// modules too.
type dependsOnKinds struct {
	list    string // "resources or nodes"
	example string // "[kmod_module.nvidia_drm]"
	item    string // "a resource (TYPE.NAME) or node (node.NAME)"
}

var (
	resourceDependsOn = dependsOnKinds{"resources or nodes", "[kmod_module.nvidia_drm]",
		"a resource (TYPE.NAME) or node (node.NAME)"}
	moduleDependsOn = dependsOnKinds{"resources, nodes or modules", "[kmod_module.nvidia_drm, module.first]",
		"a resource (TYPE.NAME), node (node.NAME) or module (module.NAME)"}
)

// decodeDependsOn reads a depends_on list: plain references, never an
// expression, a variable or each/count (ordering by value follows
// references by itself).
func decodeDependsOn(a *hcl.Attribute, k dependsOnKinds) ([]hcl.Traversal, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	exprs, d := hcl.ExprList(a.Expr)
	if d.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid depends_on",
			Detail: fmt.Sprintf("depends_on takes a list of %s, e.g. depends_on = %s.", k.list, k.example), Subject: a.Expr.Range().Ptr()})
	}
	var out []hcl.Traversal
	for _, e := range exprs {
		tr, d := hcl.AbsTraversalForExpr(e)
		if d.HasErrors() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid depends_on reference",
				Detail: "Each depends_on item must be a plain reference to " + k.item + ", without expressions.", Subject: e.Range().Ptr()})
			continue
		}
		switch tr.RootName() {
		case "var", "local", "each", "count", "path":
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid depends_on reference",
				Detail: fmt.Sprintf("depends_on lists %s; %q is not one. Ordering follows references to other values automatically.", k.list, tr.RootName()), Subject: e.Range().Ptr()})
			continue
		}
		out = append(out, tr)
	}
	return out, diags
}
