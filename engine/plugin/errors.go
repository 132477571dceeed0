package plugin

import "errors"

// Sentinel errors; match with errors.Is.
var (
	// ErrUnknownProvider: no built-in and no plugin executable by that name.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrClosed: the host was closed; it starts nothing more.
	ErrClosed = errors.New("plugin host is closed")
	// ErrPluginStart: the plugin executable was found but did not start.
	ErrPluginStart = errors.New("provider plugin failed to start")
)
