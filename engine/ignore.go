// This file holds the lifecycle arguments that shape what is planned:
// ignore_changes (keep prior values) and which attributes are sensitive.

package engine

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// applyIgnoreChanges keeps prior values for attributes lifecycle says to
// ignore.
func applyIgnoreChanges(cfg, prior cty.Value, all bool, paths []hcl.Traversal, b *sdk.Block) cty.Value {
	if prior.IsNull() || (!all && len(paths) == 0) || !cfg.IsKnown() || cfg.IsNull() {
		return cfg
	}
	vals := cfg.AsValueMap()
	ignore, nested := ignoredPaths(paths)
	if !all && len(nested) > 0 {
		// Keep the prior value at each nested path the config also has.
		cfg, _ = cty.Transform(cfg, func(p cty.Path, v cty.Value) (cty.Value, error) {
			for _, np := range nested {
				if p.Equals(np) {
					if pv, err := np.Apply(prior); err == nil && pv.Type().Equals(v.Type()) {
						return pv, nil
					}
				}
			}
			return v, nil
		})
		vals = cfg.AsValueMap()
	}
	for name, a := range b.Attributes {
		if a.Computed && !a.Optional {
			continue
		}
		if all || ignore[name] {
			vals[name] = prior.GetAttr(name)
		}
	}
	for name := range b.BlockTypes {
		if all || ignore[name] {
			vals[name] = prior.GetAttr(name)
		}
	}
	return cty.ObjectVal(vals)
}

func sensitiveAttrs(b *sdk.Block) []string {
	var out []string
	for name, a := range b.Attributes {
		if a.Sensitive {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// instanceSensitive is what an instance's change hides and its references
// carry marked, as sensitive paths (config.SensitivePaths): the schema's
// sensitive attributes, the places whose config held a sensitive value
// (configSens), and for an attribute sensitive with another
// (sdk.Attribute.SensitiveWith: sparkform_data's output with its input),
// the same places under it when it has the same type or any type
// (output.env["TOKEN"] with input.env["TOKEN"]), the whole of it otherwise.
func instanceSensitive(b *sdk.Block, configSens []string) []string {
	sens := config.NormalizeSensitivePaths(append(sensitiveAttrs(b), configSens...))
	if len(sens) == 0 {
		return nil
	}
	var with []string
	for name, a := range b.Attributes {
		for _, w := range a.SensitiveWith {
			// The same places when it has the other's shape (a copy);
			// the whole attribute otherwise (node_command's stdout).
			same := false
			if wa := b.Attributes[w]; wa != nil {
				same = a.Type.Equals(wa.Type) || a.Type == cty.DynamicPseudoType
			}
			for _, p := range sens {
				if config.SensitiveRoot(p) != w {
					continue
				}
				if same {
					with = append(with, config.RebaseSensitivePath(p, name))
				} else {
					with = append(with, name)
				}
			}
		}
	}
	if len(with) == 0 {
		return sens
	}
	return config.NormalizeSensitivePaths(append(sens, with...))
}

// MarkSensitive marks the places of an instance's value named in paths
// (instanceSensitive's sensitive paths, kept in the change and in state;
// a bare name is a whole attribute) as sensitive (config.SensitiveMark):
// for the references to it, and for renderers of state. A reference to
// one carries the mark as one to a sensitive variable does, so a
// dependent's plan hides it and an output must say sensitive = true.
// Provider values never carry marks; this marks the evaluator's copy.
func MarkSensitive(v cty.Value, paths []string) cty.Value {
	if len(paths) == 0 || v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() {
		return v
	}
	return config.MarkPaths(v, paths)
}

// unionSorted is the sorted union of two name lists.
func unionSorted(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range append(append([]string{}, a...), b...) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// ignoredPaths sorts ignore_changes items into whole attributes and
// nested paths (env["TMPDIR"]: just that element).
func ignoredPaths(paths []hcl.Traversal) (map[string]bool, []cty.Path) {
	ignore := map[string]bool{}
	var nested []cty.Path
	for _, t := range paths {
		if len(t) == 0 {
			continue
		}
		if len(t) > 1 {
			if p, err := config.TraversalPath(t); err == nil {
				nested = append(nested, p)
				continue
			}
		}
		// config parses items with hcl.RelTraversalForExpr, so the name
		// is a TraverseAttr; a TraverseRoot is accepted too.
		switch step := t[0].(type) {
		case hcl.TraverseAttr:
			ignore[step.Name] = true
		case hcl.TraverseRoot:
			ignore[step.Name] = true
		}
	}
	return ignore, nested
}

// checkIgnoreChanges refuses an ignore_changes item that names no
// argument or block of its resource's type (Terraform: "Unsupported
// attribute"): ignoring a misspelt name would silently ignore nothing.
// One error per item as written, however many module instances share it.
func checkIgnoreChanges(m *config.Module, schemas map[string]*sdk.ResourceSchema) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[hcl.Range]bool{}
	keys := slices.Sorted(maps.Keys(m.Resources))
	for _, key := range keys {
		r := m.Resources[key]
		s := schemas[r.Addr.Type]
		if s == nil || s.Block == nil {
			continue
		}
		for _, tr := range r.Lifecycle.IgnoreChanges {
			if len(tr) == 0 || seen[tr.SourceRange()] {
				continue
			}
			var name string
			switch step := tr[0].(type) {
			case hcl.TraverseAttr:
				name = step.Name
			case hcl.TraverseRoot:
				name = step.Name
			default:
				continue
			}
			if s.Block.Attributes[name] != nil || s.Block.BlockTypes[name] != nil {
				continue
			}
			seen[tr.SourceRange()] = true
			detail := fmt.Sprintf("A %s has no argument or block named %q, so ignore_changes would ignore nothing.", r.Addr.Type, name)
			names := slices.Concat(slices.Collect(maps.Keys(s.Block.Attributes)), slices.Collect(maps.Keys(s.Block.BlockTypes)))
			if near := addrs.Suggest(name, names); near != "" {
				detail += fmt.Sprintf(" Did you mean %q?", near)
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsupported attribute in ignore_changes",
				Detail: detail, Subject: tr.SourceRange().Ptr()})
		}
	}
	return diags
}
