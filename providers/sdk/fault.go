package sdk

// faultPoint is called by the gRPC server after a provider's Apply has
// changed the node and before its reply is sent: the window in which a
// crash loses the reply (and with it the private data the engine would
// store). It does nothing in the shipped binary; a binary built with the
// sparkform_faultinject tag (see fault_inject.go) can pause there, so tests
// kill the CLI or the plugin at exactly that point.
var faultPoint = func(typeName, action, address string) {}

// Step marks a point inside a provider's Apply between two changes on the
// node (e.g. a destroy that removed a group and not yet the ancestors it
// made): the windows a kill at a random moment finds and a pause after the
// whole Apply does not. It does nothing in the shipped binary; the
// fault-injection build pauses there when SPARKFORM_FAULT_PAUSE is
// "STEP:ADDRESS", so tests kill the CLI, the plugin or the node's link at
// exactly that point.
func Step(address, step string) { faultPoint("", step, address) }

// applyAction names an apply request's action as the fault hook matches
// it: "create", "update" or "delete".
func applyAction(priorNull, plannedNull bool) string {
	switch {
	case plannedNull:
		return "delete"
	case priorNull:
		return "create"
	}
	return "update"
}
