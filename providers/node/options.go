package node

import "github.com/sparkform/sparkform/providers/sdk"

// Options are where a connection's lines go: the ones for the user (a
// connection being retried) and the debug log. A Pool gives its options to
// every connection it dials (NewPoolWith); DialSSHWith takes them for one
// connection. The zero value: notices through sdk.Notice (a plugin's
// stderr line the host shows), no debug log.
type Options struct {
	// Notify receives the lines a dial writes for the user. Nil:
	// sdk.Notice.
	Notify func(msg string)
	// Debug receives debug log lines (hclog style: a message, then
	// key/value pairs): one per SSH handshake and one per command run on a
	// node ("remote command": node, argv, env names, become, how long it
	// took, its exit status; values of Cmd.Env are never logged, they may
	// be secrets, and a long word, a script, is shortened). Nil: nothing
	// is logged, and no command's line is built (a no-op plan runs
	// hundreds of commands).
	Debug func(msg string, args ...any)
}

func (o Options) notify(msg string) {
	if o.Notify != nil {
		o.Notify(msg)
		return
	}
	sdk.Notice(msg)
}

func (o Options) debug(msg string, args ...any) {
	if o.Debug != nil {
		o.Debug(msg, args...)
	}
}
