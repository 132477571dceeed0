// Package tfdiags lets diagnostics carry Go errors, as OpenTofu's tfdiags
// does: sparkform's one diagnostics type stays hcl.Diagnostics (what
// config, engine and CLI already pass around, with file:line:col), and a
// diagnostic made from an error keeps the error itself in
// hcl.Diagnostic.Extra. The message is the error's, so nothing changes on
// screen; but errors.Is and errors.As still find state.ErrLockLost, a
// node's *HostKeyError or context.Canceled at the CLI, through Err.
//
// Contract: FromError never drops the error (an Extra already there is
// kept and reachable through hcl.DiagnosticExtra); ErrorOf returns it; Err
// is nil without error diagnostics, has hcl.Diagnostics' message, and
// unwraps to every error the error diagnostics carry, in order.
package tfdiags
