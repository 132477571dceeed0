package state

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Record format 2 (FormatVersion 2): every stored record is one compact
// binary record instead of a JSON document. The first byte tells them
// apart: recordTag for format 2, '{' for a format-1 JSON record, which
// every reader still decodes (a file or etcd prefix written by an older
// sparkform is read as it is and rewritten as format 2 by the next writer).
//
// A resource record (the value of a key in resources, or the prior record
// in a history entry) is
//
//	byte    recordTag
//	uvarint flags         flagTainted | flagInline | flagSensitive
//	bytes   address       empty: the address is the record's key
//	ref     type, provider, node, value type
//	varint  schema version
//	varint  updated at    Unix nanoseconds, 0 for none
//	bytes   value, private
//	uvarint n, then n × bytes: dependencies
//	uvarint n, then n × bytes: sensitive attributes (with flagSensitive
//	                           only; format 3)
//
// where bytes is a uvarint length and that many bytes, and a ref is a
// string that many records share: in the local file a uvarint id into the
// interned bucket (0: empty), so the node details, the resource type and
// the value's cty type are stored once per file, not once per instance;
// with flagInline (etcd, and records handed to other backends) a ref is
// spelled out as bytes.
const (
	recordTag     = 0x02
	flagTainted   = 1 << 0
	flagInline    = 1 << 1
	flagSensitive = 1 << 2
)

// interner assigns ids to refs (the local file's interned bucket).
type interner interface {
	id(b []byte) (uint64, error)
}

// strs resolves ref ids when decoding (nil for inline records).
type strs interface {
	get(id uint64) (refEntry, bool)
}

// refEntry is one interned string, kept both ways: records share the
// same bytes (Node, ValueType) and the same string (Type, Provider).
type refEntry struct {
	s string
	b []byte
}

type encoder struct {
	buf []byte
	in  interner // nil: inline
	err error
}

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *encoder) bytes(b []byte)   { e.uvarint(uint64(len(b))); e.buf = append(e.buf, b...) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }

func (e *encoder) ref(b []byte) {
	if e.in == nil {
		e.bytes(b)
		return
	}
	if len(b) == 0 {
		e.uvarint(0)
		return
	}
	id, err := e.in.id(b)
	if err != nil && e.err == nil {
		e.err = err
	}
	e.uvarint(id)
}

// appendResource encodes r (already checked) after buf. key is the
// address the record is stored under: the address is then not repeated.
func appendResource(buf []byte, r *Resource, key string, in interner) ([]byte, error) {
	e := encoder{buf: buf, in: in}
	flags := uint64(0)
	if r.Status == StatusTainted {
		flags |= flagTainted
	}
	if in == nil {
		flags |= flagInline
	}
	if len(r.SensitiveAttrs) > 0 {
		flags |= flagSensitive
	}
	e.buf = append(e.buf, recordTag)
	e.uvarint(flags)
	if r.Address == key {
		e.uvarint(0)
	} else {
		e.str(r.Address)
	}
	e.ref([]byte(r.Type))
	e.ref([]byte(r.Provider))
	e.ref(r.Node)
	e.ref(r.ValueType)
	e.varint(r.SchemaVersion)
	var at int64
	if !r.UpdatedAt.IsZero() {
		at = r.UpdatedAt.UnixNano()
	}
	e.varint(at)
	e.bytes(r.Value)
	e.bytes(r.Private)
	e.uvarint(uint64(len(r.Dependencies)))
	for _, d := range r.Dependencies {
		e.str(d)
	}
	if len(r.SensitiveAttrs) > 0 {
		e.uvarint(uint64(len(r.SensitiveAttrs)))
		for _, a := range r.SensitiveAttrs {
			e.str(a)
		}
	}
	return e.buf, e.err
}

type decoder struct {
	b   []byte
	bad string
}

func (d *decoder) fail(what string) {
	if d.bad == "" {
		d.bad = what
	}
	d.b = nil
}

func (d *decoder) uvarint(what string) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes returns the next length-prefixed field, copied (the input may be
// bbolt's mapping), nil when empty.
func (d *decoder) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.bad != "" {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]byte, n)
	copy(out, d.b)
	d.b = d.b[n:]
	return out
}

func (d *decoder) str(what string) string {
	n := d.uvarint(what)
	if d.bad != "" || n > uint64(len(d.b)) {
		d.fail(what)
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) ref(what string, inline bool, st strs) refEntry {
	if inline {
		b := d.bytes(what)
		return refEntry{s: string(b), b: b}
	}
	id := d.uvarint(what)
	if id == 0 || d.bad != "" {
		return refEntry{}
	}
	if st == nil {
		d.fail(what + " (an interned id where none can be)")
		return refEntry{}
	}
	e, ok := st.get(id)
	if !ok {
		why := "is missing"
		if ts, isTx := st.(*txStrs); isTx && ts.bad[id] != "" {
			why = "is damaged: " + ts.bad[id]
		}
		d.fail(fmt.Sprintf("%s (interned id %d %s)", what, id, why))
	}
	return e
}

// decodeResource decodes a stored resource record of either format. key
// is the address it is stored under; st resolves interned refs.
func decodeResource(data []byte, key string, st strs) (*Resource, error) {
	r := new(Resource)
	if len(data) > 0 && data[0] != recordTag {
		if err := json.Unmarshal(data, r); err != nil {
			return nil, corrupt(key, err.Error())
		}
		return r, nil
	}
	d := decoder{b: data}
	if len(d.b) == 0 {
		return nil, corrupt(key, "empty record")
	}
	d.b = d.b[1:]
	flags := d.uvarint("flags")
	if flags&^(flagTainted|flagInline|flagSensitive) != 0 {
		return nil, corrupt(key, fmt.Sprintf("unknown flags 0x%x", flags))
	}
	inline := flags&flagInline != 0
	r.Address = d.str("address")
	if r.Address == "" {
		r.Address = key
	}
	r.Type = d.ref("type", inline, st).s
	r.Provider = d.ref("provider", inline, st).s
	r.Node = d.ref("node", inline, st).b
	r.ValueType = d.ref("value type", inline, st).b
	if err := CheckValueType(r.ValueType); err != nil && d.bad == "" {
		d.fail("value type: " + err.Error())
	}
	r.SchemaVersion = d.varint("schema version")
	if at := d.varint("updated at"); at != 0 {
		r.UpdatedAt = time.Unix(0, at).UTC()
	}
	r.Value = d.bytes("value")
	r.Private = d.bytes("private")
	n := d.uvarint("dependencies")
	if n > uint64(len(d.b)) { // each takes at least one byte
		d.fail("dependencies")
	}
	if n > 0 && d.bad == "" {
		r.Dependencies = make([]string, n)
		for i := range r.Dependencies {
			r.Dependencies[i] = d.str("dependency")
		}
	}
	if flags&flagSensitive != 0 {
		n := d.uvarint("sensitive attributes")
		if n == 0 || n > uint64(len(d.b)) { // the flag says some; each takes a byte
			d.fail("sensitive attributes")
		}
		if d.bad == "" {
			r.SensitiveAttrs = make([]string, n)
			for i := range r.SensitiveAttrs {
				r.SensitiveAttrs[i] = d.str("sensitive attribute")
			}
		}
	}
	switch {
	case d.bad != "":
		return nil, corrupt(key, "bad "+d.bad)
	case len(d.b) != 0:
		return nil, corrupt(key, fmt.Sprintf("%d bytes after the record", len(d.b)))
	}
	r.Status = StatusReady
	if flags&flagTainted != 0 {
		r.Status = StatusTainted
	}
	return r, nil
}

func corrupt(key, why string) error {
	return &corruptError{key: key, why: why}
}

// History entry (the value under addr NUL serial; the serial is the key's):
//
//	byte    recordTag
//	byte    action        index into historyActions
//	varint  time          Unix nanoseconds
//	bytes   peer
//	bytes   prior         a stored resource record; empty: none
var historyActions = []string{HistoryCreate, HistoryUpdate, HistoryDelete, HistoryMoveOut, HistoryMoveIn}

func encodeHistory(t time.Time, action, peer string, prior []byte) []byte {
	a := 0xff
	for i, s := range historyActions {
		if s == action {
			a = i
		}
	}
	e := encoder{buf: make([]byte, 0, 16+len(peer)+len(prior))}
	e.buf = append(e.buf, recordTag, byte(a))
	e.varint(t.UnixNano())
	e.str(peer)
	e.bytes(prior)
	return e.buf
}

// decodeHistory decodes a history value of either format.
func decodeHistory(data []byte, addr string, serial uint64, st strs) (*HistoryEntry, error) {
	e := &HistoryEntry{Address: addr, Serial: serial}
	var prior []byte
	if len(data) > 0 && data[0] != recordTag {
		var rec historyRecordV1
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, corrupt(addr, err.Error())
		}
		e.Serial, e.Time, e.Action, e.Peer = rec.Serial, rec.Time, rec.Action, rec.Peer
		if len(rec.Prior) > 0 && string(rec.Prior) != "null" {
			prior = rec.Prior
		}
	} else {
		d := decoder{b: data}
		if len(d.b) < 2 || int(d.b[1]) >= len(historyActions) {
			return nil, corrupt(addr, "bad history entry")
		}
		e.Action = historyActions[d.b[1]]
		d.b = d.b[2:]
		e.Time = time.Unix(0, d.varint("time")).UTC()
		e.Peer = d.str("peer")
		prior = d.bytes("prior")
		if d.bad != "" || len(d.b) != 0 {
			return nil, corrupt(addr, "bad history entry")
		}
	}
	if prior != nil {
		r, err := decodeResource(prior, addr, st)
		if err != nil {
			return nil, err
		}
		e.Prior = r
	}
	return e, nil
}

// historyRecordV1 is a format-1 history value.
type historyRecordV1 struct {
	Serial uint64          `json:"serial"`
	Time   time.Time       `json:"time"`
	Action string          `json:"action"`
	Peer   string          `json:"peer,omitempty"`
	Prior  json.RawMessage `json:"prior"`
}

// Journal intent:
//
//	byte    recordTag
//	bytes   action
//	varint  started       Unix nanoseconds
//	varint  pid
//	bytes   resource      a resource record (stored under the intent's key); empty: none
func appendIntent(buf []byte, in *Intent, it interner) ([]byte, error) {
	e := encoder{buf: buf}
	e.buf = append(e.buf, recordTag)
	e.str(in.Action)
	e.varint(in.Started.UnixNano())
	e.varint(int64(in.PID))
	if in.Resource == nil {
		e.uvarint(0)
		return e.buf, nil
	}
	rec, err := appendResource(nil, in.Resource, in.Address, it)
	if err != nil {
		return nil, err
	}
	e.bytes(rec)
	return e.buf, nil
}

func decodeIntent(data []byte, key string, st strs) (*Intent, error) {
	in := new(Intent)
	if len(data) > 0 && data[0] != recordTag {
		if err := json.Unmarshal(data, in); err != nil {
			return nil, corrupt(key, err.Error())
		}
		return in, nil
	}
	d := decoder{b: data}
	if len(d.b) == 0 {
		return nil, corrupt(key, "empty intent")
	}
	d.b = d.b[1:]
	in.Address = key
	in.Action = d.str("action")
	in.Started = time.Unix(0, d.varint("started")).UTC()
	pid := d.varint("pid")
	rec := d.bytes("resource")
	if d.bad != "" || len(d.b) != 0 || pid < math.MinInt32 || pid > math.MaxInt32 {
		return nil, corrupt(key, "bad intent")
	}
	in.PID = int(pid)
	if rec != nil {
		r, err := decodeResource(rec, key, st)
		if err != nil {
			return nil, err
		}
		in.Resource = r
	}
	return in, nil
}

// Codec functions for other backends (state/etcdstore): the same records
// with every ref inline.

// EncodeResource encodes r as a format-2 record with its refs inline,
// stored under the key addr (r.Address is then not repeated).
func EncodeResource(r *Resource, addr string) ([]byte, error) {
	if err := checkResource(r); err != nil {
		return nil, err
	}
	return appendResource(nil, r, addr, nil)
}

// DecodeResource decodes a record stored under addr, of either format.
// Interned refs are an error: only the local file has them.
func DecodeResource(data []byte, addr string) (*Resource, error) {
	return decodeResource(data, addr, nil)
}

// EncodeHistory encodes a history entry (prior: a stored record or nil).
func EncodeHistory(t time.Time, action, peer string, prior []byte) []byte {
	return encodeHistory(t, action, peer, prior)
}

// DecodeHistory decodes a history entry of either format.
func DecodeHistory(data []byte, addr string, serial uint64) (*HistoryEntry, error) {
	return decodeHistory(data, addr, serial, nil)
}

// EncodeIntent encodes a journal intent with its refs inline.
func EncodeIntent(in *Intent) ([]byte, error) {
	return appendIntent(nil, in, nil)
}

// DecodeIntent decodes an intent stored under addr, of either format.
func DecodeIntent(data []byte, addr string) (*Intent, error) {
	return decodeIntent(data, addr, nil)
}

var errNoInterned = errors.New("state: the interned bucket is missing")
