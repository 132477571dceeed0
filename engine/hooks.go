// This file holds Hooks, the progress events the engine reports while it
// refreshes and applies (the CLI renders them).

package engine

import (
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// ObjectHooks may be implemented by Hooks as well: AppliedObject is called
// with the object a successful provider call left (null after a delete),
// just before its PostApply, so a view can name it (Terraform's id_key
// and id_value). The value is as the provider returned it: sensitive
// attributes are not marked (the plan's change lists them).
type ObjectHooks interface {
	AppliedObject(addr string, obj cty.Value)
}

// InstanceRefreshHooks may be implemented by Hooks as well: it hears of
// each instance of a batched read (between PreRefresh and PostRefresh),
// before the read with its prior object, and after a read that found it
// with what was read (cty.NilVal: it is gone). An instance the read could
// not read has no PostRefreshInstance. sensitive are the object's
// sensitive attributes (the values are not marked).
type InstanceRefreshHooks interface {
	PreRefreshInstance(addr string, prior cty.Value, sensitive []string)
	PostRefreshInstance(addr string, obj cty.Value, sensitive []string)
}

// Hooks receive progress events; the CLI renders them. Methods may be
// called concurrently.
type Hooks interface {
	// PreRefresh is called before one batched read of n instances.
	PreRefresh(provider, node string, n int)
	// PostRefresh is called after it, with its cost.
	PostRefresh(provider, node string, n int, took time.Duration, roundTrips int, err error)
	PreApply(addr string, action plans.Action)
	Progress(addr string, p sdk.Progress)
	PostApply(addr string, action plans.Action, took time.Duration, err error)
	// Note reports something the user should know (interrupted operations,
	// drift recovered from the journal).
	Note(msg string)
}

// NoHooks ignores every event.
type NoHooks struct{}

var _ Hooks = NoHooks{}

func (NoHooks) PreRefresh(string, string, int)                             {}
func (NoHooks) PostRefresh(string, string, int, time.Duration, int, error) {}
func (NoHooks) PreApply(string, plans.Action)                              {}
func (NoHooks) Progress(string, sdk.Progress)                              {}
func (NoHooks) PostApply(string, plans.Action, time.Duration, error)       {}
func (NoHooks) Note(string)                                                {}
