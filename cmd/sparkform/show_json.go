package main

import (
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/internal/command/jsonconfig"
	"github.com/sparkform/sparkform/internal/command/jsonplan"
	"github.com/sparkform/sparkform/internal/command/jsonstate"
	"github.com/sparkform/sparkform/state"
)

// writePlanJSON writes the plan document of p (show -json PLANFILE). The
// configuration is the working directory's when it is the one the plan
// was made from (its digest matches); otherwise the document has none,
// and every variable's value is left out, since which are sensitive is
// not known.
func (m *meta) writePlanJSON(p *plans.Plan) error {
	opts := jsonplan.Options{Version: version}
	if mod, ds := config.LoadDir(m.Dir()); mod != nil && !ds.HasErrors() && configDigest(mod) == p.ConfigDigest {
		opts.Config = jsonconfig.Marshal(mod)
		opts.SensitiveVariable = func(n string) bool {
			v := mod.Variables[n]
			return v == nil || v.Sensitive
		}
	}
	doc, err := jsonplan.Marshal(p, opts)
	if err != nil {
		return err
	}
	return writeJSONDocument(m.stdout, doc)
}

// writeStateJSON writes the state document (show -json); st nil: no
// state yet.
func (m *meta) writeStateJSON(st state.Store) error {
	if st == nil {
		return writeJSONDocument(m.stdout, jsonstate.Empty(version))
	}
	recs, err := st.Resources()
	if err != nil {
		return err
	}
	outs, err := st.Outputs()
	if err != nil {
		return err
	}
	meta, err := st.Meta()
	if err != nil {
		return err
	}
	doc, err := jsonstate.FromState(meta, recs, outs, version)
	if err != nil {
		return err
	}
	return writeJSONDocument(m.stdout, doc)
}
