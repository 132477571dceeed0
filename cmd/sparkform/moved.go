package main

import (
	"fmt"
	"strings"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/state"
)

// applyMoved carries out the configuration's moved blocks on the state
// before planning, as `state mv` would: every record at a block's from
// address (an instance, every instance of a resource, or everything in a
// module call or instance) is renamed to the matching to address, so the
// plan compares the moved objects with their new blocks and nothing is
// destroyed and created again. A block whose from address has nothing in
// state (the move was done earlier) does nothing; one whose to address is
// taken is an error naming both.
func (m *meta) applyMoved(st state.Store, moved []*config.Moved, quiet bool) error {
	if len(moved) == 0 {
		return nil
	}
	recs, err := st.Resources()
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, r := range recs {
		have[r.Address] = true
	}
	for _, mv := range moved {
		from, to := targetString(mv.From), targetString(mv.To)
		var pairs [][2]string
		for _, r := range recs {
			if !have[r.Address] {
				continue
			}
			if dst, ok := movedAddress(r.Address, mv, from, to); ok {
				pairs = append(pairs, [2]string{r.Address, dst})
			}
		}
		for _, p := range pairs {
			if have[p[1]] {
				return fmt.Errorf("moved block at %s:%d: cannot move %s to %s: %s is already in the state; remove the moved block, or `sparkform state rm` one of them",
					mv.DeclRange.Filename, mv.DeclRange.Start.Line, p[0], p[1], p[1])
			}
			if err := st.MoveResource(p[0], p[1]); err != nil {
				return fmt.Errorf("moved block at %s:%d: %w", mv.DeclRange.Filename, mv.DeclRange.Start.Line, err)
			}
			delete(have, p[0])
			have[p[1]] = true
			if !quiet {
				fmt.Fprintf(m.stdout, "  # %s has moved to %s\n", termSafe(p[0]), termSafe(p[1]))
			}
		}
	}
	return nil
}

// deposedSuffix ends the address of an object a create-before-destroy
// replacement set aside (the engine's own constant).
const deposedSuffix = "#deposed"

func targetString(t addrs.Target) string {
	switch {
	case t.Resource == nil:
		return t.Module
	case t.Key != nil:
		return t.Resource.Instance(t.Key).String()
	}
	return t.Resource.String()
}

// movedAddress is where the record at addr goes under mv, if mv moves it.
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
