// This file holds the collision check: a plan may not have two instances
// manage the same object on one node (their types' Identity attributes).

package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// checkCollisions refuses a plan in which two instances would manage the
// same object on one node: each provider names, in its schema
// (ResourceSchema.Identity), the attributes that identify on a node what
// an instance manages (a module name, a path, a container name). Two
// instances of one type on one node with equal known values of all of
// them would fight over one object (each reloading the module with its
// own parameters, one destroy removing what the other still uses), across
// the whole configuration, modules included. Values not known until apply
// are not compared.
func (e *Engine) checkCollisions(ctx context.Context, p *plans.Plan) hcl.Diagnostics {
	type owner struct {
		addr string
		what string
	}
	seen := map[string]owner{}
	var diags hcl.Diagnostics
	reported := map[string]bool{}
	for _, c := range p.Changes {
		if c.After == cty.NilVal || c.After.IsNull() || !c.After.IsKnown() || c.Action == plans.Delete {
			continue
		}
		s, err := e.schemaFor(ctx, c.Type)
		if err != nil || len(s.Identity) == 0 {
			continue
		}
		parts := make([]string, 0, len(s.Identity))
		// folded is what is compared: each value as its fold spells it
		// (sdk.ResourceSchema.IdentityFold); parts is what the message
		// shows, as written.
		folded := make([]string, 0, len(s.Identity))
		known := true
		for _, a := range s.Identity {
			if !c.After.Type().IsObjectType() || !c.After.Type().HasAttribute(a) {
				known = false
				break
			}
			v := c.After.GetAttr(a)
			if v.IsNull() || !v.IsWhollyKnown() {
				known = false
				break
			}
			parts = append(parts, fmt.Sprintf("%s = %s", a, renderIdentity(v)))
			if fold := s.IdentityFold[a]; fold != "" && v.Type() == cty.String {
				v = cty.StringVal(sdk.FoldIdentity(fold, v.AsString()))
			}
			folded = append(folded, fmt.Sprintf("%s = %s", a, renderIdentity(v)))
		}
		if !known {
			continue
		}
		what := strings.Join(parts, ", ")
		key := c.Type + "\x00" + nodeIdentity(plans.NodeValue(c.Node)) + "\x00" + strings.Join(folded, ", ")
		prev, ok := seen[key]
		if !ok {
			seen[key] = owner{addr: c.Addr, what: what}
			continue
		}
		if prev.addr == c.Addr || reported[key+c.Addr] {
			continue
		}
		reported[key+c.Addr] = true
		a, b := prev.addr, c.Addr
		if b < a {
			a, b = b, a
		}
		if prev.what != what { // one object spelled two ways
			what = fmt.Sprintf("%s (%s in %s)", what, prev.what, prev.addr)
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Two instances manage the same object",
			Detail: fmt.Sprintf("%s and %s would both manage the %s with %s on %s: each apply would undo the other, and destroying one would take away what the other still uses.\n\n"+
				"Hint: let one instance own it and pass its value to the other (a module input, a reference), or give them different %s.",
				a, b, c.Type, what, nodeLabel(plans.NodeValue(c.Node)), identityNames(parts))})
	}
	sort.SliceStable(diags, func(i, j int) bool { return diags[i].Detail < diags[j].Detail })
	return diags
}

func renderIdentity(v cty.Value) string {
	if v.Type() == cty.String {
		return fmt.Sprintf("%q", v.AsString())
	}
	return fmt.Sprintf("%#v", v)
}

func identityNames(parts []string) string {
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i], _, _ = strings.Cut(p, " = ")
	}
	return strings.Join(names, ", ")
}
