// This file holds the state's side of the engine: the Store interface,
// stateObject (one instance as state records it), its encoding, and the
// readers of what the last run stored (instances and outputs).

package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	ctymsgpack "github.com/zclconf/go-cty/cty/msgpack"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// Store is what the engine needs of a state.Store (the local bbolt file or
// etcd): every state.Store is one.
type Store interface {
	Meta() (state.Meta, error)
	Resources() ([]*state.Resource, error)
	PutResource(r *state.Resource) error
	DeleteResource(addr string) error
	// MoveResource renames a record (a moved block's apply).
	MoveResource(from, to string) error
	PutIntent(in *state.Intent) error
	DeleteIntent(addr string) error
	Intents() ([]*state.Intent, error)
	// Complete stores an apply's result (nil: the object is gone) and
	// clears its intent in one write, durable before any later PutIntent
	// returns (it may be queued: see state.Store).
	Complete(addr string, result *state.Resource) error
	// Flush makes every queued Complete durable and reports one that failed.
	Flush() error
}

var _ Store = state.Store(nil)

const (
	statusReady   = state.Status("ready")
	statusTainted = state.Status("tainted")
)

// stateObject is one resource instance as the state records it (and as
// refresh and apply update it in memory): the object on the node.
type stateObject struct {
	Addr          string
	Resource      string // config address "type.name"
	Type          string
	Provider      string
	Node          sdk.Node
	Value         cty.Value
	Private       []byte
	Dependencies  []string
	Tainted       bool
	SchemaVersion int64
	// SensitiveAttrs are the attributes the change that stored the object
	// hid (instanceSensitive), kept in state for what reads it alone.
	SensitiveAttrs []string

	// interrupted marks an object whose create (made from its journal
	// intent), delete or replace did not finish (recoverIntents):
	// tainted, unless its type resumes creates (resumeCreates).
	interrupted bool

	// stored, when set, holds the record bytes Value was decoded from:
	// record uses them instead of encoding Value again. Whoever changes
	// Value clears it.
	stored *decodedValue
}

// EncodeValue is the JSON encoding of a value: cty JSON with its type, so
// it can be shown without asking any provider for a schema. Outputs and
// state snapshots (state pull) use it; instance records use the compact
// encodeStateValue.
func EncodeValue(v cty.Value) (json.RawMessage, error) {
	v, _ = v.UnmarkDeep()
	if !v.IsWhollyKnown() {
		v = unknownAsNull(v)
	}
	return ctyjson.Marshal(v, cty.DynamicPseudoType)
}

// DecodeValue reverses EncodeValue.
func DecodeValue(b json.RawMessage) (cty.Value, error) {
	if len(b) == 0 {
		return cty.NullVal(cty.DynamicPseudoType), nil
	}
	// Its "type" costs what a value type does to decode (stateType).
	if state.JSONDepth(b, 2*state.MaxValueTypeDepth) > 2*state.MaxValueTypeDepth {
		return cty.NilVal, fmt.Errorf("value nests more than %d levels deep", 2*state.MaxValueTypeDepth)
	}
	return ctyjson.Unmarshal(b, cty.DynamicPseudoType)
}

// encodeStateValue is the state encoding of an instance's value: cty
// msgpack against the value's own type, and that type as cty JSON. The
// store keeps each distinct type once (state.Resource.ValueType), so a
// value costs its data alone, and decoding it knows its type up front
// instead of reading it from every value (cty/json's dynamic form).
func encodeStateValue(resourceType string, v cty.Value) (typ, data []byte, err error) {
	// One walk finds both; each fix-up rebuilds the value, so only a
	// value that needs it pays (a result rarely does; an intent's planned
	// value has its computed attributes unknown).
	if marked, unknown := scanValue(v); marked || unknown {
		if marked {
			v, _ = v.UnmarkDeep()
		}
		if unknown {
			v = cty.UnknownAsNull(v)
		}
	}
	ty := v.Type()
	if typ, err = typeJSON(resourceType, ty); err != nil {
		return nil, nil, err
	}
	if data, err = ctymsgpack.Marshal(v, ty); err != nil {
		return nil, nil, err
	}
	return typ, data, nil
}

// CompactValue turns a value in the JSON form (EncodeValue) into the
// state's binary form: what state.Options.ConvertValue wants, so a state
// converted from format 1 or pushed from a snapshot holds binary values.
func CompactValue(js json.RawMessage) (typ, data []byte, err error) {
	v, err := DecodeValue(js)
	if err != nil {
		return nil, nil, err
	}
	return encodeStateValue("", v)
}

// ResourceValue decodes the value of a state record, in either form
// (state.Resource.Value).
func ResourceValue(r *state.Resource) (cty.Value, error) {
	if r.ValueType == nil {
		return DecodeValue(r.Value)
	}
	ty, err := stateType(r.ValueType)
	if err != nil {
		return cty.NilVal, err
	}
	if len(r.Value) == 0 {
		return cty.NullVal(ty), nil
	}
	return ctymsgpack.Unmarshal(r.Value, ty)
}

// JSONForm returns r with its value in the JSON form (a copy when it
// was compact): what a snapshot written for people (state pull) holds.
func JSONForm(r *state.Resource) (*state.Resource, error) {
	if r.ValueType == nil {
		return r, nil
	}
	v, err := ResourceValue(r)
	if err != nil {
		return nil, fmt.Errorf("state record %s: %w", r.Address, err)
	}
	js, err := EncodeValue(v)
	if err != nil {
		return nil, fmt.Errorf("state record %s: %w", r.Address, err)
	}
	c := *r
	c.Value, c.ValueType = js, nil
	return &c, nil
}

// typeJSONs caches, per resource type, the JSON of the last value type
// written: instances of one type nearly always have the same one.
var typeJSONs sync.Map // resource type -> *typeJSONEntry

type typeJSONEntry struct {
	ty cty.Type
	js []byte // shared by the records that use it: never modified
}

func typeJSON(resourceType string, ty cty.Type) ([]byte, error) {
	if e, ok := typeJSONs.Load(resourceType); ok && e.(*typeJSONEntry).ty.Equals(ty) {
		return e.(*typeJSONEntry).js, nil
	}
	js, err := ctyjson.MarshalType(ty)
	if err != nil {
		return nil, err
	}
	typeJSONs.Store(resourceType, &typeJSONEntry{ty: ty, js: js[:len(js):len(js)]})
	return js, nil
}

// stateTypes caches decoded value types by their JSON: a state holds a
// handful of distinct types, shared by thousands of records.
var stateTypes sync.Map // string -> cty.Type

func stateType(js []byte) (cty.Type, error) {
	if t, ok := stateTypes.Load(string(js)); ok {
		return t.(cty.Type), nil
	}
	if err := state.CheckValueType(js); err != nil {
		// A record damaged this way would cost gigabytes to decode.
		return cty.NilType, fmt.Errorf("value type: %w", err)
	}
	t, err := ctyjson.UnmarshalType(js)
	if err != nil {
		return cty.NilType, fmt.Errorf("value type: %w", err)
	}
	stateTypes.Store(string(js), t)
	return t, nil
}

// unknownAsNull replaces every unknown in v with a null of its type: what
// a journal intent records of a planned value. cty.UnknownAsNull builds
// no paths, where cty.Transform built one per element (0.15 CPU s of a
// 10,000-instance apply, which encodes each planned value once).
func unknownAsNull(v cty.Value) cty.Value {
	if v.IsWhollyKnown() {
		return v
	}
	return cty.UnknownAsNull(v)
}

// scanValue reports whether v holds marks and unknowns anywhere, in one
// walk that builds no paths (cty's ContainsMarked builds one per element,
// and IsWhollyKnown walks again).
func scanValue(v cty.Value) (marked, unknown bool) {
	if v.IsMarked() {
		marked = true
		v, _ = v.Unmark()
	}
	if !v.IsKnown() {
		return marked, true
	}
	if v.IsNull() {
		return marked, false
	}
	ty := v.Type()
	if ty.IsObjectType() {
		// By attribute: ElementIterator sorts the names first.
		for name := range ty.AttributeTypes() {
			m, u := scanValue(v.GetAttr(name))
			marked, unknown = marked || m, unknown || u
			if marked && unknown {
				break
			}
		}
		return marked, unknown
	}
	if !ty.IsCollectionType() && !ty.IsTupleType() {
		return marked, false
	}
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		m, u := scanValue(ev)
		marked, unknown = marked || m, unknown || u
		if marked && unknown {
			break
		}
	}
	return marked, unknown
}

// putObject writes obj's record to state.
func (e *Engine) putObject(obj *stateObject) error {
	rec, err := obj.record()
	if err != nil {
		return err
	}
	return e.store.PutResource(rec)
}

// stateObjectFromRecord decodes a state record.
func stateObjectFromRecord(r *state.Resource) (*stateObject, error) {
	return decodeStateObject(r, nil)
}

// nodeCache holds the nodes decoded while reading one state: records
// of one node share its bytes, and decoding them once per record was a
// JSON decode per instance.
type nodeCache map[string]sdk.Node

// decodeStateObject decodes a state record; nodes (may be nil) caches
// decoded node details.
func decodeStateObject(r *state.Resource, nodes nodeCache) (*stateObject, error) {
	v, err := ResourceValue(r)
	if err != nil {
		return nil, fmt.Errorf("state record %s: %w", r.Address, err)
	}
	return stateObjectOf(r, v, nodes)
}

// stateObjectOf is the object of record r whose value, decoded, is v.
func stateObjectOf(r *state.Resource, v cty.Value, nodes nodeCache) (*stateObject, error) {
	in := new(stateObject)
	if err := fillStateObject(in, r, v, nodes); err != nil {
		return nil, err
	}
	return in, nil
}

// fillStateObject sets *in to the object of record r whose value,
// decoded, is v.
func fillStateObject(in *stateObject, r *state.Resource, v cty.Value, nodes nodeCache) error {
	var n sdk.Node
	if len(r.Node) > 0 {
		var ok bool
		if n, ok = nodes[string(r.Node)]; !ok {
			// Decoded into a node of its own: &n given to json.Unmarshal
			// would move n to the heap for every record, cached or not.
			dec := new(sdk.Node)
			if err := json.Unmarshal(r.Node, dec); err != nil {
				return fmt.Errorf("state record %s: node: %w", r.Address, err)
			}
			n = *dec
			if nodes != nil {
				nodes[string(r.Node)] = n
			}
		}
	}
	*in = stateObject{
		Addr: r.Address, Resource: resourceOfInstance(r.Address), Type: r.Type, Provider: r.Provider,
		Node: n, Value: v, Private: r.Private, Dependencies: r.Dependencies,
		Tainted: r.Status == statusTainted, SchemaVersion: r.SchemaVersion, SensitiveAttrs: r.SensitiveAttrs,
	}
	return nil
}

// record is the state record of the object.
func (in *stateObject) record() (*state.Resource, error) {
	var typ, val []byte
	if in.stored != nil {
		typ, val = in.stored.typ, in.stored.data
	} else {
		var err error
		if typ, val, err = encodeStateValue(in.Type, in.Value); err != nil {
			return nil, fmt.Errorf("%s: encoding value: %w", in.Addr, err)
		}
	}
	nodeJSON, err := nodeJSONs.marshal(&in.Node)
	if err != nil {
		return nil, err
	}
	st := statusReady
	if in.Tainted {
		st = statusTainted
	}
	return &state.Resource{
		Address: in.Addr, Type: in.Type, Provider: in.Provider, Node: nodeJSON,
		SchemaVersion: in.SchemaVersion, Value: val, ValueType: typ, Private: in.Private,
		Dependencies: in.Dependencies, SensitiveAttrs: in.SensitiveAttrs, Status: st, UpdatedAt: time.Now().UTC(),
	}, nil
}

// nodeJSONs memoises the JSON of the nodes records name: a run's records
// are on a few nodes, and marshalling each record's Node again was a
// ~200 B slice (and the marshalling's garbage) per record written.
var nodeJSONs nodeJSONMemo

// maxNodeJSONs bounds the memo: nodes past it are marshalled every time.
const maxNodeJSONs = 64

// nodeJSONMemo is the JSON of up to maxNodeJSONs nodes. The slices it
// returns are shared: callers only read them. Safe for concurrent use.
type nodeJSONMemo struct {
	mu    sync.Mutex
	nodes []sdk.Node
	json  [][]byte
}

func (m *nodeJSONMemo) marshal(n *sdk.Node) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.nodes {
		if m.nodes[i].Equal(n) {
			return m.json[i], nil
		}
	}
	b, err := json.Marshal(n)
	if err != nil || len(m.nodes) >= maxNodeJSONs {
		return b, err
	}
	// A deep copy: the caller's slices may change after it returns.
	kept := *n
	kept.IdentityFiles = slices.Clone(n.IdentityFiles)
	kept.ProxyJump = cloneNodes(n.ProxyJump)
	m.nodes, m.json = append(m.nodes, kept), append(m.json, b)
	return b, nil
}

func cloneNodes(ns []sdk.Node) []sdk.Node {
	if ns == nil {
		return nil
	}
	out := make([]sdk.Node, len(ns))
	for i, n := range ns {
		out[i] = n
		out[i].IdentityFiles = slices.Clone(n.IdentityFiles)
		out[i].ProxyJump = cloneNodes(n.ProxyJump)
	}
	return out
}

// resourceOfInstance strips the instance key and a deposed suffix:
// `a.b["k"]` -> `a.b`, `a.b#deposed` -> `a.b`.
func resourceOfInstance(addr string) string {
	addr = strings.TrimSuffix(addr, deposedSuffix)
	if !strings.HasPrefix(addr, "module.") {
		if i := strings.IndexByte(addr, '['); i >= 0 {
			return addr[:i]
		}
		return addr
	}
	// Module keys hold brackets too: an address in the form sparkform
	// writes is scanned, anything else parsed.
	if r, _, ok := addrs.ScanModuleResourceInstance(addr); ok {
		return r
	}
	if ri, d := addrs.ParseResourceInstance(addr); !d.HasErrors() {
		return ri.Resource.String()
	}
	if i := strings.IndexByte(addr, '['); i >= 0 {
		return addr[:i]
	}
	return addr
}

func nullOf(v cty.Value) cty.Value { return cty.NullVal(v.Type()) }

// decodedValue is an instance value and the record bytes it was decoded
// from (Resource.ValueType and Value, the compact form).
type decodedValue struct {
	typ, data []byte
	v         cty.Value
}

// sdkStored is the value's stored form for a provider request (see
// sdk.Stored); empty when it has none.
func (in *stateObject) sdkStored() sdk.Stored {
	if in.stored == nil {
		return sdk.Stored{}
	}
	return sdk.Stored{Type: in.stored.typ, Data: in.stored.data}
}

// storedValue is the record encoding loadState decoded addr's value
// from, if v is that value (nil otherwise). encodeStateValue(v) gives
// those bytes: the record was written by it (a null value, stored as no
// bytes, is not taken).
func (e *Engine) storedValue(addr string, v cty.Value) *decodedValue {
	e.valuesMu.Lock()
	d, ok := e.values[addr]
	e.valuesMu.Unlock()
	if !ok || len(d.data) == 0 || !d.v.RawEquals(v) {
		return nil
	}
	return d
}

// loadState reads every instance in state. A value whose record bytes are
// those the previous loadState decoded is taken from it: the apply of a
// plan (and of a destroy) reads the state the plan read, and decoding
// every value again was 0.09 CPU s of a 10,000-instance destroy.
func (e *Engine) loadState() (map[string]*stateObject, hcl.Diagnostics) {
	recs, err := e.store.Resources()
	if err != nil {
		return nil, hcl.Diagnostics{tfdiags.FromError("Cannot read state", err, "")}
	}
	e.valuesMu.Lock()
	defer e.valuesMu.Unlock()
	prev := e.values
	e.values = nil // a failed load leaves none
	values := make(map[string]*decodedValue, len(recs))
	out := make(map[string]*stateObject, len(recs))
	// The objects and their decoded values are two allocations, not two
	// per record.
	objs := make([]stateObject, len(recs))
	decoded := make([]decodedValue, len(recs))
	nodes := nodeCache{}
	for i, r := range recs {
		var v cty.Value
		if d, ok := prev[r.Address]; ok && r.ValueType != nil && bytes.Equal(d.data, r.Value) && bytes.Equal(d.typ, r.ValueType) {
			v = d.v
		} else if v, err = ResourceValue(r); err != nil {
			return nil, hcl.Diagnostics{errDiag("Corrupt state record", fmt.Sprintf("state record %s: %v", r.Address, err))}
		} else {
			v = e.types.share(r.Type, v) // kept by the objects, e.values and a plan's priors
		}
		in := &objs[i]
		if err := fillStateObject(in, r, v, nodes); err != nil {
			return nil, hcl.Diagnostics{tfdiags.FromError("Corrupt state record", err, "")}
		}
		if r.ValueType != nil {
			d := &decoded[i]
			*d = decodedValue{typ: r.ValueType, data: r.Value, v: v}
			values[r.Address] = d
			if len(r.Value) > 0 {
				// The object carries its bytes: refresh and plan send
				// them to the provider as they are (sdk.Stored), and a
				// record of it writes them back unchanged.
				in.stored = d
			}
		}
		out[in.Addr] = in
	}
	e.values = values
	return out, nil
}

const deposedSuffix = plans.DeposedSuffix

func isNotFound(err error) bool {
	return errors.Is(err, state.ErrResourceNotFound)
}

// outputStore is implemented by stores that keep output values.
type outputStore interface {
	Outputs() (map[string]state.Output, error)
}

// priorOutputs reads the outputs stored by the last apply.
func (e *Engine) priorOutputs() map[string]cty.Value {
	out, _ := e.priorOutputsSensitive()
	return out
}

// priorOutputsSensitive is priorOutputs and which of them state stored as
// sensitive (an output removed from the configuration is still hidden).
func (e *Engine) priorOutputsSensitive() (map[string]cty.Value, map[string]bool) {
	out, sens := map[string]cty.Value{}, map[string]bool{}
	os, ok := e.store.(outputStore)
	if !ok {
		return out, sens
	}
	stored, err := os.Outputs()
	if err != nil {
		return out, sens
	}
	for name, o := range stored {
		if v, err := DecodeValue(o.Value); err == nil {
			out[name] = v
			sens[name] = o.Sensitive
		}
	}
	return out, sens
}

// valueFromState is what references see of an instance this walk does
// not plan or apply: its value in state, or unknown when state has none.
func valueFromState(obj *stateObject, schema *sdk.ResourceSchema) cty.Value {
	if obj != nil {
		return obj.Value
	}
	return cty.UnknownVal(schema.Block.ImpliedType())
}
