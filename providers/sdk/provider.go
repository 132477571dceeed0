package sdk

import (
	"context"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// Provider is the provider protocol as a Go interface. The engine holds a
// Provider for each plugin it started (the gRPC client adapter implements
// it); a provider implements it (usually through Router) and hands it to
// Serve.
//
// Every method may be called concurrently.
type Provider interface {
	// GetSchema returns the resource types the provider serves.
	GetSchema(ctx context.Context) (*Schema, Diagnostics)

	// ValidateResourceConfig checks a config value (unknowns allowed) with
	// no access to any node.
	ValidateResourceConfig(ctx context.Context, req ValidateRequest) Diagnostics

	// ReadResources observes the real state of many instances on one node
	// in one call: the engine batches every instance of this provider on a
	// node into a single request. Results are in request order.
	ReadResources(ctx context.Context, req ReadRequest) ReadResponse

	// PlanResourceChange proposes the value apply will produce (unknown
	// where only apply can know) and which paths force replacement. It
	// validates Config first, as ValidateResourceConfig would (Router
	// does this): the engine makes no separate validation call per
	// instance.
	PlanResourceChange(ctx context.Context, req PlanRequest) PlanResponse

	// ApplyResourceChange makes the node match Planned (a null Planned is
	// a delete), reporting progress as it goes. It must return the state
	// that is really there, even on failure, so state stays true.
	ApplyResourceChange(ctx context.Context, req ApplyRequest, progress func(Progress)) ApplyResponse

	// ImportResource reads an existing object by its provider-specific id.
	ImportResource(ctx context.Context, req ImportRequest) ImportResponse

	// Stop asks in-flight work to stop as soon as it safely can.
	Stop(ctx context.Context) error
}

// BatchValidator is implemented by a Provider that checks many configs in
// one call (the gRPC client does: one RPC, each distinct value sent
// once). The engine's validation uses it when it is there. The result has
// one Diagnostics per request, in order.
type BatchValidator interface {
	ValidateResourceConfigs(ctx context.Context, reqs []ValidateRequest) []Diagnostics
}

// ValidateRequest asks whether Config is acceptable for TypeName.
type ValidateRequest struct {
	TypeName string
	Config   cty.Value
}

// ReadRequest is a batch of instances on one node.
type ReadRequest struct {
	Node      Node
	Resources []ReadItem
}

// ReadItem is one instance to observe.
type ReadItem struct {
	TypeName string
	// Address is the instance address, for messages only.
	Address string
	// Prior is the value last stored in state.
	Prior cty.Value
	// PriorStored, when set, is Prior as the state stores it: a client
	// that speaks the wire protocol sends those bytes instead of encoding
	// Prior again.
	PriorStored Stored
	Private     []byte
}

// Stored is a value in the state's compact form: Type is the value's own
// type as cty JSON (ctyjson.MarshalType) and Data the value encoded as cty
// msgpack with that type. A request carries it beside the value it was
// decoded from, and only then: a Stored that does not encode that value
// exactly would send the provider another one.
type Stored struct {
	Type, Data []byte
}

// ReadResponse answers a ReadRequest.
type ReadResponse struct {
	Results []ReadResult
	// Diagnostics that concern the whole batch (e.g. node unreachable).
	Diagnostics Diagnostics
	// RoundTrips is how many remote round trips the provider made for
	// this batch; the engine reports it (refresh cost must not grow with N).
	RoundTrips int
}

// ReadResult is the observed state of one instance; a null NewState means
// the object is gone.
type ReadResult struct {
	NewState    cty.Value
	Private     []byte
	Diagnostics Diagnostics
	// Unchanged, set by a client that was told so, says NewState is the
	// item's Prior as it was sent: the caller may keep what it had.
	Unchanged bool
}

// PlanRequest asks for the planned new value of one instance.
type PlanRequest struct {
	TypeName string
	Address  string
	Node     Node
	// Prior is the refreshed state (null when creating).
	Prior cty.Value
	// PriorStored, when set, is Prior as the state stores it (see
	// ReadItem.PriorStored).
	PriorStored Stored
	// Config is the evaluated configuration (may hold unknowns).
	Config cty.Value
	// Proposed is Config with Computed attributes carried over from Prior
	// (or unknown when creating), as Terraform proposes it. The engine
	// leaves it cty.NilVal, which means ProposedNew(schema, Prior,
	// Config): the gRPC adapters then send no third value, and the plugin
	// side (GRPCServer, Router) fills it in before a Resource sees it.
	Proposed     cty.Value
	PriorPrivate []byte
	// Replaces is, when this create replaces an object sparkform manages
	// at the same address, that object's value (null otherwise). The old
	// one is deleted first (or after, for create_before_destroy), so
	// "already exists" checks must not count what it occupies.
	Replaces cty.Value
	// Offline (-refresh=false) asks for a plan from Prior and Config
	// alone: the provider reaches no node. Otherwise a create may read
	// what it would displace (a loaded module, a folder, a container of
	// the same name) and say so.
	Offline bool
	// Reviewed is set only when the instance is planned again at apply
	// (PlanAndApply): the planned value the user reviewed. A provider
	// whose plan shows what it observed on the node (free memory, free
	// space) may keep the reviewed observation while its verdict still
	// holds, so that a figure that moved a little is not "Plan changed
	// since it was made". cty.NilVal otherwise. The gRPC adapters carry it
	// in the replan's apply request, never in a plan call.
	Reviewed cty.Value
}

// PlanResponse answers a PlanRequest.
type PlanResponse struct {
	Planned         cty.Value
	RequiresReplace []cty.Path
	PlannedPrivate  []byte
	Diagnostics     Diagnostics
	// Unchanged, set by a client that was told so, says Planned is the
	// request's Prior as it was sent.
	Unchanged bool
}

// ApplyRequest asks a provider to make Planned real.
type ApplyRequest struct {
	TypeName string
	Address  string
	Node     Node
	Prior    cty.Value
	Planned  cty.Value
	Config   cty.Value
	Private  []byte
}

// ApplyResponse holds the state really left on the node.
type ApplyResponse struct {
	NewState    cty.Value
	Private     []byte
	Diagnostics Diagnostics
	// OutcomeUnknown is set by the client when the call failed after the
	// request may have reached the provider (the plugin died, the link to
	// it broke, the result was unreadable): what happened on the node is
	// unknown. NewState is then the prior value and must not be taken as
	// the result; the caller keeps its journal intent, as a crash at that
	// moment would, so the next run finds out what is on the node.
	OutcomeUnknown bool
}

// Progress is one event of a long apply ("cloning", "3/10 layers", ...).
type Progress struct {
	Message string
	// Current and Total count work units when known, in Unit.
	Current int64
	Total   int64
	// Unit is UnitBytes (shown as human sizes and rates), UnitObjects, or
	// empty for a plain count.
	Unit    string
	Elapsed time.Duration
}

// Progress units.
const (
	UnitBytes   = "bytes"
	UnitObjects = "objects"
)

// ImportRequest asks for an existing object by id.
type ImportRequest struct {
	TypeName string
	Node     Node
	ID       string
}

// ImportResponse answers an ImportRequest.
type ImportResponse struct {
	State       cty.Value
	Private     []byte
	Diagnostics Diagnostics
}
