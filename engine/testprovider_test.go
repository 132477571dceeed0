package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// This file is a TEST PROVIDER, "sftest", used only by the engine tests.
// Its one resource type, sftest_thing, keeps each object as a real file
// (DIR/ID.json) so refresh observes real drift, appends every finished
// operation to a real log file so tests can check order, and fails,
// half-fails or sleeps when its config says so.

const testThing = "sftest_thing"

var thingSchema = &sdk.ResourceSchema{
	Description: "TEST PROVIDER object: a JSON file in the provider's directory.",
	Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
		"value": {Type: cty.String, Optional: true, Description: "changes update in place"},
		"key":   {Type: cty.String, Optional: true, ForceNew: true, Description: "changes replace"},
		// fail lists operations that fail: create, update, delete, or
		// create-partial (the object is made, then an error: tainted).
		"fail":     {Type: cty.String, Optional: true},
		"sleep_ms": {Type: cty.Number, Optional: true},
		"id":       {Type: cty.String, Computed: true},
		// owns is the object's identity on its node (Identity below).
		"owns": {Type: cty.String, Optional: true},
	}},
	Identity:     []string{"owns"},
	IdentityFold: map[string]string{"owns": sdk.FoldDashUnderscore},
}

var thingType = thingSchema.Block.ImpliedType()

// thingFile is what is on "the node" for one object.
type thingFile struct {
	Value *string `json:"value"`
	Key   *string `json:"key"`
}

// testProvider is the sftest provider's state: where objects live and
// where operations are logged.
type testProvider struct {
	dir     string
	logPath string
	nextID  atomic.Int64
	logMu   sync.Mutex
	// onApply, when set, runs after an apply's work and before it returns,
	// with the operation and address (tests look at state mid-apply).
	onApply func(op, addr string)
	// planValue, when set, is the value every plan gives "value" instead
	// of the configured one (a provider whose plan moved on).
	planValue atomic.Pointer[string]
	// readFails, when set, makes a read fail as a whole with this
	// summary, naming every instance's value (a provider whose batch
	// error repeats what it was given).
	readFails atomic.Pointer[string]
}

func newTestProvider(dir string) *testProvider {
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
		panic(err)
	}
	return &testProvider{dir: filepath.Join(dir, "objects"), logPath: filepath.Join(dir, "ops.log")}
}

func (tp *testProvider) provider() sdk.Provider {
	return &sdk.Router{Name: "sftest", Resources: map[string]sdk.Resource{testThing: thing{tp}}}
}

func (tp *testProvider) objPath(id string) string { return filepath.Join(tp.dir, id+".json") }

func (tp *testProvider) log(op, addr string) {
	tp.logMu.Lock()
	defer tp.logMu.Unlock()
	f, err := os.OpenFile(tp.logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s\n", op, addr)
}

// ops returns the log's lines, in order.
func (tp *testProvider) ops() []string {
	b, err := os.ReadFile(tp.logPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		panic(err)
	}
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// resetLog empties the operation log between steps of a test.
func (tp *testProvider) resetLog() { _ = os.Remove(tp.logPath) }

// inUse reports whether the object has an "in use" marker file next to
// it (ID.inuse): its delete then fails, as a module in use would.
func (tp *testProvider) inUse(v cty.Value) bool {
	_, err := os.Stat(filepath.Join(tp.dir, v.GetAttr("id").AsString()+".inuse"))
	return err == nil
}

type thing struct{ tp *testProvider }

var _ sdk.Resource = thing{}

func (thing) Schema() *sdk.ResourceSchema { return thingSchema }

func (thing) Validate(_ context.Context, cfg cty.Value) sdk.Diagnostics {
	if !cfg.IsKnown() || cfg.IsNull() {
		return nil
	}
	f := cfg.GetAttr("fail")
	if f.IsKnown() && !f.IsNull() && f.AsString() != "" {
		for _, op := range strings.Split(f.AsString(), ",") {
			switch op {
			case "create", "create-partial", "update", "delete":
			default:
				return sdk.Diagnostics{sdk.Errorf(cty.GetAttrPath("fail"), "Invalid fail", "unknown operation %q", op)}
			}
		}
	}
	return nil
}

func (t thing) Read(_ context.Context, _ sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	out := make([]sdk.ReadResult, len(items))
	var batch sdk.Diagnostics
	if f := t.tp.readFails.Load(); f != nil {
		var vals []string
		for _, it := range items {
			vals = append(vals, valueOf(it.Prior))
		}
		if *f != "warning" {
			return nil, 0, sdk.Diagnostics{sdk.Errorf(nil, *f, "cannot read objects with values %s", strings.Join(vals, ", "))}
		}
		batch = sdk.Diagnostics{{Severity: sdk.Warning, Summary: "Slow read", Detail: "values " + strings.Join(vals, ", ") + " were slow"}}
	}
	for i, it := range items {
		out[i] = sdk.ReadResult{NewState: cty.NullVal(thingType)}
		if it.Prior.IsNull() {
			continue
		}
		id := it.Prior.GetAttr("id")
		if id.IsNull() {
			continue
		}
		b, err := os.ReadFile(t.tp.objPath(id.AsString()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var f thingFile
		if err == nil {
			err = json.Unmarshal(b, &f)
		}
		if err != nil {
			out[i].Diagnostics = sdk.Diagnostics{sdk.Errorf(nil, "Cannot read object", "%v", err)}
			out[i].NewState = it.Prior
			continue
		}
		m := it.Prior.AsValueMap()
		m["value"], m["key"] = strPtrVal(f.Value), strPtrVal(f.Key)
		out[i].NewState, out[i].Private = cty.ObjectVal(m), it.Private
	}
	return out, 1, batch
}

func strPtrVal(s *string) cty.Value {
	if s == nil {
		return cty.NullVal(cty.String)
	}
	return cty.StringVal(*s)
}

func valStrPtr(v cty.Value) *string {
	if v.IsNull() {
		return nil
	}
	s := v.AsString()
	return &s
}

func (t thing) Plan(_ context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	if v := t.tp.planValue.Load(); v != nil && !req.Proposed.IsNull() && req.Proposed.IsKnown() {
		m := req.Proposed.AsValueMap()
		m["value"] = cty.StringVal(*v)
		req.Proposed = cty.ObjectVal(m)
	}
	resp := sdk.DefaultPlan(thingSchema, req)
	// An update keeps the id; only a create (or replacement) makes one.
	if !req.Prior.IsNull() && !req.Proposed.IsNull() && len(resp.RequiresReplace) == 0 && resp.Planned.IsKnown() {
		m := resp.Planned.AsValueMap()
		m["id"] = req.Prior.GetAttr("id")
		resp.Planned = cty.ObjectVal(m)
	}
	return resp
}

func failsOn(v cty.Value, op string) bool {
	if v.IsNull() {
		return false
	}
	f := v.GetAttr("fail")
	if f.IsNull() || !f.IsKnown() {
		return false
	}
	for _, o := range strings.Split(f.AsString(), ",") {
		if o == op {
			return true
		}
	}
	return false
}

func (t thing) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	op := "update"
	switch {
	case req.Planned.IsNull():
		op = "delete"
	case req.Prior.IsNull():
		op = "create"
	}
	cfgOf := req.Planned
	if op == "delete" {
		cfgOf = req.Prior
	}
	if s := cfgOf.GetAttr("sleep_ms"); !s.IsNull() && s.IsKnown() {
		ms, _ := s.AsBigFloat().Int64()
		// The message repeats the value, as real providers repeat
		// theirs (a module's parameters, an image reference).
		progress(sdk.Progress{Message: "sleeping; value = " + valueOf(cfgOf)})
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			t.tp.log("interrupted-"+op, req.Address)
			return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{
				sdk.Errorf(nil, "Interrupted", "%s of %s stopped: %v", op, req.Address, ctx.Err())}}
		}
	}
	if t.tp.onApply != nil {
		defer t.tp.onApply(op, req.Address)
	}
	fail := func(what string) sdk.ApplyResponse {
		t.tp.log("failed-"+op, req.Address)
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{
			sdk.Errorf(cty.GetAttrPath("fail"), "Test provider failure", "%s of %s (value %s) failed because its config says fail = %q", what, req.Address, valueOf(cfgOf), what)}}
	}
	switch op {
	case "delete":
		if failsOn(req.Prior, "delete") || t.tp.inUse(req.Prior) {
			return fail("delete")
		}
		if err := os.Remove(t.tp.objPath(req.Prior.GetAttr("id").AsString())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return sdk.ApplyResponse{NewState: req.Prior, Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "delete", "%v", err)}}
		}
		t.tp.log("delete", req.Address)
		return sdk.ApplyResponse{NewState: cty.NullVal(thingType)}
	case "create":
		if failsOn(req.Planned, "create") {
			return fail("create")
		}
	case "update":
		if failsOn(req.Planned, "update") {
			return fail("update")
		}
	}
	if !req.Planned.GetAttr("value").IsKnown() || !req.Planned.GetAttr("key").IsKnown() {
		return sdk.ApplyResponse{NewState: req.Prior, Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Unknown at apply",
			"%s: value and key must be known at apply", req.Address)}}
	}
	m := req.Planned.AsValueMap()
	if id := m["id"]; !id.IsKnown() || id.IsNull() {
		m["id"] = cty.StringVal(fmt.Sprintf("t%d", t.tp.nextID.Add(1)))
	}
	newVal := cty.ObjectVal(m)
	b, _ := json.Marshal(thingFile{Value: valStrPtr(m["value"]), Key: valStrPtr(m["key"])})
	if err := os.WriteFile(t.tp.objPath(m["id"].AsString()), b, 0o644); err != nil {
		return sdk.ApplyResponse{NewState: req.Prior, Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "write", "%v", err)}}
	}
	if op == "create" && failsOn(req.Planned, "create-partial") {
		t.tp.log("partial-create", req.Address)
		return sdk.ApplyResponse{NewState: newVal, Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Test provider failure",
			"%s was made but its set-up failed (fail = create-partial)", req.Address)}}
	}
	t.tp.log(op, req.Address)
	return sdk.ApplyResponse{NewState: newVal, Private: []byte("restore:" + m["id"].AsString())}
}

func (thing) Import(_ context.Context, _ sdk.ImportRequest) sdk.ImportResponse {
	return sdk.ImportUnsupported(testThing)
}

// valueOf is v's "value" as messages show it.
func valueOf(v cty.Value) string {
	if v.IsNull() || !v.IsKnown() {
		return "?"
	}
	x := v.GetAttr("value")
	if x.IsNull() || !x.IsKnown() {
		return "null"
	}
	return x.AsString()
}
