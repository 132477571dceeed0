package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// lostReply applies through the real provider, then for addr answers as
// the client does when the plugin dies or its link breaks before the
// reply: the prior value, an error and OutcomeUnknown. The node has the
// object; nobody told the engine.
type lostReply struct {
	sdk.Provider
	addr string
}

func (l lostReply) ApplyResourceChange(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	resp := l.Provider.ApplyResourceChange(ctx, req, progress)
	if req.Address != l.addr {
		return resp
	}
	return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, OutcomeUnknown: true,
		Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, `Provider "sftest" crashed`, "the plugin exited during ApplyResourceChange of %s", req.Address)}}
}

// TestOutcomeUnknownKeepsIntent (torture round 48, seed 67910187: a plugin
// killed mid-create left a gitkit checkout on the node that state did not
// know of): when a create's outcome is unknown, the engine keeps its
// journal intent, as a crash at that moment would, instead of storing the
// prior value (null) and clearing the intent. The next plan finds the
// object on the node and records it; nothing leaks.
func TestOutcomeUnknownKeepsIntent(t *testing.T) {
	for _, action := range []plans.Action{plans.Create, plans.Update} {
		t.Run(string(action), func(t *testing.T) {
			b := newBed(t)
			var vars []string
			if action == plans.Update {
				b.cfg("chain_a_d").converge()
				vars = []string{"value=v2"}
			}
			b.provs.provs["sftest"] = lostReply{Provider: b.provs.provs["sftest"], addr: thA}
			before := objectFiles(t, b.tp)
			r := b.cfg("chain_a_d", vars...)
			_, diags := r.applyE(context.Background(), r.plan(PlanOptions{}))
			if !strings.Contains(diagString(diags), "Outcome unknown for "+thA) {
				t.Errorf("diagnostics %s; want the outcome-unknown warning for %s", diagString(diags), thA)
			}
			if in := b.intents(); len(in) != 1 || in[0] != thA {
				t.Fatalf("journal intents %v after the lost reply; want [%s] kept", in, thA)
			}
			if objectFiles(t, b.tp) == before {
				t.Fatalf("the provider did not change the node for %s", thA)
			}
			// The next plan reads the node: the object is recorded, the
			// intent cleared, and a converging apply leaves a clean plan.
			b.provs.provs["sftest"] = b.provs.provs["sftest"].(lostReply).Provider
			p := r.plan(PlanOptions{})
			notes := strings.Join(p.Notes, "\n")
			if !strings.Contains(notes, thA+" was interrupted during "+string(action)) {
				t.Errorf("plan notes %q; want %s's interrupted %s refreshed from the node", notes, thA, action)
			}
			// The test provider finds an object by its id, which a create's
			// intent cannot know (gitkit, docker and kmod find theirs by
			// identity attributes from configuration): an update is found.
			if action == plans.Update && !strings.Contains(notes, thA+": found on the node after the interrupted") {
				t.Errorf("plan notes %q; want %s recovered from the node", notes, thA)
			}
			if in := b.intents(); len(in) != 0 {
				t.Errorf("journal intents %v after the recovering plan; want none", in)
			}
			r.apply(p)
			if got := b.attr(thA, "value"); got == "" {
				t.Errorf("%s not in state after the converging apply", thA)
			}
			if r.plan(PlanOptions{}).HasChanges() {
				t.Errorf("the plan after converging has changes")
			}
		})
	}
}
