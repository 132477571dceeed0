package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// uiHooks reports refresh and apply events through an opDisplay (plain
// lines, redrawn terminal lines, or the -json stream) and keeps the
// refresh cost for -json and SPARKFORM_LOG=debug.
type uiHooks struct {
	d     opDisplay
	json  *jsonView // -json: refresh events go to the stream
	debug bool

	mu           sync.Mutex
	refreshCalls int
	roundTrips   int
}

var _ engine.Hooks = (*uiHooks)(nil)

// newUIHooks picks the display: the stream for -json, redrawn lines on a
// terminal, plain throttled lines otherwise.
func (m *meta) newUIHooks(debug bool) *uiHooks {
	h := &uiHooks{debug: debug, json: m.jsonOut}
	switch {
	case m.jsonOut != nil:
		h.d = newJSONDisplay(m.jsonOut)
	case m.stdoutIsTerminal() && !m.plainProgress():
		f, _ := outputFile(m.stdout)
		h.d = newBarDisplay(m.stdout, int(f.Fd()))
	default:
		h.d = newPlainDisplay(m.stdout)
	}
	m.onClose(h.d.close)
	return h
}

func (h *uiHooks) PreRefresh(provider, node string, n int) {
	if h.json != nil {
		h.json.emit("info", "refresh_start", fmt.Sprintf("%s: Refreshing %d %s of provider %s...", orLocal(node), n, plural(n, "instance", "instances"), provider),
			map[string]any{"refresh": map[string]any{"provider": provider, "node": node, "instances": n}})
		return
	}
	h.d.line(fmt.Sprintf("%s: refreshing %d %s of provider %s...", termSafe(orLocal(node)), n, plural(n, "instance", "instances"), provider))
}

func (h *uiHooks) PostRefresh(provider, node string, n int, took time.Duration, roundTrips int, err error) {
	h.mu.Lock()
	h.refreshCalls++
	h.roundTrips += roundTrips
	h.mu.Unlock()
	if h.json != nil {
		level, msg := "info", fmt.Sprintf("%s: Refresh complete after %s", orLocal(node), took.Round(time.Millisecond))
		if err != nil {
			level, msg = "error", fmt.Sprintf("%s: Refresh errored after %s", orLocal(node), took.Round(time.Millisecond))
		}
		h.json.emit(level, "refresh_complete", msg, map[string]any{"refresh": map[string]any{"provider": provider, "node": node,
			"instances": n, "remote_round_trips": roundTrips, "elapsed_seconds": took.Seconds()}})
		return
	}
	if h.debug {
		h.d.line(fmt.Sprintf("[DEBUG] refresh %s on %s: %d instances, 1 ReadResources call, %d remote round trips, %s",
			provider, termSafe(orLocal(node)), n, roundTrips, took.Round(time.Millisecond)))
	}
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
	if h.json != nil {
		return addr
	}
	return termSafe(addr)
}

func (h *uiHooks) PreApply(addr string, a plans.Action) { h.d.start(h.addr(addr), a) }
func (h *uiHooks) Progress(addr string, p sdk.Progress) { h.d.progress(h.addr(addr), p) }
func (h *uiHooks) PostApply(addr string, a plans.Action, took time.Duration, err error) {
	h.d.finish(h.addr(addr), a, took, err)
}

func (h *uiHooks) Note(msg string) {}
