package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	ctymsgpack "github.com/zclconf/go-cty/cty/msgpack"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/state"
)

// stateValues are values of the shapes providers return: objects with
// dynamic attributes, maps, lists, sets, tuples, numbers beyond float64,
// nulls and unknowns (stored as nulls), marks (dropped).
func stateValues() map[string]cty.Value {
	big, _ := new(big.Float).SetString("123456789012345678901234567890.123456789")
	return map[string]cty.Value{
		"data": cty.ObjectVal(map[string]cty.Value{
			"id": cty.StringVal("42cdc60b4ad6b1f6"), "input": cty.StringVal("seed-0"),
			"output": cty.StringVal("seed-0"), "triggers_replace": cty.NullVal(cty.DynamicPseudoType),
		}),
		"nested": cty.ObjectVal(map[string]cty.Value{
			"params": cty.MapVal(map[string]cty.Value{"modeset": cty.StringVal("1"), "fbdev": cty.StringVal("0")}),
			"files":  cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
			"set":    cty.SetVal([]cty.Value{cty.NumberIntVal(3), cty.NumberIntVal(1)}),
			"tuple":  cty.TupleVal([]cty.Value{cty.True, cty.StringVal("x"), cty.NumberFloatVal(0.5)}),
			"empty":  cty.ListValEmpty(cty.String),
			"big":    cty.NumberVal(big),
			"dyn":    cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(-7)}),
			"nulls":  cty.NullVal(cty.Map(cty.String)),
		}),
		"marked":  cty.ObjectVal(map[string]cty.Value{"secret": cty.StringVal("s").Mark("sensitive")}),
		"unknown": cty.ObjectVal(map[string]cty.Value{"id": cty.UnknownVal(cty.String), "n": cty.NumberIntVal(1)}),
		"null":    cty.NullVal(cty.Object(map[string]cty.Type{"id": cty.String})),
	}
}

// The compact state encoding gives back what the JSON one (state format
// 1) gave, and JSONForm turns one into the other.
func TestStateValueEncodings(t *testing.T) {
	for name, v := range stateValues() {
		t.Run(name, func(t *testing.T) {
			obj := &stateObject{Addr: "sparkform_data.x", Type: "sparkform_data", Value: v, Node: sdk.Node{Name: "n"}}
			rec, err := obj.record()
			if err != nil {
				t.Fatal(err)
			}
			if rec.ValueType == nil {
				t.Fatalf("record() did not use the compact form")
			}
			got, err := ResourceValue(rec)
			if err != nil {
				t.Fatal(err)
			}
			js, err := EncodeValue(v)
			if err != nil {
				t.Fatal(err)
			}
			want, err := DecodeValue(js)
			if err != nil {
				t.Fatal(err)
			}
			if !got.RawEquals(want) {
				t.Errorf("compact: %#v\nJSON:    %#v", got, want)
			}
			jf, err := JSONForm(rec)
			if err != nil {
				t.Fatal(err)
			}
			if jf.ValueType != nil || string(jf.Value) != string(js) {
				t.Errorf("JSONForm: %s, want %s", jf.Value, js)
			}
			back, err := stateObjectFromRecord(rec)
			if err != nil || back.Node.Name != "n" || !back.Value.RawEquals(want) {
				t.Errorf("stateObjectFromRecord: %+v, %v", back, err)
			}
		})
	}
}

// BenchmarkDecodeState: reading one sparkform_data instance's record into
// the engine's object (what every plan does per instance), in the state
// format 1 encoding (cty JSON with the type in every value) and the
// compact one (msgpack, type shared). -benchmem shows the allocations.
func BenchmarkDecodeState(b *testing.B) {
	v := stateValues()["data"]
	obj := &stateObject{Addr: "sparkform_data.c0_1", Type: "sparkform_data", Provider: "sparkform", Value: v,
		Node: sdk.Node{Name: "node.local", Transport: "local", Port: 22, User: "root"}, Dependencies: []string{"sparkform_data.c0_0"}}
	compact, err := obj.record()
	if err != nil {
		b.Fatal(err)
	}
	format1 := *compact
	format1.ValueType = nil
	if format1.Value, err = EncodeValue(v); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rec  *state.Resource
	}{{"format=1", &format1}, {"format=2", compact}} {
		b.Run(c.name, func(b *testing.B) {
			nodes := nodeCache{}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeStateObject(c.rec, nodes); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(c.rec.Value)+len(c.rec.ValueType)), "value-bytes")
		})
	}
}

// BenchmarkEncodeState: making one sparkform_data instance's record (what
// apply does twice per instance: the journal intent and the result).
func BenchmarkEncodeState(b *testing.B) {
	v := stateValues()["data"]
	obj := &stateObject{Addr: "sparkform_data.c0_1", Type: "sparkform_data", Provider: "sparkform", Value: v,
		Node: sdk.Node{Name: "node.local", Transport: "local", Port: 22, User: "root"}, Dependencies: []string{"sparkform_data.c0_0"}}
	b.Run("format=1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeValue(obj.Value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("format=2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := obj.record(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A state of format 1 (state/testdata/format1.db, JSON values), opened
// for writing with CompactValue as the CLI opens it, is converted with
// its values in the binary form: its records read back the same values
// (instances, the journal intent, history priors), and a state pushed
// from a snapshot (JSON values) is stored binary as well.
func TestFormat1StateGetsBinaryValues(t *testing.T) {
	data, err := os.ReadFile("../state/testdata/format1.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	values := func(s state.Store, wantBinary bool) map[string]cty.Value {
		t.Helper()
		snap, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]cty.Value{}
		add := func(key string, r *state.Resource) {
			if wantBinary != (r.ValueType != nil) {
				t.Errorf("%s: value type %s, want binary %v", key, r.ValueType, wantBinary)
			}
			v, err := ResourceValue(r)
			if err != nil {
				t.Fatal(err)
			}
			out[key] = v
		}
		for _, r := range snap.Resources {
			add(r.Address, r)
			hs, err := s.History(r.Address)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hs {
				if h.Prior != nil {
					add(fmt.Sprintf("%s@%d", r.Address, h.Serial), h.Prior)
				}
			}
		}
		for _, in := range snap.Intents {
			add("intent "+in.Address, in.Resource)
		}
		return out
	}
	ro, err := state.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	before := values(ro, false)
	ro.Close()
	s, err := state.Open(path, state.Options{ConvertValue: CompactValue})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after := values(s, true)
	if len(before) != 5 || len(after) != len(before) {
		t.Fatalf("%d values before, %d after", len(before), len(after))
	}
	for k, v := range before {
		if !after[k].RawEquals(v) {
			t.Errorf("%s: %#v, was %#v", k, after[k], v)
		}
	}
	// state push: a snapshot's JSON values are stored binary.
	p := &state.Portable{Version: state.PortableVersion, Lineage: "11111111-2222-4333-8444-555555555555", Serial: 9}
	snap, _ := s.Snapshot()
	for _, r := range snap.Resources {
		jf, err := JSONForm(r)
		if err != nil {
			t.Fatal(err)
		}
		p.Resources = append(p.Resources, jf)
	}
	if err := s.Replace(p); err != nil {
		t.Fatal(err)
	}
	got, err := s.Resources()
	if err != nil || len(got) != 3 {
		t.Fatalf("%d resources after Replace, %v", len(got), err)
	}
	for _, r := range got {
		v, err := ResourceValue(r)
		if r.ValueType == nil || err != nil || !v.RawEquals(before[r.Address]) {
			t.Errorf("%s after Replace: type %s, %#v, %v", r.Address, r.ValueType, v, err)
		}
	}
}

// encodeStateValueRef is encodeStateValue as it was before scanValue: a
// ContainsMarked walk, UnmarkDeep, IsWhollyKnown, and a cty.Transform
// that turns unknowns into nulls.
func encodeStateValueRef(v cty.Value) (typ, data []byte, err error) {
	if v.ContainsMarked() {
		v, _ = v.UnmarkDeep()
	}
	if !v.IsWhollyKnown() {
		v, _ = cty.Transform(v, func(_ cty.Path, v cty.Value) (cty.Value, error) {
			if !v.IsKnown() {
				return cty.NullVal(v.Type()), nil
			}
			return v, nil
		})
	}
	if typ, err = ctyjson.MarshalType(v.Type()); err != nil {
		return nil, nil, err
	}
	data, err = ctymsgpack.Marshal(v, v.Type())
	return typ, data, err
}

// The one-walk encoding stores the same bytes as the walks it replaced,
// for values with marks and unknowns at every depth: state contents do
// not change.
func TestEncodeStateValueSameBytes(t *testing.T) {
	vals := stateValues()
	unk := cty.UnknownVal(cty.String)
	vals["planned"] = cty.ObjectVal(map[string]cty.Value{"id": unk, "input": cty.StringVal("seed-0"),
		"output": cty.UnknownVal(cty.DynamicPseudoType), "triggers_replace": cty.NullVal(cty.DynamicPseudoType)})
	vals["deep"] = cty.ObjectVal(map[string]cty.Value{
		"list":  cty.ListVal([]cty.Value{cty.StringVal("a"), unk}),
		"map":   cty.MapVal(map[string]cty.Value{"k": unk, "j": cty.StringVal("x").Mark("sensitive")}),
		"set":   cty.SetVal([]cty.Value{cty.StringVal("a"), unk}),
		"tuple": cty.TupleVal([]cty.Value{unk.Mark("sensitive"), cty.NumberIntVal(2)}),
		"obj":   cty.ObjectVal(map[string]cty.Value{"in": cty.ObjectVal(map[string]cty.Value{"x": unk})}),
	}).Mark("outer")
	vals["marked-only"] = cty.ObjectVal(map[string]cty.Value{"a": cty.ListVal([]cty.Value{cty.StringVal("s").Mark("sensitive")})})
	vals["unknown-top"] = cty.UnknownVal(cty.Object(map[string]cty.Type{"id": cty.String}))
	vals["unknown-marked"] = cty.UnknownVal(cty.String).Mark("sensitive")
	for name, v := range vals {
		t.Run(name, func(t *testing.T) {
			wantTyp, want, err := encodeStateValueRef(v)
			if err != nil {
				t.Fatal(err)
			}
			typ, got, err := encodeStateValue("test_"+name, v)
			if err != nil {
				t.Fatal(err)
			}
			if string(typ) != string(wantTyp) || string(got) != string(want) {
				t.Errorf("encodeStateValue = %s %x, want %s %x", typ, got, wantTyp, want)
			}
		})
	}
}

// BenchmarkEncodeIntent: the journal intent apply writes before creating
// one sparkform_data instance of a chain: its reviewed value (input and
// computed attributes unknown) completed from configuration, the rest
// stored as null.
func BenchmarkEncodeIntent(b *testing.B) {
	reviewed := cty.ObjectVal(map[string]cty.Value{"id": cty.UnknownVal(cty.String), "input": cty.UnknownVal(cty.String),
		"output": cty.UnknownVal(cty.DynamicPseudoType), "triggers_replace": cty.NullVal(cty.DynamicPseudoType)})
	cfg := cty.ObjectVal(map[string]cty.Value{"id": cty.NullVal(cty.String), "input": cty.StringVal("42cdc60b4ad6b1f6"),
		"output": cty.NullVal(cty.DynamicPseudoType), "triggers_replace": cty.NullVal(cty.DynamicPseudoType)})
	obj := &stateObject{Addr: "sparkform_data.c0_1", Type: "sparkform_data", Provider: "sparkform",
		Node: sdk.Node{Name: "node.local", Transport: "local", Port: 22, User: "root"}, Dependencies: []string{"sparkform_data.c0_0"}}
	b.ReportAllocs()
	for b.Loop() {
		obj.Value = intentValue(reviewed, cfg)
		if _, err := newIntent(obj, "create"); err != nil {
			b.Fatal(err)
		}
	}
}

// loadState takes from the previous load only the values whose record
// bytes did not change: a record written in between (here a new value of
// the same type, and one removed) reads as it is now.
func TestLoadStateReusesOnlyUnchangedValues(t *testing.T) {
	s, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := New(Options{Store: s})
	put := func(addr, id string) {
		t.Helper()
		v := stateValues()["data"]
		m := v.AsValueMap()
		m["id"] = cty.StringVal(id)
		obj := &stateObject{Addr: addr, Type: "sparkform_data", Provider: "sparkform", Value: cty.ObjectVal(m), Node: sdk.Node{Name: "n"}}
		if err := e.putObject(obj); err != nil {
			t.Fatal(err)
		}
	}
	put("sparkform_data.a", "a1")
	put("sparkform_data.b", "b1")
	put("sparkform_data.c", "c1")
	if _, diags := e.loadState(); diags.HasErrors() {
		t.Fatal(diags)
	}
	put("sparkform_data.a", "a2")
	if err := s.DeleteResource("sparkform_data.c"); err != nil {
		t.Fatal(err)
	}
	objs, diags := e.loadState()
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for addr, want := range map[string]string{"sparkform_data.a": "a2", "sparkform_data.b": "b1"} {
		if got := objs[addr].Value.GetAttr("id"); !got.RawEquals(cty.StringVal(want)) {
			t.Errorf("%s id = %#v, want %q", addr, got, want)
		}
	}
	if len(objs) != 2 {
		t.Errorf("loaded %d objects, want 2", len(objs))
	}
}

// BenchmarkScanValue: looking for marks and unknowns in a sparkform_data
// value, what encoding every record starts with.
func BenchmarkScanValue(b *testing.B) {
	v := stateValues()["data"]
	b.ReportAllocs()
	for b.Loop() {
		if m, u := scanValue(v); m || u {
			b.Fatal("found marks or unknowns")
		}
	}
}

// intentLog is a store that keeps every journal intent written to it.
type intentLog struct {
	*state.BoltStore
	mu      sync.Mutex
	intents []*state.Intent
}

func (l *intentLog) PutIntent(in *state.Intent) error {
	l.mu.Lock()
	l.intents = append(l.intents, in)
	l.mu.Unlock()
	return l.BoltStore.PutIntent(in)
}

// A destroy's intent takes the stored bytes of a value refresh left as
// state holds it, and encodes the one refresh found changed (d, edited on
// the node): every intent holds exactly the encoding of what the plan
// deletes.
func TestDestroyIntentRecordsPlannedValue(t *testing.T) {
	b := newBed(t)
	r := b.cfg("chain")
	r.converge()
	writeObj(t, b.tp, b.attr(thD, "id"), "edited")
	log := &intentLog{BoltStore: b.st}
	r.e.store = log
	p := r.plan(PlanOptions{Mode: plans.DestroyMode})
	r.apply(p)
	before := map[string]*plans.ResourceChange{}
	for _, c := range p.Changes {
		before[c.Addr] = c
	}
	if got := before[thD].Before.GetAttr("value").AsString(); got != "edited" {
		t.Fatalf("plan's prior value of d = %q, want the edited one", got)
	}
	if len(log.intents) != len(p.Changes) {
		t.Fatalf("%d intents for %d changes", len(log.intents), len(p.Changes))
	}
	for _, in := range log.intents {
		c := before[in.Address]
		typ, data, err := encodeStateValue(c.Type, c.Before)
		if err != nil {
			t.Fatal(err)
		}
		if string(in.Resource.ValueType) != string(typ) || string(in.Resource.Value) != string(data) {
			t.Errorf("intent for %s holds %x, want %x (the encoding of %#v)", in.Address, in.Resource.Value, data, c.Before)
		}
	}
}

// TestResourceOfInstanceMatchesParse: the resource of an instance address
// read from its end is what parsing the address gives, for addresses as
// addrs writes them with keys that hold quotes, backslashes, brackets,
// '#', template sequences, newlines and non-ASCII text, at one and two
// module depths, deposed or not; and an address that is not canonical is
// parsed, not read from its end.
func TestResourceOfInstanceMatchesParse(t *testing.T) {
	keys := []addrs.InstanceKey{addrs.NoKey, addrs.IntKey(0), addrs.IntKey(12),
		addrs.StringKey(""), addrs.StringKey("a"), addrs.StringKey(`a"]`), addrs.StringKey(`x["y`),
		addrs.StringKey(`back\slash\`), addrs.StringKey(`\"`), addrs.StringKey("a#b"), addrs.StringKey("#deposed"),
		addrs.StringKey("${x}%{y}"), addrs.StringKey("line\nbreak\t"), addrs.StringKey("é ☃ \u200b"), addrs.StringKey(`"]["`)}
	parsed := func(addr string) string {
		a := strings.TrimSuffix(addr, deposedSuffix)
		ri, d := addrs.ParseResourceInstance(a)
		if d.HasErrors() {
			t.Fatalf("%s does not parse: %s", a, diagString(d))
		}
		return ri.Resource.String()
	}
	n := 0
	for _, mk := range keys {
		for _, mk2 := range keys[:4] {
			for _, k := range keys {
				mods := []addrs.ModuleInstance{addrs.ModuleInstance{}.Child("m", mk), addrs.ModuleInstance{}.Child("m", mk).Child("inner-1", mk2)}
				for _, mod := range mods {
					r := addrs.Resource{Module: mod.String(), Type: "sparkform_data", Name: "r_2"}
					for _, addr := range []string{r.Instance(k).String(), r.Instance(k).String() + deposedSuffix} {
						if got, want := resourceOfInstance(addr), parsed(addr); got != want {
							t.Errorf("resourceOfInstance(%q) = %q; parsing gives %q", addr, got, want)
						}
						n++
					}
				}
			}
		}
	}
	// Keys written otherwise: the same resource as parsing gives.
	for _, addr := range []string{`module.m["k"].sparkform_data.r[ 1 ]`, `module.m["k"].sparkform_data.r[01]`,
		`module.m[0].sparkform_data.r[ "a" ]`, `module.m.sparkform_data.r["a\u0041"]`, `module.m[01].sparkform_data.r[1]`,
		`module.m[007].module.n["x"].sparkform_data.r`} {
		if got, want := resourceOfInstance(addr), parsed(addr); got != want {
			t.Errorf("resourceOfInstance(%q) = %q; parsing gives %q", addr, got, want)
		}
	}
	t.Logf("%d addresses", n)
}

// TestTargetWithHashInModuleKeys: -target names a resource in a module
// instance whose keys hold '#', and a destroy plan takes exactly its
// instances. Before, an address was cut at its first '#' (taken for a
// deposed suffix) when its resource was looked up: the instances with
// '#' in a key belonged to no resource, and the targeted destroy left
// them out.
func TestTargetWithHashInModuleKeys(t *testing.T) {
	b := newBed(t)
	r := b.cfg("hashkey")
	r.converge()
	if n := len(b.addrs()); n != 4 {
		t.Fatalf("state holds %d instances after apply; want 4: %v", n, b.addrs())
	}
	for target, want := range map[string][]string{
		`module.m["llama#2"].sftest_thing.t`: {`module.m["llama#2"].sftest_thing.t["a#b"]`, `module.m["llama#2"].sftest_thing.t["c"]`},
		`module.m["plain"].sftest_thing.t`:   {`module.m["plain"].sftest_thing.t["a#b"]`, `module.m["plain"].sftest_thing.t["c"]`},
	} {
		p := r.plan(PlanOptions{Mode: plans.DestroyMode, Targets: mustTargets(target)})
		var got []string
		for _, c := range p.Changes {
			if c.Action != plans.Delete {
				t.Errorf("-target %s: %s planned %s; want delete", target, c.Addr, c.Action)
			}
			got = append(got, c.Addr)
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("-target %s destroys %q; want %q", target, got, want)
		}
	}
}

// TestNodeJSONMemo: records on one node share its JSON, and the memo
// tells apart nodes that differ in any field, a slice's element included,
// even when the caller changes its slices afterwards.
func TestNodeJSONMemo(t *testing.T) {
	var m nodeJSONMemo
	want := func(n sdk.Node) []byte {
		b, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := sdk.Node{Name: "node.a", Transport: "ssh", Host: "h", IdentityFiles: []string{"k1"},
		ProxyJump: []sdk.Node{{Name: "j", Host: "jh", IdentityFiles: []string{"jk"}}}}
	first, err := m.marshal(&a)
	if err != nil || !bytes.Equal(first, want(a)) {
		t.Fatalf("marshal = %s, %v; want %s", first, err, want(a))
	}
	aWant := want(a)
	// The caller's slices change: the memo must not see it.
	a.IdentityFiles[0] = "k2"
	a.ProxyJump[0].IdentityFiles[0] = "jk2"
	got, _ := m.marshal(&a)
	if !bytes.Equal(got, want(a)) {
		t.Fatalf("after the caller changed its slices, marshal = %s; want %s", got, want(a))
	}
	a.IdentityFiles[0], a.ProxyJump[0].IdentityFiles[0] = "k1", "jk"
	again, _ := m.marshal(&a)
	if !bytes.Equal(again, aWant) {
		t.Fatalf("marshal = %s; want %s", again, aWant)
	}
	if &again[0] != &first[0] {
		t.Error("the same node marshalled twice: the memo did not share its JSON")
	}
	b := a
	b.Become = true
	if got, _ := m.marshal(&b); !bytes.Equal(got, want(b)) {
		t.Errorf("a node differing in Become got %s; want %s", got, want(b))
	}
	// Past maxNodeJSONs, nodes are still marshalled, just not kept.
	for i := range maxNodeJSONs + 5 {
		n := sdk.Node{Name: fmt.Sprintf("node.n%d", i), Transport: "local"}
		if got, _ := m.marshal(&n); !bytes.Equal(got, want(n)) {
			t.Fatalf("node %d: %s; want %s", i, got, want(n))
		}
	}
	if len(m.nodes) > maxNodeJSONs {
		t.Errorf("the memo holds %d nodes, want at most %d", len(m.nodes), maxNodeJSONs)
	}
}

// A state record whose value type nests deep (85 KB of ["list",...]) took
// gigabytes to decode (4.2 GB allocated for 90 KB, measured before the
// bound): it is refused before decoding, naming the bound, with a few
// bytes allocated. Issue 31, section 2.
func TestDeepValueTypeRefusedCheaply(t *testing.T) {
	for name, js := range map[string]string{
		"list":   strings.Repeat(`["list",`, 10600) + `"string"` + strings.Repeat(`]`, 10600),
		"object": strings.Repeat(`["object",{"a":`, 5300) + `"string"` + strings.Repeat(`}]`, 5300),
	} {
		t.Run(name, func(t *testing.T) {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			_, err := ResourceValue(&state.Resource{Address: "x.y", ValueType: []byte(js), Value: []byte{0xc0}})
			runtime.ReadMemStats(&m1)
			if err == nil || !strings.Contains(err.Error(), "nests more than 64 levels") {
				t.Fatalf("%d-byte value type: %v, want the nesting bound", len(js), err)
			}
			if got := m1.TotalAlloc - m0.TotalAlloc; got > 1<<20 {
				t.Errorf("refusing it allocated %d bytes", got)
			}
		})
	}
	// A real nesting (an object of lists of objects) is well inside.
	if _, err := stateType([]byte(`["object",{"a":["list",["object",{"b":["map","string"]}]]}]`)); err != nil {
		t.Fatal(err)
	}
}
