package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// viewType is how a command prints: for people, or as the
// machine-readable -json stream. It is parsed with the command's other
// arguments and decides its view, once.
type viewType int

const (
	viewHuman viewType = iota
	viewJSON
)

func viewTypeOf(asJSON bool) viewType {
	if asJSON {
		return viewJSON
	}
	return viewHuman
}

// operationView is the view of plan, apply and destroy for vt. A -json
// stream starts with its version message here.
func (m *meta) newOperationView(vt viewType) operationView {
	if vt == viewJSON {
		s := m.startJSON()
		v := &jsonOperation{jsonStreamView: jsonStreamView{s}, m: m}
		m.view = v
		return v
	}
	v := &humanOperation{humanView: humanView{m}}
	m.view = v
	return v
}

// newValidateView is the view of validate for vt.
func (m *meta) newValidateView(vt viewType) validateView {
	if vt == viewJSON {
		v := &jsonValidate{w: m.stdout}
		m.view = v
		return v
	}
	v := &humanValidate{humanView{m}}
	m.view = v
	return v
}

// checkApply refuses, before anything is loaded, the argument
// combinations apply and destroy cannot carry out.
func (f *planFlags) checkApply(cmd *cobra.Command, args []string, autoApprove bool) error {
	if !f.lock {
		return fmt.Errorf("-lock=false is for read-only use (plan); %s changes the nodes and always takes the state lock", cmd.Name())
	}
	if len(args) == 0 && !autoApprove && f.json {
		// Nobody reads a question in the stream: refuse before planning.
		return fmt.Errorf("%s -json needs -auto-approve (or a saved plan file): there is no one to ask for approval", cmd.Name())
	}
	return nil
}

// newStatusView is the view of status for vt.
func (m *meta) newStatusView(vt viewType) statusView {
	var v statusView = &humanStatus{humanView{m}}
	if vt == viewJSON {
		v = &jsonStatus{w: m.stdout}
	}
	m.view = v
	return v
}
