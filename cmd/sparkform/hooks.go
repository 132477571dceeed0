package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/sparkform/sparkform/engine"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// uiHooks prints apply and refresh progress, one line per event, and keeps
// the refresh cost for -json and SPARKFORM_LOG=debug.
type uiHooks struct {
	w     io.Writer
	quiet bool // -json: no progress lines
	debug bool

	mu           sync.Mutex
	lastProgress map[string]time.Time
	lastMessage  map[string]string
	refreshCalls int
	roundTrips   int
}

var _ engine.Hooks = (*uiHooks)(nil)

func newUIHooks(w io.Writer, quiet, debug bool) *uiHooks {
	return &uiHooks{w: w, quiet: quiet, debug: debug, lastProgress: map[string]time.Time{}, lastMessage: map[string]string{}}
}

func (h *uiHooks) printf(format string, args ...any) {
	if h.quiet {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(h.w, format, args...)
}

func (h *uiHooks) PreRefresh(provider, node string, n int) {
	h.printf("%s: refreshing %d %s of provider %s...\n", orLocal(node), n, plural(n, "instance", "instances"), provider)
}

func (h *uiHooks) PostRefresh(provider, node string, n int, took time.Duration, roundTrips int, err error) {
	h.mu.Lock()
	h.refreshCalls++
	h.roundTrips += roundTrips
	h.mu.Unlock()
	if h.debug {
		h.printf("[DEBUG] refresh %s on %s: %d instances, 1 ReadResources call, %d remote round trips, %s\n",
			provider, orLocal(node), n, roundTrips, took.Round(time.Millisecond))
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

func (h *uiHooks) PreApply(addr string, a plans.Action) {
	h.printf("%s: %s...\n", addr, presentVerb[a])
}

// Progress prints a provider's progress line; repeats of the same message
// are throttled to one a second so a long pull stays readable.
func (h *uiHooks) Progress(addr string, p sdk.Progress) {
	h.mu.Lock()
	now := time.Now()
	if h.lastMessage[addr] == p.Message && now.Sub(h.lastProgress[addr]) < time.Second {
		h.mu.Unlock()
		return
	}
	h.lastMessage[addr], h.lastProgress[addr] = p.Message, now
	h.mu.Unlock()
	var b strings.Builder
	b.WriteString(addr + ": " + p.Message)
	if p.Total > 0 {
		fmt.Fprintf(&b, " (%d/%d)", p.Current, p.Total)
	} else if p.Current > 0 {
		fmt.Fprintf(&b, " (%d)", p.Current)
	}
	if p.Elapsed > 0 {
		fmt.Fprintf(&b, " [%s elapsed]", p.Elapsed.Round(time.Second))
	}
	h.printf("%s\n", b.String())
}

func (h *uiHooks) PostApply(addr string, a plans.Action, took time.Duration, err error) {
	if err != nil {
		h.printf("%s: %s failed after %s\n", addr, presentVerb[a], took.Round(100*time.Millisecond))
		return
	}
	h.printf("%s: %s complete after %s\n", addr, doneVerb[a], took.Round(100*time.Millisecond))
}

func (h *uiHooks) Note(msg string) {}
