// This file holds the apply journal: the intent written before each
// provider call (and cleared with its result), and how a later plan
// recovers the instances an interrupted apply left uncertain.

package engine

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/state"
)

// journalPID is this process's id, recorded in each intent: taken once, not a
// getpid call per instance.
var journalPID = os.Getpid()

// newIntent is the journal intent apply writes before a provider call on in.
func newIntent(in *stateObject, action string) (*state.Intent, error) {
	rec, err := in.record()
	if err != nil {
		return nil, err
	}
	return &state.Intent{Address: in.Addr, Action: action, Resource: rec, Started: time.Now().UTC(), PID: journalPID}, nil
}

// intentValue is the value the journal intent of a create or update
// records: the reviewed value, with what it left unknown taken from the
// configuration evaluated now where that is known. Recovery refreshes an
// interrupted create from it, and a provider finds the object by its
// identity attributes, which come from configuration. An unknown
// attribute that configuration does not know either is null here, as the
// journal stores it anyway: the object is rebuilt once, not again by
// encodeStateValue.
func intentValue(reviewed, cfg cty.Value) cty.Value {
	if reviewed == cty.NilVal || cfg == cty.NilVal || reviewed.IsWhollyKnown() {
		return reviewed
	}
	return fillUnknowns(reviewed, cfg)
}

// fillUnknowns replaces the unknowns of v with from's value at the same
// place when that is wholly known and not null, else with null, walking
// objects (unknowns inside other values stay).
func fillUnknowns(v, from cty.Value) cty.Value {
	if from.IsMarked() {
		from, _ = from.Unmark()
	}
	switch {
	case !v.IsKnown():
		if !from.IsNull() && from.IsWhollyKnown() && from.Type().Equals(v.Type()) {
			return from
		}
		return cty.NullVal(v.Type())
	case v.IsMarked() || v.IsNull() || !v.Type().IsObjectType() || v.IsWhollyKnown() ||
		from.IsNull() || !from.IsKnown() || !from.Type().IsObjectType():
		return v
	}
	fty := from.Type()
	attrs := make(map[string]cty.Value, len(v.Type().AttributeTypes()))
	for name := range v.Type().AttributeTypes() {
		av := v.GetAttr(name)
		if fty.HasAttribute(name) {
			av = fillUnknowns(av, from.GetAttr(name))
		}
		attrs[name] = av
	}
	return cty.ObjectVal(attrs)
}

// recoverIntents turns journal intents left by an interrupted apply into
// instances to refresh. An interrupted create has no state record, so one
// is made from the intent (tainted: what exists is not known good); the
// object of an interrupted delete or replace is tainted too.
func (e *Engine) recoverIntents(intents []*state.Intent, insts map[string]*stateObject, p *plans.Plan) map[string]*state.Intent {
	out := map[string]*state.Intent{}
	for _, in := range intents {
		out[in.Address] = in
		msg := fmt.Sprintf("%s was interrupted during %s (pid %d, started %s); refreshing it from the node.",
			in.Address, in.Action, in.PID, in.Started.Format(time.RFC3339))
		p.Notes = append(p.Notes, msg)
		e.hooks.Note(msg)
		if inst, ok := insts[in.Address]; ok {
			// A delete cut short may still be landing on the node (a
			// container whose stop signal went out exits after the next
			// apply has read it running): what refresh finds there is not
			// known good, so it is replaced, as an interrupted create's
			// object is (unless its type resumes: resumeCreates).
			if a := plans.Action(in.Action); (a == plans.Delete || a.IsReplace()) && !inst.Tainted {
				inst.Tainted, inst.interrupted = true, true
			}
			continue
		}
		if in.Resource == nil {
			continue
		}
		inst, err := stateObjectFromRecord(in.Resource)
		if err != nil {
			continue
		}
		inst.Tainted, inst.interrupted = true, true
		insts[in.Address] = inst
	}
	return out
}

// resumeCreates untaints the objects of interrupted creates, deletes and
// replaces whose type resumes creates (sdk.ResourceSchema.ResumesCreate),
// which recoverIntents tainted: the plan then
// converges what the node has in place (a model snapshot fetched half way
// keeps its bytes) instead of destroying it and starting again. A type
// whose schema cannot be had stays tainted.
func (e *Engine) resumeCreates(ctx context.Context, objs map[string]*stateObject) {
	for _, o := range objs {
		if !o.interrupted || !o.Tainted {
			continue
		}
		if s, err := e.schemaFor(ctx, o.Type); err == nil && s.ResumesCreate {
			o.Tainted = false
		}
	}
}

// settleIntents stores what refresh found for each interrupted instance
// and clears its intent, so state is true to the node again.
func (e *Engine) settleIntents(recovered map[string]*state.Intent, refreshed map[string]*stateObject, p *plans.Plan) hcl.Diagnostics {
	var diags hcl.Diagnostics
	addrsSorted := make([]string, 0, len(recovered))
	for a := range recovered {
		addrsSorted = append(addrsSorted, a)
	}
	sort.Strings(addrsSorted)
	for _, addr := range addrsSorted {
		var msg string
		if in, ok := refreshed[addr]; ok {
			if err := e.putObject(in); err != nil {
				diags = append(diags, tfdiags.FromError("Cannot store recovered instance "+addr, err, ""))
				continue
			}
			msg = fmt.Sprintf("%s: found on the node after the interrupted %s; state now records it", addr, recovered[addr].Action)
			if in.Tainted {
				msg += " as tainted (it will be replaced)"
			}
		} else {
			if err := e.store.DeleteResource(addr); err != nil && !isNotFound(err) {
				diags = append(diags, tfdiags.FromError("Cannot update state for "+addr, err, ""))
				continue
			}
			msg = fmt.Sprintf("%s: nothing found on the node after the interrupted %s; state has no record of it", addr, recovered[addr].Action)
		}
		if err := e.store.DeleteIntent(addr); err != nil {
			diags = append(diags, tfdiags.FromError("Cannot clear the journal for "+addr, err, ""))
			continue
		}
		p.Notes = append(p.Notes, msg)
		e.hooks.Note(msg)
	}
	return diags
}

// keptIntent says why addr's journal intent stays after a provider call
// whose outcome is unknown (the plugin died or its link broke mid-call):
// the node may have changed, so state is left as a crash at that moment
// would leave it, and the next plan recovers the instance from the node.
func keptIntent(addr string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Outcome unknown for " + addr,
		Detail: "the provider call for " + addr + " failed after it may have reached the node, so what is there now is unknown. " +
			"The journal keeps the operation: the next plan or apply reads the node and records what it finds."}
}
