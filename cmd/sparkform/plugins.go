package main

import (
	"fmt"
	"os"
	"time"

	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/docker"
	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/hubstage"
	"github.com/sparkform/sparkform/providers/kmod"
	"github.com/sparkform/sparkform/providers/sdk"
)

// builtins are the providers this binary serves in plugin mode.
var builtins = map[string]func() sdk.Provider{
	"sparkform": builtin.New,
	"gitkit":    gitkit.New,
	"kmod":      kmod.New,
	"docker":    docker.New,
	"hubstage":  hubstage.New,
}

// servePlugin serves one built-in provider over the plugin protocol.
func servePlugin(name string) error {
	mk, ok := builtins[name]
	if !ok {
		return fmt.Errorf("no built-in provider %q (built-ins: %v)", name, builtinProviders())
	}
	go exitWithParent()
	sdk.Serve(mk())
	return nil
}

// exitWithParent ends a plugin whose sparkform process is gone (killed
// with -9, say): nobody can receive its results, and an orphan would keep
// an SSH connection and its memory for nothing.
func exitWithParent() {
	parent := os.Getppid()
	for range time.Tick(500 * time.Millisecond) {
		if os.Getppid() != parent {
			os.Exit(3)
		}
	}
}
