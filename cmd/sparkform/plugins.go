package main

import (
	"fmt"

	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/command"
	"github.com/sparkform/sparkform/providers/docker"
	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/hubstage"
	"github.com/sparkform/sparkform/providers/kmod"
	"github.com/sparkform/sparkform/providers/sdk"
)

// builtins are the providers this binary serves in plugin mode.
var builtins = map[string]func() sdk.Provider{
	"sparkform":  builtin.New,
	"gitkit":     gitkit.New,
	"kmod":       kmod.New,
	"docker":     docker.New,
	"hubstage":   hubstage.New,
	command.Name: command.New,
}

// servePlugin serves one built-in provider over the plugin protocol.
func servePlugin(name string) error {
	mk, ok := builtins[name]
	if !ok {
		return fmt.Errorf("no built-in provider %q (built-ins: %v)", name, builtinProviders())
	}
	sdk.Serve(mk())
	return nil
}
