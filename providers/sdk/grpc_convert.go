package sdk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"

	"github.com/sparkform/sparkform/providers/sdk/proto"
)

// Conversions between the sdk types and their wire form. Both adapters use
// them, so the two sides cannot disagree on an encoding.

// encodeValue marshals v as msgpack of type ty. cty.NilVal (a request field
// the caller left unset) travels as empty bytes, which decodeValue reads as
// null. Marks (e.g. sensitive) do not cross the wire: sensitivity is a
// schema property the engine applies itself, as Terraform does.
func encodeValue(v cty.Value, ty cty.Type) ([]byte, error) {
	b, _, err := encodeSent(v, ty)
	return b, err
}

// encodeSent is encodeValue that also returns the value as the other side
// will see it: v, or v without its marks. An "unchanged" answer about a
// value the client sent (ReadResources_Result.unchanged,
// planned_unchanged) stands for that value, never for marks the plugin
// did not see.
func encodeSent(v cty.Value, ty cty.Type) ([]byte, cty.Value, error) {
	if v == cty.NilVal || v.IsNull() {
		return nil, v, nil // empty means null (decodeValue): a create's prior costs nothing
	}
	enc := marshal
	if ty.HasDynamicTypes() {
		enc = marshalConcrete
	}
	b, err := enc(v, ty)
	if err != nil && v.ContainsMarked() {
		v, _ = v.UnmarkDeep()
		b, err = enc(v, ty)
	}
	return b, v, err
}

// encodeStored is encodeSent for a value that comes with its state
// encoding st (Stored): the wire bytes are made from st's, not from
// walking v again (a no-op plan sends every instance's prior twice, to
// read and to plan). tyJSON is ty as cty JSON. It falls back to
// encodeSent when st is empty or its type cannot stand for ty's.
func encodeStored(v cty.Value, st Stored, ty cty.Type, tyJSON []byte) ([]byte, cty.Value, error) {
	if len(st.Data) == 0 || v == cty.NilVal || v.IsNull() || v.IsMarked() {
		return encodeSent(v, ty)
	}
	if !ty.HasDynamicTypes() {
		// Same type, same bytes: msgpack of v as ty is msgpack of v as
		// its own type when the two are one (cty JSON of a type is
		// canonical).
		if !bytes.Equal(st.Type, tyJSON) {
			return encodeSent(v, ty)
		}
		return st.Data, v, nil
	}
	// marshalConcrete's form, with v's own type: st's type, which the
	// cache checks against ty once.
	if _, err := concreteTypes.parse(st.Type, ty); err != nil {
		return encodeSent(v, ty)
	}
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(st.Type)+len(st.Data))
	b = append(b, concreteMarker)
	b = binary.AppendUvarint(b, uint64(len(st.Type)))
	b = append(b, st.Type...)
	return append(b, st.Data...), v, nil
}

// Values whose schema type has dynamic parts (an attribute of type any)
// travel as concreteMarker, the uvarint length of the value's concrete
// type as JSON, that JSON, then msgpack of the value with that type. Plain
// cty msgpack carries and parses a type JSON for every dynamic attribute
// of every value (a fifth of a 10,000-instance apply's allocations); here
// each distinct type is converted once per process (typeCache) and the
// value itself has no dynamic parts left. 0xc1 is never used by msgpack,
// so no plain value starts with it.
const concreteMarker = 0xc1

func marshalConcrete(v cty.Value, ty cty.Type) ([]byte, error) {
	ct := v.Type()
	tj, err := concreteTypes.json(ct, ty)
	if err != nil {
		return nil, err
	}
	body, err := marshal(v, ct)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(tj)+len(body))
	b = append(b, concreteMarker)
	b = binary.AppendUvarint(b, uint64(len(tj)))
	b = append(b, tj...)
	return append(b, body...), nil
}

func unmarshalConcrete(b []byte, ty cty.Type) (cty.Value, error) {
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || uint64(len(b)-1-k) < n {
		return cty.NilVal, fmt.Errorf("malformed value: bad type length")
	}
	tj := b[1+k : 1+k+int(n)]
	ct, err := concreteTypes.parse(tj, ty)
	if err != nil {
		return cty.NilVal, err
	}
	return unmarshalChecked(b[1+k+int(n):], ct)
}

// unmarshalChecked is msgpack.Unmarshal after CheckMsgpack: a reply from
// a faulty plugin cannot make the decoder allocate what it declares.
func unmarshalChecked(b []byte, ty cty.Type) (v cty.Value, err error) {
	if err := CheckMsgpack(b); err != nil {
		return cty.NilVal, err
	}
	defer func() {
		if r := recover(); r != nil { // a decoder bug must not take the CLI down
			v, err = cty.NilVal, fmt.Errorf("malformed value: %v", r)
		}
	}()
	v, err = msgpack.Unmarshal(b, ty)
	if err != nil {
		return cty.NilVal, err
	}
	// cty's decoder builds an object from whatever keys the map holds: a
	// reply missing attributes decodes to a value of another type.
	if errs := v.Type().TestConformance(ty); len(errs) > 0 {
		return cty.NilVal, fmt.Errorf("value of type %s does not conform to the schema's %s: %v", v.Type().FriendlyName(), ty.FriendlyName(), errs[0])
	}
	return v, nil
}

// typeCache remembers concrete types with their JSON and which schema
// types they were checked to conform to. A process sees few distinct
// types; past cacheMax the cache stops growing and the work is done each
// time.
type typeCache struct {
	mu      sync.RWMutex
	byJSON  map[string]*typeEntry
	entries []*typeEntry
}

type typeEntry struct {
	ty       cty.Type
	json     []byte
	conforms []cty.Type // schema types ty was checked against, all fine
}

const cacheMax = 256

var concreteTypes = &typeCache{byJSON: map[string]*typeEntry{}}

func (c *typeCache) checked(e *typeEntry, schema cty.Type) bool {
	for _, t := range e.conforms {
		if t.Equals(schema) {
			return true
		}
	}
	return false
}

// conform checks ct against schema once per entry and schema type; the
// error says what does not conform, as msgpack with the schema type would.
func (c *typeCache) conform(e *typeEntry, schema cty.Type) error {
	c.mu.RLock()
	ok := c.checked(e, schema)
	c.mu.RUnlock()
	if ok {
		return nil
	}
	if errs := e.ty.TestConformance(schema); len(errs) > 0 {
		return fmt.Errorf("value of type %s does not conform to %s: %v", e.ty.FriendlyName(), schema.FriendlyName(), errs[0])
	}
	c.mu.Lock()
	if !c.checked(e, schema) && len(e.conforms) < 8 {
		e.conforms = append(e.conforms, schema)
	}
	c.mu.Unlock()
	return nil
}

func (c *typeCache) json(ct, schema cty.Type) ([]byte, error) {
	c.mu.RLock()
	var e *typeEntry
	for _, x := range c.entries {
		if x.ty.Equals(ct) {
			e = x
			break
		}
	}
	c.mu.RUnlock()
	if e == nil {
		tj, err := ct.MarshalJSON()
		if err != nil {
			return nil, err
		}
		e = c.add(&typeEntry{ty: ct, json: tj})
	}
	if err := c.conform(e, schema); err != nil {
		return nil, err
	}
	return e.json, nil
}

func (c *typeCache) parse(tj []byte, schema cty.Type) (cty.Type, error) {
	c.mu.RLock()
	e := c.byJSON[string(tj)]
	c.mu.RUnlock()
	if e == nil {
		var ct cty.Type
		if err := ct.UnmarshalJSON(tj); err != nil {
			return cty.NilType, fmt.Errorf("malformed value type: %v", err)
		}
		e = c.add(&typeEntry{ty: ct, json: append([]byte(nil), tj...)})
	}
	if err := c.conform(e, schema); err != nil {
		return cty.NilType, err
	}
	return e.ty, nil
}

// add returns the cached entry for e's JSON, adding e while there is room.
func (c *typeCache) add(e *typeEntry) *typeEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if x, ok := c.byJSON[string(e.json)]; ok {
		return x
	}
	if len(c.entries) < cacheMax {
		c.byJSON[string(e.json)] = e
		c.entries = append(c.entries, e)
	}
	return e
}

// marshal is msgpack.Marshal made safe for values that do not conform to
// ty (it panics on a missing attribute), and fast for the values that do
// (appendValue). Checking conformance up front
// would cost a tenth of a plan RPC; a provider bug is the rare case.
func marshal(v cty.Value, ty cty.Type) (b []byte, err error) {
	if b, ok := appendValue(make([]byte, 0, 128), v, ty); ok {
		return b, nil
	}
	defer func() {
		if r := recover(); r != nil {
			b = nil
			if errs := v.Type().TestConformance(ty); len(errs) > 0 {
				err = fmt.Errorf("value of type %s does not conform to %s: %v", v.Type().FriendlyName(), ty.FriendlyName(), errs[0])
			} else {
				err = fmt.Errorf("cannot encode value as %s: %v", ty.FriendlyName(), r)
			}
		}
	}()
	return msgpack.Marshal(v, ty)
}

// decodeValue is the inverse of encodeValue.
func decodeValue(b []byte, ty cty.Type) (cty.Value, error) {
	if len(b) == 0 {
		return cty.NullVal(ty), nil
	}
	if b[0] == concreteMarker {
		return unmarshalConcrete(b, ty)
	}
	return unmarshalChecked(b, ty)
}

func nodeToProto(n Node) *proto.Node {
	var jumps []*proto.Node
	for _, j := range n.ProxyJump {
		jumps = append(jumps, nodeToProto(j))
	}
	return &proto.Node{
		Name:           n.Name,
		Transport:      n.Transport,
		Host:           n.Host,
		HostAlias:      n.HostAlias,
		Port:           int64(n.Port),
		User:           n.User,
		IdentityFile:   n.IdentityFile,
		KnownHosts:     n.KnownHosts,
		Become:         n.Become,
		TimeoutNs:      int64(n.Timeout),
		IdentityFiles:  n.IdentityFiles,
		IdentitiesOnly: n.IdentitiesOnly,
		ProxyJump:      jumps,
	}
}

func nodeFromProto(p *proto.Node) Node {
	if p == nil {
		return Node{}
	}
	var jumps []Node
	for _, j := range p.ProxyJump {
		jumps = append(jumps, nodeFromProto(j))
	}
	return Node{
		Name:           p.Name,
		Transport:      p.Transport,
		Host:           p.Host,
		HostAlias:      p.HostAlias,
		Port:           int(p.Port),
		User:           p.User,
		IdentityFile:   p.IdentityFile,
		KnownHosts:     p.KnownHosts,
		Become:         p.Become,
		Timeout:        time.Duration(p.TimeoutNs),
		IdentityFiles:  p.IdentityFiles,
		IdentitiesOnly: p.IdentitiesOnly,
		ProxyJump:      jumps,
	}
}

func pathToProto(p cty.Path) *proto.AttributePath {
	if len(p) == 0 {
		return nil
	}
	out := &proto.AttributePath{Steps: make([]*proto.AttributePath_Step, 0, len(p))}
	for _, step := range p {
		var s proto.AttributePath_Step
		switch st := step.(type) {
		case cty.GetAttrStep:
			s.Selector = &proto.AttributePath_Step_AttributeName{AttributeName: st.Name}
		case cty.IndexStep:
			key, _ := st.Key.Unmark()
			switch {
			case !key.IsKnown() || key.IsNull():
				return out // a path into an unknown key can go no further
			case key.Type() == cty.String:
				s.Selector = &proto.AttributePath_Step_ElementKeyString{ElementKeyString: key.AsString()}
			case key.Type() == cty.Number && key.AsBigFloat().IsInt():
				i, acc := key.AsBigFloat().Int64()
				if acc != big.Exact {
					return out
				}
				s.Selector = &proto.AttributePath_Step_ElementKeyInt{ElementKeyInt: i}
			default:
				b, err := ctyjson.SimpleJSONValue{Value: key}.MarshalJSON()
				if err != nil {
					return out
				}
				s.Selector = &proto.AttributePath_Step_ElementKeyJson{ElementKeyJson: b}
			}
		default:
			return out
		}
		out.Steps = append(out.Steps, &s)
	}
	return out
}

func pathFromProto(p *proto.AttributePath) cty.Path {
	if p == nil || len(p.Steps) == 0 {
		return nil
	}
	out := make(cty.Path, 0, len(p.Steps))
	for _, s := range p.Steps {
		switch sel := s.Selector.(type) {
		case *proto.AttributePath_Step_AttributeName:
			out = append(out, cty.GetAttrStep{Name: sel.AttributeName})
		case *proto.AttributePath_Step_ElementKeyString:
			out = append(out, cty.IndexStep{Key: cty.StringVal(sel.ElementKeyString)})
		case *proto.AttributePath_Step_ElementKeyInt:
			out = append(out, cty.IndexStep{Key: cty.NumberIntVal(sel.ElementKeyInt)})
		case *proto.AttributePath_Step_ElementKeyJson:
			var v ctyjson.SimpleJSONValue
			if err := v.UnmarshalJSON(sel.ElementKeyJson); err != nil {
				return out
			}
			out = append(out, cty.IndexStep{Key: v.Value})
		default:
			return out
		}
	}
	return out
}

func pathsToProto(ps []cty.Path) []*proto.AttributePath {
	if len(ps) == 0 {
		return nil
	}
	out := make([]*proto.AttributePath, len(ps))
	for i, p := range ps {
		out[i] = pathToProto(p)
		if out[i] == nil {
			out[i] = &proto.AttributePath{}
		}
	}
	return out
}

func pathsFromProto(ps []*proto.AttributePath) []cty.Path {
	if len(ps) == 0 {
		return nil
	}
	out := make([]cty.Path, len(ps))
	for i, p := range ps {
		out[i] = pathFromProto(p)
	}
	return out
}

func diagsToProto(ds Diagnostics) []*proto.Diagnostic {
	if len(ds) == 0 {
		return nil
	}
	out := make([]*proto.Diagnostic, len(ds))
	for i, d := range ds {
		sev := proto.Diagnostic_ERROR
		if d.Severity == Warning {
			sev = proto.Diagnostic_WARNING
		}
		out[i] = &proto.Diagnostic{Severity: sev, Summary: d.Summary, Detail: d.Detail, Attribute: pathToProto(d.Path)}
	}
	return out
}

func diagsFromProto(ps []*proto.Diagnostic) Diagnostics {
	if len(ps) == 0 {
		return nil
	}
	out := make(Diagnostics, len(ps))
	for i, p := range ps {
		sev := Error // an unknown severity is treated as the safer one
		if p.Severity == proto.Diagnostic_WARNING {
			sev = Warning
		}
		out[i] = Diagnostic{Severity: sev, Summary: p.Summary, Detail: p.Detail, Path: pathFromProto(p.Attribute)}
	}
	return out
}

func schemaToProto(s *Schema) (*proto.Schema, error) {
	if s == nil {
		return nil, nil
	}
	out := &proto.Schema{ResourceTypes: make(map[string]*proto.ResourceSchema, len(s.ResourceTypes))}
	for name, rs := range s.ResourceTypes {
		if rs == nil {
			return nil, fmt.Errorf("resource type %q has a nil schema", name)
		}
		b, err := blockToProto(rs.Block)
		if err != nil {
			return nil, fmt.Errorf("resource type %q: %w", name, err)
		}
		out.ResourceTypes[name] = &proto.ResourceSchema{Version: rs.Version, Description: rs.Description, Block: b, Identity: rs.Identity, LocalPlan: rs.LocalPlan, LocalApply: rs.LocalApply, IdentityFold: rs.IdentityFold, Logs: rs.Logs, ResumesCreate: rs.ResumesCreate}
	}
	return out, nil
}

func blockToProto(b *Block) (*proto.Block, error) {
	if b == nil {
		return &proto.Block{}, nil
	}
	out := &proto.Block{
		Attributes: make(map[string]*proto.Attribute, len(b.Attributes)),
		BlockTypes: make(map[string]*proto.NestedBlock, len(b.BlockTypes)),
	}
	for name, a := range b.Attributes {
		if a == nil || a.Type == cty.NilType {
			return nil, fmt.Errorf("attribute %q has no type", name)
		}
		ty, err := ctyjson.MarshalType(a.Type)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		out.Attributes[name] = &proto.Attribute{
			Type: ty, Description: a.Description,
			Required: a.Required, Optional: a.Optional, Computed: a.Computed,
			ForceNew: a.ForceNew, Sensitive: a.Sensitive, SensitiveWith: a.SensitiveWith, Volatile: a.Volatile,
		}
	}
	for name, nb := range b.BlockTypes {
		if nb == nil {
			return nil, fmt.Errorf("block type %q is nil", name)
		}
		inner, err := blockToProto(&nb.Block)
		if err != nil {
			return nil, fmt.Errorf("block %q: %w", name, err)
		}
		out.BlockTypes[name] = &proto.NestedBlock{
			Nesting: proto.NestedBlock_NestingMode(nb.Nesting), Block: inner,
			MinItems: int64(nb.MinItems), MaxItems: int64(nb.MaxItems),
			ForceNew: nb.ForceNew, Description: nb.Description,
		}
	}
	return out, nil
}

func schemaFromProto(p *proto.Schema) (*Schema, error) {
	out := &Schema{ResourceTypes: map[string]*ResourceSchema{}}
	if p == nil {
		return out, nil
	}
	for name, rs := range p.ResourceTypes {
		b, err := blockFromProto(rs.GetBlock())
		if err != nil {
			return nil, fmt.Errorf("resource type %q: %w", name, err)
		}
		out.ResourceTypes[name] = &ResourceSchema{Version: rs.GetVersion(), Description: rs.GetDescription(), Block: b, Identity: rs.GetIdentity(), LocalPlan: rs.GetLocalPlan(), LocalApply: rs.GetLocalApply(), IdentityFold: rs.GetIdentityFold(), Logs: rs.GetLogs(), ResumesCreate: rs.GetResumesCreate()}
	}
	return out, nil
}

func blockFromProto(p *proto.Block) (*Block, error) {
	out := &Block{Attributes: map[string]*Attribute{}, BlockTypes: map[string]*NestedBlock{}}
	if p == nil {
		return out, nil
	}
	for name, a := range p.Attributes {
		ty, err := ctyjson.UnmarshalType(a.Type)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: bad type %q: %w", name, a.Type, err)
		}
		out.Attributes[name] = &Attribute{
			Type: ty, Description: a.Description,
			Required: a.Required, Optional: a.Optional, Computed: a.Computed,
			ForceNew: a.ForceNew, Sensitive: a.Sensitive, SensitiveWith: a.SensitiveWith, Volatile: a.Volatile,
		}
	}
	for name, nb := range p.BlockTypes {
		switch nb.Nesting {
		case proto.NestedBlock_SINGLE, proto.NestedBlock_LIST, proto.NestedBlock_SET:
		default:
			return nil, fmt.Errorf("block %q: unknown nesting mode %v", name, nb.Nesting)
		}
		inner, err := blockFromProto(nb.Block)
		if err != nil {
			return nil, fmt.Errorf("block %q: %w", name, err)
		}
		out.BlockTypes[name] = &NestedBlock{
			Nesting: NestingMode(nb.Nesting), Block: *inner,
			MinItems: int(nb.MinItems), MaxItems: int(nb.MaxItems),
			ForceNew: nb.ForceNew, Description: nb.Description,
		}
	}
	return out, nil
}

// impliedTypes maps every resource type of s to its value type, computed
// once: ImpliedType builds a fresh type on each call and the adapters need
// it on every request.
func impliedTypes(s *Schema) map[string]cty.Type {
	m := make(map[string]cty.Type, len(s.ResourceTypes))
	for name, rs := range s.ResourceTypes {
		m[name] = rs.Block.ImpliedType()
	}
	return m
}
