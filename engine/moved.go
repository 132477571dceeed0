// This file holds the configuration's moved blocks: planned in memory
// against the prior state (a plan never writes state), carried out on the
// state by the apply of that plan, before its first change.

package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/state"
)

// planMoves renames, in objs, every object a moved block moves (an
// instance, every instance of a resource, or everything in a module call
// or instance), as `state mv` would, and records each rename in p.Moves:
// the plan then compares the moved objects with their new blocks, and
// nothing is destroyed and created again. A block whose from address has
// nothing in state (moved by an earlier apply) does nothing; one whose to
// address is taken, or that would change an object's type, is an error
// naming both.
func (e *Engine) planMoves(objs map[string]*stateObject, p *plans.Plan) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, mv := range e.module.Moved {
		from, to := targetString(mv.From), targetString(mv.To)
		var pairs [][2]string
		for _, addr := range slices.Sorted(maps.Keys(objs)) {
			if dst, ok := movedAddress(addr, mv, from, to); ok {
				pairs = append(pairs, [2]string{addr, dst})
			}
		}
		for _, pr := range pairs {
			obj := objs[pr[0]]
			bad := func(detail string) {
				rng := mv.DeclRange
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot move " + pr[0],
					Detail: detail, Subject: &rng})
			}
			if objs[pr[1]] != nil {
				bad(fmt.Sprintf("%s is already in the state, so %s cannot move there. Remove the moved block, or `sparkform state rm` one of them.", pr[1], pr[0]))
				continue
			}
			if err := state.CheckMove(&state.Resource{Address: pr[0]}, pr[1]); err != nil {
				bad(strings.TrimPrefix(err.Error(), state.ErrInvalid.Error()+": "))
				continue
			}
			moved := *obj
			moved.Addr, moved.Resource = pr[1], resourceOfInstance(pr[1])
			delete(objs, pr[0])
			objs[pr[1]] = &moved
			p.Moves = append(p.Moves, plans.Move{From: pr[0], To: pr[1]})
		}
	}
	return diags
}

// applyMoves carries out p's moves on the state, before anything else of
// the apply. A move already done (the object at To, none at From: an
// earlier apply of this plan stopped after it) is skipped.
func (e *Engine) applyMoves(p *plans.Plan) hcl.Diagnostics {
	if len(p.Moves) == 0 {
		return nil
	}
	recs, err := e.store.Resources()
	if err != nil {
		return hcl.Diagnostics{tfdiags.FromError("Cannot read state", err, "")}
	}
	have := make(map[string]bool, len(recs))
	for _, r := range recs {
		have[r.Address] = true
	}
	var diags hcl.Diagnostics
	for _, mv := range p.Moves {
		if !have[mv.From] && have[mv.To] {
			continue
		}
		if err := e.store.MoveResource(mv.From, mv.To); err != nil {
			diags = append(diags, tfdiags.FromError("Cannot move "+mv.From+" to "+mv.To, err,
				"\n\nNothing of this plan was carried out after it. Run plan again."))
			return diags
		}
		have[mv.From], have[mv.To] = false, true
	}
	return diags
}

func targetString(t addrs.Target) string {
	switch {
	case t.Resource == nil:
		return t.Module
	case t.Key != nil:
		return t.Resource.Instance(t.Key).String()
	}
	return t.Resource.String()
}

// movedAddress is where the object at addr goes under mv, if mv moves it.
func movedAddress(addr string, mv *config.Moved, from, to string) (string, bool) {
	switch {
	case mv.From.Resource == nil: // a module: everything in it
		if !addrs.WithinModule(addr, from) {
			return "", false
		}
		return to + addr[len(from):], true
	case mv.From.Key != nil:
		return to, addr == from
	}
	// A deposed object stays where it is (it is destroyed, not moved); a
	// '#' elsewhere is part of a key, and moves with it.
	if strings.HasSuffix(addr, deposedSuffix) {
		return "", false
	}
	ri, d := addrs.ParseResourceInstance(addr)
	if d.HasErrors() || ri.Resource.String() != from {
		return "", false
	}
	return mv.To.Resource.Instance(ri.Key).String(), true
}
