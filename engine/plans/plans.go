package plans

import (
	"sort"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// Action is what apply will do to one instance.
type Action string

const (
	NoOp             Action = "no-op"
	Create           Action = "create"
	Update           Action = "update"
	Delete           Action = "delete"
	DeleteThenCreate Action = "delete-then-create"
	CreateThenDelete Action = "create-then-delete"
)

// IsReplace reports whether a is one of the two replace actions.
func (a Action) IsReplace() bool { return a == DeleteThenCreate || a == CreateThenDelete }

// Symbol is how the plan renderer marks a.
func (a Action) Symbol() string {
	switch a {
	case Create:
		return "+"
	case Update:
		return "~"
	case Delete:
		return "-"
	case DeleteThenCreate:
		return "-/+"
	case CreateThenDelete:
		return "+/-"
	}
	return " "
}

// Mode is the kind of plan.
type Mode string

const (
	NormalMode      Mode = "normal"
	DestroyMode     Mode = "destroy"
	RefreshOnlyMode Mode = "refresh-only"
)

// ResourceChange is the planned change of one resource instance.
type ResourceChange struct {
	Addr     string // instance address, e.g. gitkit_checkout.kit["a"]
	Resource string // config address, e.g. gitkit_checkout.kit
	Type     string
	Provider string
	// Node is where the instance lives, shared by every change of the plan
	// on that node (Plan.Node): a Node is 176 bytes, two per change.
	Node *sdk.Node
	// PriorNode is where the existing object lives (differs from Node
	// when a replacement moves it to another node); nil when there is no
	// existing object.
	PriorNode *sdk.Node
	Action    Action
	// Reason explains an action the config alone does not ("tainted",
	// "replace requested", "no longer in configuration", ...).
	Reason string
	// Notes are what the provider found on the node that this change
	// displaces or disrupts ("nvidia_drm is loaded (...); apply unloads
	// and reloads it"): its plan-time warnings, shown with the change.
	Notes           []string
	Before, After   cty.Value
	RequiresReplace []cty.Path
	PriorPrivate    []byte
	PlannedPrivate  []byte
	// Dependencies are the config addresses this instance depends on.
	Dependencies []string
	// SensitiveAttrs are the sensitive paths (input, input.env.TOKEN,
	// input.args[1]; see config.SensitivePaths) of After: hidden in every
	// output, kept in state with the object.
	SensitiveAttrs []string
	// PriorSensitiveAttrs are those state kept with Before: Before hides
	// both (BeforeSensitive), so a value that stops being sensitive is not
	// shown in its old form.
	PriorSensitiveAttrs []string
	// SummaryAttrs are attributes rendered through the object's summary
	// line (sdk.SummaryAttribute) rather than element by element: large
	// computed lists such as a snapshot's files (sdk.SummarizedAttrs).
	SummaryAttrs  []string
	SchemaVersion int64
	// CreateBeforeDestroy is the lifecycle setting, kept for destroy order.
	CreateBeforeDestroy bool
}

// BeforeSensitive are the sensitive paths hidden in Before.
func (c *ResourceChange) BeforeSensitive() []string {
	if len(c.PriorSensitiveAttrs) == 0 {
		return c.SensitiveAttrs
	}
	if len(c.SensitiveAttrs) == 0 {
		return c.PriorSensitiveAttrs
	}
	return append(append(make([]string, 0, len(c.SensitiveAttrs)+len(c.PriorSensitiveAttrs)), c.SensitiveAttrs...), c.PriorSensitiveAttrs...)
}

// Drift is a difference refresh found between state and the node.
type Drift struct {
	Addr          string
	Type          string
	Before, After cty.Value // After null: the object is gone
	// SensitiveAttrs are the sensitive paths state keeps for the object:
	// hidden in Before and After.
	SensitiveAttrs []string
	// SummaryAttrs are attributes rendered through the object's summary
	// line rather than element by element (sdk.SummarizedAttrs).
	SummaryAttrs []string
}

// OutputChange is the planned value of an output.
type OutputChange struct {
	Before, After cty.Value
	Sensitive     bool
}

// Plan is the result of planning.
type Plan struct {
	FormatVersion int
	Lineage       string
	Serial        uint64
	Mode          Mode
	Created       time.Time
	// ConfigDigest is a hash of the config files; apply refuses a plan file
	// made from other files.
	ConfigDigest string
	Variables    map[string]cty.Value
	Targets      []string
	Replace      []string
	Changes      []*ResourceChange
	Drift        []*Drift
	// Moves are the moved blocks this plan carries out, per object: state
	// holds each at From until the plan's apply moves it, first of all.
	// Changes and Drift already name the objects at To.
	Moves   []Move
	Outputs map[string]*OutputChange
	// Notes are messages for the user made during planning (interrupted
	// operations found in the journal, and what refresh found for them).
	Notes []string
	// ExcludeUnreachable says the plan was made with -exclude-unreachable:
	// a node that cannot be reached (at plan, or when a saved plan is
	// applied) is left out, named in Excluded, instead of failing the
	// whole run.
	ExcludeUnreachable bool
	// Excluded are the nodes this plan leaves out, each with why and the
	// instances it neither read nor planned: none of their changes is in
	// Changes, and applying the plan fails with one error per node after
	// converging the rest. Never empty without a word: every renderer of
	// a plan names them.
	Excluded []ExcludedNode
	// Saved is set for a plan read from a file (not stored in it): time
	// has passed since it was reviewed, so apply refreshes every instance
	// before its first change and refuses the plan if a node moved on.
	Saved bool

	nodesMu sync.Mutex
	nodes   []*sdk.Node // Node's
}

// ExcludedNode is one node a plan leaves out (Plan.Excluded).
type ExcludedNode struct {
	// Node is the node's name, as `node.spark["n32"]`.
	Node string
	// Reason is why it was left out: the error reaching it.
	Reason string
	// Instances are the addresses on it that the plan neither read nor
	// planned, sorted.
	Instances []string
}

// Move is one object a moved block moves: from address to address.
type Move struct{ From, To string }

// NodeValue is *n, or the zero Node (no node, as a plan file writes it)
// for nil: a change's Node or PriorNode where a Node value is wanted.
func NodeValue(n *sdk.Node) sdk.Node {
	if n == nil {
		return sdk.Node{}
	}
	return *n
}

// NodeName is the name of c's node, "" when it names none.
func (c *ResourceChange) NodeName() string {
	if c.Node == nil {
		return ""
	}
	return c.Node.Name
}

// Node is the plan's one *sdk.Node equal to n, for its changes' Node and
// PriorNode: a plan's changes are on a few nodes, and a Node is 176 bytes.
// It is nil for the zero Node (no node). Safe for concurrent use.
func (p *Plan) Node(n sdk.Node) *sdk.Node {
	if n.Transport == "" {
		return nil
	}
	p.nodesMu.Lock()
	defer p.nodesMu.Unlock()
	for _, have := range p.nodes {
		if have.Equal(&n) {
			return have
		}
	}
	// A copy made here alone: taking &n would move n to the heap in every
	// call, found or not (176 B of garbage per change).
	kept := new(sdk.Node)
	*kept = n
	p.nodes = append(p.nodes, kept)
	return kept
}

// Counts returns how many instances each action touches.
func (p *Plan) Counts() (add, change, destroy int) {
	for _, c := range p.Changes {
		switch c.Action {
		case Create:
			add++
		case Update:
			change++
		case Delete:
			destroy++
		case DeleteThenCreate, CreateThenDelete:
			add++
			destroy++
		}
	}
	return
}

// HasChanges reports whether applying p would change any node or state.
func (p *Plan) HasChanges() bool {
	if len(p.Moves) > 0 {
		return true // apply stores them
	}
	for _, c := range p.Changes {
		if c.Action != NoOp {
			return true
		}
	}
	if p.Mode == RefreshOnlyMode && len(p.Drift) > 0 {
		return true
	}
	for _, o := range p.Outputs {
		if !sdk.ValuesEqual(o.Before, o.After) {
			return true
		}
	}
	return false
}

// Change returns the change for an instance address, or nil.
func (p *Plan) Change(addr string) *ResourceChange {
	for _, c := range p.Changes {
		if c.Addr == addr {
			return c
		}
	}
	return nil
}

// Sort orders changes and drift by address.
func (p *Plan) Sort() {
	sort.Slice(p.Changes, func(i, j int) bool { return p.Changes[i].Addr < p.Changes[j].Addr })
	sort.Slice(p.Drift, func(i, j int) bool { return p.Drift[i].Addr < p.Drift[j].Addr })
	sort.Slice(p.Excluded, func(i, j int) bool { return p.Excluded[i].Node < p.Excluded[j].Node })
}
