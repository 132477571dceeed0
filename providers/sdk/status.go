package sdk

import (
	"context"
	"errors"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// StatusReader is implemented by a Provider that reports live facts about
// its instances (`sparkform status`). It is optional: the gRPC client
// implements it for every plugin, and a plugin that predates it answers
// each item Unavailable.
//
// Facts are never part of a resource's value: they change all the time
// (uptime, memory used) and would otherwise show as drift in every plan.
type StatusReader interface {
	ReadStatus(ctx context.Context, req StatusRequest) StatusResponse
}

// LogStreamer is implemented by a Provider whose types serve output
// (ResourceSchema.Logs). Optional, as StatusReader is.
type LogStreamer interface {
	// Logs calls emit for each line of req's instance, in order: the tail
	// that is there, then with Follow every new line until ctx ends
	// (which is not an error). An error from emit ends the stream.
	Logs(ctx context.Context, req LogsRequest, emit func(LogLine) error) Diagnostics
}

// StatusResource is implemented by a Resource that has live facts; Router
// serves its ReadStatus through it. A Resource without it is Unavailable.
type StatusResource interface {
	// Status reports on every item on node, ideally in one round trip,
	// one result per item in order, and the round trips it made.
	Status(ctx context.Context, node Node, items []StatusItem) ([]StatusResult, int, Diagnostics)
}

// LogsResource is implemented by a Resource that serves Logs; its schema
// sets Logs.
type LogsResource interface {
	Logs(ctx context.Context, req LogsRequest, emit func(LogLine) error) Diagnostics
}

// StatusRequest is a batch of instances on one node.
type StatusRequest struct {
	Node  Node
	Items []StatusItem
}

// StatusItem is one instance to report on.
type StatusItem struct {
	TypeName string
	Address  string
	// State is what state holds: what the last apply made, the wanted
	// values.
	State cty.Value
	// Observed is what a refresh just read (null: the object is gone);
	// meaningful only when ObservedKnown.
	Observed      cty.Value
	ObservedKnown bool
	Private       []byte
}

// StatusResponse answers a StatusRequest.
type StatusResponse struct {
	Results []StatusResult
	// Diagnostics that concern the whole batch (e.g. node unreachable).
	Diagnostics Diagnostics
	RoundTrips  int
}

// Health is an instance's health in one word.
type Health string

// Healths. An empty Health is unknown (no facts could be read).
const (
	HealthOK       Health = "ok"
	HealthDegraded Health = "degraded" // it runs, but not as it should (unhealthy, a probe fails, restarting)
	HealthDown     Health = "down"     // it does not run or is not there
)

// StatusResult is what a provider knows now about one instance.
type StatusResult struct {
	Health Health
	// Summary is one short phrase ("running 3h12m", "loaded", "at 878e0ee").
	Summary string
	// Facts are name/value pairs, in the order to show them.
	Facts       []Fact
	Diagnostics Diagnostics
	// Unavailable says the type has no status (or the plugin predates
	// ReadStatus): the other fields are empty.
	Unavailable bool
}

// Fact is one live fact about an instance.
type Fact struct {
	Name, Value string
}

// LogsRequest asks for the output of one instance.
type LogsRequest struct {
	TypeName string
	Address  string
	Node     Node
	State    cty.Value
	Private  []byte
	// Follow keeps the stream open for new lines until ctx ends.
	Follow bool
	// Tail is how many of the last lines to send first; negative: all.
	Tail int
	// Since, when not zero, skips lines written before it.
	Since time.Time
}

// LogLine is one line of an instance's output.
type LogLine struct {
	// Stream is "stdout" or "stderr".
	Stream string
	// Text is the line without its line end.
	Text string
	// Time is when it was written (zero: unknown).
	Time time.Time
}

// ErrStatusUnavailable is what a status without facts is: the provider
// (or an older plugin) has none for the type.
var ErrStatusUnavailable = errors.New("status not available")

// ErrNoLogs says an instance's type serves no logs.
var ErrNoLogs = errors.New("no logs")

// Unavailable returns n results that say the type has no status.
func Unavailable(n int) []StatusResult {
	out := make([]StatusResult, n)
	for i := range out {
		out[i].Unavailable = true
	}
	return out
}

// ReadStatus implements StatusReader: each type's share of the batch goes
// to its StatusResource in one call; a type without one is Unavailable.
func (r *Router) ReadStatus(ctx context.Context, req StatusRequest) StatusResponse {
	ctx, done := r.track(ctx)
	defer done()
	resp := StatusResponse{Results: make([]StatusResult, len(req.Items))}
	byType := map[string][]int{}
	var order []string
	for i, it := range req.Items {
		if _, ok := byType[it.TypeName]; !ok {
			order = append(order, it.TypeName)
		}
		byType[it.TypeName] = append(byType[it.TypeName], i)
	}
	for _, typeName := range order {
		idx := byType[typeName]
		res, diags := r.lookup(typeName)
		if diags.HasErrors() {
			resp.Diagnostics = append(resp.Diagnostics, diags...)
			continue
		}
		sr, ok := res.(StatusResource)
		if !ok {
			for _, i := range idx {
				resp.Results[i].Unavailable = true
			}
			continue
		}
		items := make([]StatusItem, len(idx))
		for j, i := range idx {
			items[j] = req.Items[i]
		}
		results, trips, diags := sr.Status(ctx, req.Node, items)
		resp.RoundTrips += trips
		resp.Diagnostics = append(resp.Diagnostics, diags...)
		if len(results) != len(items) {
			if !diags.HasErrors() {
				resp.Diagnostics = append(resp.Diagnostics, Errorf(nil, "Provider bug",
					"%s returned %d status results for %d instances", typeName, len(results), len(items)))
			}
			continue
		}
		for j := range results {
			resp.Results[idx[j]] = results[j]
		}
	}
	return resp
}

// Logs implements LogStreamer through the type's LogsResource.
func (r *Router) Logs(ctx context.Context, req LogsRequest, emit func(LogLine) error) Diagnostics {
	res, diags := r.lookup(req.TypeName)
	if diags.HasErrors() {
		return diags
	}
	lr, ok := res.(LogsResource)
	if !ok {
		return Diagnostics{Errorf(nil, "No logs", "%s is a %s, which has no logs (%v)", req.Address, req.TypeName, ErrNoLogs)}
	}
	ctx, done := r.track(ctx)
	defer done()
	return lr.Logs(ctx, req, emit)
}
