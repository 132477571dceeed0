package sdk

import (
	"slices"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// Schema describes every resource type one provider serves.
type Schema struct {
	// ResourceTypes maps a resource type name (e.g. "gitkit_checkout") to
	// its schema. Every name starts with the provider name and "_".
	ResourceTypes map[string]*ResourceSchema
}

// ResourceSchema describes one resource type.
// SummaryAttribute names the computed string attribute with which a
// resource summarises, in one line, a change of its large computed
// collections ("commit a -> b, +3 files"): a resource whose schema
// declares it asks plan renderers to show that line instead of those
// collections element by element (SummarizedAttrs). Machine-readable
// output keeps every element.
const SummaryAttribute = "change_summary"

// SummarizedAttrs are the attributes plan renderers show through
// SummaryAttribute rather than element by element: every computed-only
// list, set or map attribute of a schema that declares SummaryAttribute,
// sorted. Nil when the schema does not declare it.
func (s *ResourceSchema) SummarizedAttrs() []string {
	if s == nil || s.Block == nil {
		return nil
	}
	if a := s.Block.Attributes[SummaryAttribute]; a == nil || !a.Computed || a.Type != cty.String {
		return nil
	}
	var out []string
	for name, a := range s.Block.Attributes {
		if a.Computed && !a.Optional && !a.Required && (a.Type.IsListType() || a.Type.IsSetType() || a.Type.IsMapType()) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

type ResourceSchema struct {
	// Version is bumped when the stored value's shape changes.
	Version     int64
	Description string
	Block       *Block
	// Identity names the attributes whose values identify, on one node,
	// the object an instance manages (kmod_module: name; gitkit_checkout:
	// path; docker_container: name). Two instances on one node with equal
	// values of all of them would manage the same object, and the engine
	// refuses that at plan. Empty: instances never collide.
	Identity []string
	// IdentityFold says, per Identity attribute, which spellings of its
	// value name one object on a node (FoldDashUnderscore: kernel module
	// names, where modprobe takes nvidia-drm and nvidia_drm alike). The
	// engine compares folded values, so two instances that spell one
	// object differently are refused too. Unset, or a fold the engine
	// does not know: compared as written.
	IdentityFold map[string]string
	// LocalPlan says PlanResourceChange of this type never reaches a node:
	// it plans from the values it is given alone, whether or not the plan
	// is Offline. The engine then plans more of its instances at once
	// than its parallelism (which bounds work on nodes), so that many plan
	// items share one message each way. Set it only when no plan of the
	// type, now or later, runs anything on a node or opens a connection.
	LocalPlan bool
	// LocalApply says ApplyResourceChange of this type never reaches a
	// node: creates, updates and deletes work on the values they are given
	// alone. The engine then applies more of its instances at once than
	// its parallelism, so that their items share plugin messages, and
	// journals none of them: a crash loses at most a result, which the
	// next plan plans again. Set it only when no apply of
	// the type, now or later, runs anything on a node or opens a
	// connection. Unset (as from a plugin that predates it) is the safe
	// reading: bounded by the parallelism.
	LocalApply bool
	// Logs says the type serves Logs (LogsResource): it runs something
	// with output, such as a container. `sparkform logs` reads only the
	// instances of such types.
	Logs bool
	// ResumesCreate says an interrupted create of this type (the CLI,
	// plugin or link killed during it, or a create that failed half done:
	// an error with an object) is resumed, not replaced: the engine does
	// not taint what it made or what refresh then finds, so the next plan
	// converges it in place from what the node has (a model snapshot
	// fetched half way keeps its bytes). Set it only when Read reports a
	// partial object truly (what is missing shows as a difference) and
	// apply completes one. Unset (as from an older plugin): tainted and
	// replaced, as Terraform does.
	ResumesCreate bool
}

// Identity folds (ResourceSchema.IdentityFold).
const (
	// FoldDashUnderscore takes '-' and '_' as one character.
	FoldDashUnderscore = "dash_underscore"
)

// FoldIdentity is s as fold compares it; s itself for an unknown fold.
func FoldIdentity(fold, s string) string {
	if fold == FoldDashUnderscore {
		return strings.ReplaceAll(s, "-", "_")
	}
	return s
}

// Block is a set of attributes and nested blocks, as in a resource body.
type Block struct {
	Attributes map[string]*Attribute
	BlockTypes map[string]*NestedBlock
}

// Attribute is one attribute of a block.
type Attribute struct {
	Type        cty.Type
	Description string
	Required    bool
	Optional    bool
	// Computed attributes are set by the provider. Optional+Computed means
	// the provider fills it in when the config leaves it null.
	Computed bool
	// ForceNew marks an attribute whose change replaces the object.
	ForceNew  bool
	Sensitive bool
	// SensitiveWith names attributes of the same block whose value this
	// one repeats or derives from: when one of them is sensitive (by the
	// schema or because its config came from sensitive()), so is this
	// one. sparkform_data's output is sensitive with its input.
	SensitiveWith []string
	// Volatile marks a computed attribute that reports what was observed
	// when the plan was made (free disk space): shown in the plan, but an
	// apply that plans again does not hold the new plan to it (see
	// ConsistentWithPlan). Only top-level attributes are looked at.
	Volatile bool
}

// NestingMode says how a nested block repeats.
type NestingMode int

const (
	NestingSingle NestingMode = iota + 1
	NestingList
	NestingSet
)

func (m NestingMode) String() string {
	switch m {
	case NestingSingle:
		return "single"
	case NestingList:
		return "list"
	case NestingSet:
		return "set"
	}
	return "invalid"
}

// NestedBlock is a block type allowed inside a Block (e.g. "mount").
type NestedBlock struct {
	Nesting  NestingMode
	Block    Block
	MinItems int
	MaxItems int
	// ForceNew marks a block whose change replaces the object.
	ForceNew    bool
	Description string
}

// ImpliedType is the cty object type of a value conforming to b.
func (b *Block) ImpliedType() cty.Type {
	if b == nil {
		return cty.EmptyObject
	}
	atys := make(map[string]cty.Type, len(b.Attributes)+len(b.BlockTypes))
	for name, a := range b.Attributes {
		atys[name] = a.Type
	}
	for name, nb := range b.BlockTypes {
		ety := nb.Block.ImpliedType()
		switch nb.Nesting {
		case NestingSingle:
			atys[name] = ety
		case NestingList:
			atys[name] = cty.List(ety)
		case NestingSet:
			atys[name] = cty.Set(ety)
		}
	}
	return cty.Object(atys)
}

// AttributeNames returns the attribute names of b, sorted.
func (b *Block) AttributeNames() []string {
	names := make([]string, 0, len(b.Attributes))
	for n := range b.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ProviderNameOf returns the provider that serves a resource type: the part
// of the type name before its first underscore, as in Terraform.
func ProviderNameOf(resourceType string) string {
	for i := 0; i < len(resourceType); i++ {
		if resourceType[i] == '_' {
			return resourceType[:i]
		}
	}
	return resourceType
}
