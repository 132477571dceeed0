// This file holds -target: which blocks and instances a targeted plan or
// apply touches, and what a targeted destroy must take with it.

package engine

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/state"
)

// targetFilter decides which blocks and instances a targeted plan touches.
type targetFilter struct {
	blocks    map[vertex]bool // config vertices included (targets and what they need)
	instances map[string]bool // instance addresses named exactly
	whole     map[string]bool // resources targeted whole
	modules   []string        // module calls or instances targeted whole
}

func (f *targetFilter) vertex(v vertex) bool {
	return f == nil || f.blocks[v] || (v.kind == resourceVertex && f.inModule(v.addr))
}

// inModule reports whether a resource or instance address lies in a
// targeted module.
func (f *targetFilter) inModule(addr string) bool {
	for _, m := range f.modules {
		if addrs.WithinModule(addr, m) {
			return true
		}
	}
	return false
}

func (f *targetFilter) instance(addr string) bool {
	if f == nil {
		return true
	}
	res := resourceOfInstance(addr)
	if f.whole[res] || f.instances[addr] || f.inModule(res) {
		return true
	}
	// Dependencies of a target are planned whole.
	return f.blocks[resourceV(res)] && !f.hasInstanceTargets(res)
}

func (f *targetFilter) hasInstanceTargets(res string) bool {
	for a := range f.instances {
		if resourceOfInstance(a) == res {
			return true
		}
	}
	return false
}

// newTargetFilter is the filter of targets; none: nil, everything.
func newTargetFilter(targets []addrs.Target) *targetFilter {
	if len(targets) == 0 {
		return nil
	}
	f := &targetFilter{blocks: map[vertex]bool{}, instances: map[string]bool{}, whole: map[string]bool{}}
	for _, tg := range targets {
		if tg.Resource == nil {
			f.modules = append(f.modules, tg.Module)
			continue
		}
		res, key := *tg.Resource, tg.Key
		if key == nil {
			f.whole[res.String()] = true
		} else {
			f.instances[res.Instance(key).String()] = true
		}
	}
	return f
}

// targetStrings and replaceStrings are the addresses a plan stores.
func targetStrings(ts []addrs.Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.String())
	}
	return out
}

func replaceStrings(rs []addrs.ResourceInstance) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

// expand adds to the filter every block the targets depend on.
func (f *targetFilter) expand(cg *configGraph) {
	if f == nil {
		return
	}
	var stack []vertex
	for r := range f.whole {
		stack = append(stack, resourceV(r))
	}
	for a := range f.instances {
		stack = append(stack, resourceV(resourceOfInstance(a)))
	}
	if cg != nil && len(f.modules) > 0 {
		for _, v := range cg.g.vertices() {
			if v.kind == resourceVertex && f.inModule(v.addr) {
				stack = append(stack, v)
			}
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.blocks[v] {
			continue
		}
		f.blocks[v] = true
		if cg != nil {
			stack = append(stack, cg.g.dependsOn(v)...)
		}
	}
	if cg != nil {
		f.addSettledValues(cg)
	}
}

// addSettledValues adds the outputs (and the locals they use) that need
// nothing outside the targets, so a targeted apply updates them too.
func (f *targetFilter) addSettledValues(cg *configGraph) {
	for grew := true; grew; {
		grew = false
		for _, v := range cg.g.vertices() {
			if f.blocks[v] || (v.kind != outputVertex && v.kind != localVertex) {
				continue
			}
			all := true
			for _, d := range cg.g.dependsOn(v) {
				if !f.blocks[d] {
					all = false
					break
				}
			}
			if all {
				f.blocks[v], grew = true, true
			}
		}
	}
}

// reads splits the objects to refresh into what a targeted plan touches,
// which it reads, and the rest, which keeps state's record and is not
// read, as in Terraform: a targeted plan reads the targets and what they
// depend on (a destroy: what depends on them), and reaches no other node,
// so it still works while a node it does not use is down. An object with
// a journal intent to settle is read whatever the targets. Without
// targets everything is read.
func (f *targetFilter) reads(objs map[string]*stateObject, mode plans.Mode, cg *configGraph, recovered map[string]*state.Intent) (read, rest map[string]*stateObject) {
	if f == nil {
		return objs, nil
	}
	touched := f.instance
	if mode == plans.DestroyMode {
		f.expand(nil)
		set := destroySet(objs, f)
		touched = func(addr string) bool { return set[addr] }
	} else {
		f.expand(cg)
	}
	read, rest = map[string]*stateObject{}, map[string]*stateObject{}
	for a, in := range objs {
		if _, settle := recovered[a]; settle || touched(a) {
			read[a] = in
		} else {
			rest[a] = in
		}
	}
	return read, rest
}

// targetingWarning is Terraform's warning on a targeted plan: what it
// did not read may have changed, and what it did not plan is still to do.
func targetingWarning() *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Resource targeting is in effect",
		Detail: "This plan reads and plans only the -target instances and what they need; everything else keeps its record in state, unread, so the plan may not show every change the configuration asks for.\n\n-target is for exceptional cases, such as working around a node that is down or recovering from an error. Run a plan without it afterwards to see what is left."}
}

// targetedApplyWarning is Terraform's warning after a targeted apply.
func targetedApplyWarning() *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Applied changes may be incomplete",
		Detail: "This plan was made with -target, so the apply may not have made every change the configuration asks for. Run a plan without -target to check that nothing is left to do."}
}

// destroySet is what a destroy plan deletes: every instance, or with
// -target the targets and, transitively, whatever state records as
// depending on them, so nothing is left pointing at a deleted object.
func destroySet(prior map[string]*stateObject, filter *targetFilter) map[string]bool {
	set := map[string]bool{}
	for addr, in := range prior {
		if filter == nil || filter.instance(addr) || filter.whole[in.Resource] {
			set[addr] = true
		}
	}
	if filter == nil {
		return set
	}
	for grew := true; grew; {
		grew = false
		gone := map[string]bool{}
		for addr := range set {
			gone[prior[addr].Resource] = true
		}
		for addr, in := range prior {
			if set[addr] {
				continue
			}
			for _, d := range in.Dependencies {
				if gone[d] {
					set[addr], grew = true, true
					break
				}
			}
		}
	}
	return set
}
