package main

import (
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// uiHooks reports refresh and apply events through the operation's view
// (its display and refresh reports) and keeps the refresh cost for the
// plan's summary.
type uiHooks struct {
	d       opDisplay
	refresh refreshView
	escape  bool // addresses are made safe for a terminal

	mu           sync.Mutex
	refreshCalls int
	roundTrips   int
}

var (
	_ engine.Hooks                = (*uiHooks)(nil)
	_ engine.ObjectHooks          = (*uiHooks)(nil)
	_ engine.InstanceRefreshHooks = (*uiHooks)(nil)
)

// instanceRefreshView is a refreshView that also reports each instance
// of a batched read (the -json stream's refresh_start and
// refresh_complete, as Terraform's).
type instanceRefreshView interface {
	instanceRefreshStart(addr string, prior cty.Value, sensitive []string)
	instanceRefreshDone(addr string, obj cty.Value, sensitive []string)
}

func (h *uiHooks) PreRefreshInstance(addr string, prior cty.Value, sensitive []string) {
	if r, ok := h.refresh.(instanceRefreshView); ok {
		r.instanceRefreshStart(addr, prior, sensitive)
	}
}

func (h *uiHooks) PostRefreshInstance(addr string, obj cty.Value, sensitive []string) {
	if r, ok := h.refresh.(instanceRefreshView); ok {
		r.instanceRefreshDone(addr, obj, sensitive)
	}
}

// newUIHooks reports through v.
func newUIHooks(v operationView) *uiHooks {
	return &uiHooks{d: v.display(), refresh: v.refresh(), escape: v.escape()}
}

func (h *uiHooks) PreRefresh(provider, node string, n int) { h.refresh.refreshStart(provider, node, n) }

func (h *uiHooks) PostRefresh(provider, node string, n int, took time.Duration, roundTrips int, err error) {
	h.mu.Lock()
	h.refreshCalls++
	h.roundTrips += roundTrips
	h.mu.Unlock()
	h.refresh.refreshDone(provider, node, n, took, roundTrips, err)
}

// cost is what the refresh took so far.
func (h *uiHooks) cost() refreshCost {
	h.mu.Lock()
	defer h.mu.Unlock()
	return refreshCost{calls: h.refreshCalls, roundTrips: h.roundTrips}
}

func orLocal(node string) string {
	if node == "" {
		return "local node"
	}
	return node
}

var presentVerb = map[plans.Action]string{
	plans.Create: "Creating", plans.Update: "Modifying", plans.Delete: "Destroying",
	plans.DeleteThenCreate: "Creating", plans.CreateThenDelete: "Creating",
}

var doneVerb = map[plans.Action]string{
	plans.Create: "Creation", plans.Update: "Modifications", plans.Delete: "Destruction",
	plans.DeleteThenCreate: "Creation", plans.CreateThenDelete: "Creation",
}

// The display prints addresses for people (escaped, termSafe); the JSON
// stream takes them as they are (encoding/json escapes them).
func (h *uiHooks) addr(addr string) string {
	if !h.escape {
		return addr
	}
	return termSafe(addr)
}

func (h *uiHooks) PreApply(addr string, a plans.Action) { h.d.start(h.addr(addr), a) }
func (h *uiHooks) Progress(addr string, p sdk.Progress) { h.d.progress(h.addr(addr), p) }
func (h *uiHooks) PostApply(addr string, a plans.Action, took time.Duration, err error) {
	h.d.finish(h.addr(addr), a, took, err)
}

// AppliedObject hands what an apply left to a display that names it (the
// -json stream's id_key and id_value).
func (h *uiHooks) AppliedObject(addr string, obj cty.Value) {
	if d, ok := h.d.(interface{ appliedObject(string, cty.Value) }); ok {
		d.appliedObject(h.addr(addr), obj)
	}
}

func (h *uiHooks) Note(msg string) {}
