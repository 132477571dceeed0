package command

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/internal/units"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TypeMemoryFit is the resource type name of the plan-time memory check.
const TypeMemoryFit = "node_memory_fit"

// MemoryFit is node_memory_fit: whether what a serving container asks
// fits the node's memory, checked at plan before anything changes.
type MemoryFit struct {
	pool *node.Pool
}

var _ sdk.Resource = (*MemoryFit)(nil)

// fitInputs are the configured attributes: a change to one of them
// checks again (the check runs at plan only when they change, since the
// serving container, once running, holds the memory it was checked for).
var fitInputs = []string{"model_bytes", "gpu_memory_utilization", "memory", "shm_size", "display_reserve", "override_reason", "nvidia_smi", "containers"}

// fitComputed are what the check found.
var fitComputed = []string{"source", "total_bytes", "available_bytes", "asked_bytes", "budget"}

var fitSchema = &sdk.ResourceSchema{
	Description: "A memory budget checked at plan: what the node has available (nvidia-smi's figures where it gives them, else /proc/meminfo), " +
		"plus what the display unlock frees, against what the serving container asks (gpu_memory_utilization of the total where set, else the model's bytes on this node, " +
		"plus the container's memory limit, else its shm). Plan refuses, before any change, when it does not fit, with the numbers; override_reason lets it through. " +
		"The check runs when the resource is created and when one of its arguments changes, not on every plan: a serving container, once running, holds the memory it was checked for, " +
		"so on a change only the growth over what was checked before must be available (and the display reserve is free already).",
	Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
		"model_bytes": {Type: cty.Number, Optional: true,
			Description: "Bytes of model weights this node holds (its share of a tensor/pipeline-parallel model, plus a drafter): hubstage_manifest or hubstage_snapshot total_bytes. Checked against the GPU share when gpu_memory_utilization is set; the GPU share itself when it is not."},
		"gpu_memory_utilization": {Type: cty.Number, Optional: true,
			Description: "The fraction of the node's total memory the server takes for weights, activations and KV cache (vLLM's --gpu-memory-utilization; vLLM refuses to start when less than this is free). Between 0 and 1."},
		"memory": {Type: cty.String, Optional: true,
			Description: "The container's memory limit (\"9g\"): counted whole, as the most its processes may take beside the GPU share (on a DGX Spark both come out of the same memory)."},
		"shm_size": {Type: cty.String, Optional: true,
			Description: "The container's /dev/shm size: counted when memory is not set (with a limit, shm is inside it)."},
		"containers": {Type: cty.Number, Optional: true,
			Description: "How many containers with this memory limit (else shm) the node runs beside the GPU share (default 1). Ray's rank 0 runs two: the Ray head and the server."},
		"display_reserve": {Type: cty.String, Optional: true,
			Description: "Memory the display unlock frees (about \"2g\" on a DGX Spark), added to what is available. Set it only when the unlock is not applied yet: after that it is already free."},
		"override_reason": {Type: cty.String, Optional: true,
			Description: "Plan even when it does not fit, for this stated reason (shown in the plan's warning). Empty is an error: say why."},
		"nvidia_smi": {Type: cty.String, Optional: true,
			Description: "The nvidia-smi command on the node (default \"nvidia-smi\", looked up on its PATH). Absent, or reporting no memory figures (unified memory, as on a DGX Spark): /proc/meminfo is used."},

		"source": {Type: cty.String, Computed: true,
			Description: "Where the figures came from: \"nvidia-smi\" or \"/proc/meminfo\" (with why, when nvidia-smi is there but gave none)."},
		"total_bytes": {Type: cty.Number, Computed: true, Description: "The node's total memory (nvidia-smi: the sum of memory.total; else MemTotal)."},
		"available_bytes": {Type: cty.Number, Computed: true, Volatile: true,
			Description: "Available before the display unlock when planned (nvidia-smi: the sum of memory.free; else MemAvailable). Apply plans again and holds the recipe to fit then, not to this figure."},
		"asked_bytes": {Type: cty.Number, Computed: true, Description: "What the recipe asks of the node."},
		"budget": {Type: cty.String, Computed: true, Volatile: true,
			Description: "The budget in words: what is asked, of what is available, and whether it fits."},
	}},
}

var fitType = fitSchema.Block.ImpliedType()

// Schema implements sdk.Resource.
func (f *MemoryFit) Schema() *sdk.ResourceSchema { return fitSchema }

// fitSpec is a decoded config.
type fitSpec struct {
	modelBytes, memory, shm, display int64
	containers                       int64 // >= 1
	hasModel                         bool
	util                             float64 // 0: unset
	override                         *string
	nvidiaSmi                        string
}

// decodeFit reads the known attributes of v; unknown ones are skipped.
func decodeFit(v cty.Value) (fitSpec, sdk.Diagnostics) {
	s := fitSpec{nvidiaSmi: "nvidia-smi", containers: 1}
	var diags sdk.Diagnostics
	set := func(name string) (cty.Value, bool) {
		a := v.GetAttr(name)
		return a, a.IsKnown() && !a.IsNull()
	}
	if a, ok := set("model_bytes"); ok {
		f := ctyval.Number(a)
		if f < 0 || f != math.Trunc(f) || f > math.MaxInt64/2 {
			diags = append(diags, sdk.Errorf(cty.GetAttrPath("model_bytes"), "Invalid model_bytes", "%v: use a whole number of bytes >= 0", f))
		}
		s.modelBytes, s.hasModel = int64(f), true
	}
	if a, ok := set("gpu_memory_utilization"); ok {
		s.util = ctyval.Number(a)
		if s.util <= 0 || s.util > 1 {
			diags = append(diags, sdk.Errorf(cty.GetAttrPath("gpu_memory_utilization"), "Invalid gpu_memory_utilization",
				"%v: use a fraction of the total memory, above 0 and at most 1 (e.g. 0.85)", s.util))
		}
	}
	for _, sz := range []struct {
		name string
		dst  *int64
	}{{"memory", &s.memory}, {"shm_size", &s.shm}, {"display_reserve", &s.display}} {
		if a, ok := set(sz.name); ok {
			n, err := units.ParseBytes(a.AsString())
			if err != nil {
				diags = append(diags, sdk.Errorf(cty.GetAttrPath(sz.name), "Invalid "+sz.name, "%q: %v", a.AsString(), err))
			}
			*sz.dst = n
		}
	}
	if a, ok := set("containers"); ok {
		f := ctyval.Number(a)
		if f < 1 || f != math.Trunc(f) || f > 64 {
			diags = append(diags, sdk.Errorf(cty.GetAttrPath("containers"), "Invalid containers", "%v: use a whole number of containers from 1 to 64", f))
		} else {
			s.containers = int64(f)
		}
	}
	if a, ok := set("override_reason"); ok {
		r := strings.TrimSpace(a.AsString())
		if r == "" {
			diags = append(diags, sdk.Errorf(cty.GetAttrPath("override_reason"), "Override without a reason",
				"override_reason is empty: an override of the memory check needs a reason (e.g. \"the drafter is loaded after the KV cache is sized\"); remove it to keep the check"))
		}
		s.override = &r
	}
	if a, ok := set("nvidia_smi"); ok {
		s.nvidiaSmi = a.AsString()
		if s.nvidiaSmi == "" || strings.ContainsAny(s.nvidiaSmi, "\x00\n") {
			diags = append(diags, sdk.Errorf(cty.GetAttrPath("nvidia_smi"), "Invalid nvidia_smi", "%q: give a command name or an absolute path", s.nvidiaSmi))
		}
	}
	return s, diags
}

// Validate implements sdk.Resource.
func (f *MemoryFit) Validate(_ context.Context, cfg cty.Value) sdk.Diagnostics {
	if cfg.IsNull() || !cfg.IsKnown() {
		return nil
	}
	_, diags := decodeFit(cfg)
	return diags
}

// Read implements sdk.Resource: nothing on the node records a check; the
// stored value stands (checking again at every refresh would count the
// running server's own memory against it).
func (f *MemoryFit) Read(_ context.Context, _ sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	out := make([]sdk.ReadResult, len(items))
	for i, it := range items {
		out[i] = sdk.ReadResult{NewState: it.Prior, Private: it.Private}
	}
	return out, 0, nil
}

// Plan implements sdk.Resource: on create, and when an argument changes,
// it reads the node's memory (one command) and refuses what does not fit.
func (f *MemoryFit) Plan(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	if req.Proposed.IsNull() {
		return sdk.PlanResponse{Planned: req.Proposed}
	}
	if !req.Proposed.IsKnown() {
		return sdk.PlanResponse{Planned: cty.UnknownVal(fitType)}
	}
	spec, diags := decodeFit(req.Proposed)
	if diags.HasErrors() {
		return sdk.PlanResponse{Diagnostics: diags}
	}
	vals := req.Proposed.AsValueMap()
	if !req.Prior.IsNull() && sameInputs(req.Prior, req.Proposed) {
		return sdk.PlanResponse{Planned: req.Prior, PlannedPrivate: req.PriorPrivate}
	}
	if !inputsKnown(req.Proposed) || req.Offline {
		// The model's size comes from a resource this plan creates (or
		// the plan may not reach the node): the check runs at apply, and
		// what depends on this waits for it.
		for _, c := range fitComputed {
			vals[c] = cty.UnknownVal(fitType.AttributeType(c))
		}
		why := "an argument of the memory check (the model's size) is known only after apply"
		if req.Offline {
			why = "this plan does not reach the node (-refresh=false)"
		}
		return sdk.PlanResponse{Planned: cty.ObjectVal(vals), Diagnostics: sdk.Diagnostics{{Severity: sdk.Warning,
			Summary: "Memory fit checked at apply",
			Detail:  fmt.Sprintf("%s: %s, so the check runs at apply, before the serving container on %s starts.", req.Address, why, nodeName(req.Node))}}}
	}
	b, d := f.check(ctx, req.Address, req.Node, spec, heldBy(req.Prior))
	diags = append(diags, d...)
	if diags.HasErrors() {
		return sdk.PlanResponse{Diagnostics: diags}
	}
	for k, v := range b.values() {
		vals[k] = v
	}
	return sdk.PlanResponse{Planned: cty.ObjectVal(vals), Diagnostics: diags}
}

// heldBy is what the recipe was checked for before (prior asked_bytes),
// -1 on a create or when the prior has no budget.
func heldBy(prior cty.Value) int64 {
	if prior == cty.NilVal || prior.IsNull() || !prior.IsKnown() {
		return -1
	}
	a := prior.GetAttr("asked_bytes")
	if !a.IsKnown() || a.IsNull() {
		return -1
	}
	n, _ := a.AsBigFloat().Int64()
	return n
}

func sameInputs(prior, proposed cty.Value) bool {
	for _, a := range fitInputs {
		if !sdk.ValuesEqual(prior.GetAttr(a), proposed.GetAttr(a)) {
			return false
		}
	}
	return true
}

func inputsKnown(v cty.Value) bool {
	for _, a := range fitInputs {
		if !v.GetAttr(a).IsWhollyKnown() {
			return false
		}
	}
	return true
}

// Apply implements sdk.Resource: it stores the planned budget; a check
// deferred from plan (unknown inputs) runs now.
func (f *MemoryFit) Apply(ctx context.Context, req sdk.ApplyRequest, _ func(sdk.Progress)) sdk.ApplyResponse {
	if req.Planned.IsNull() {
		return sdk.ApplyResponse{NewState: req.Planned}
	}
	if req.Planned.IsWhollyKnown() {
		return sdk.ApplyResponse{NewState: req.Planned, Private: req.Private}
	}
	keep := sdk.ApplyResponse{NewState: req.Prior, Private: req.Private}
	if !inputsKnown(req.Planned) {
		keep.Diagnostics = sdk.Diagnostics{sdk.Errorf(nil, "Value not known at apply",
			"every argument of %s must be known when it is applied; the engine should have resolved every reference first", req.Address)}
		return keep
	}
	spec, diags := decodeFit(req.Planned)
	if diags.HasErrors() {
		keep.Diagnostics = diags
		return keep
	}
	b, d := f.check(ctx, req.Address, req.Node, spec, heldBy(req.Prior))
	if d.HasErrors() {
		keep.Diagnostics = d
		return keep
	}
	vals := req.Planned.AsValueMap()
	for k, v := range b.values() {
		vals[k] = v
	}
	return sdk.ApplyResponse{NewState: cty.ObjectVal(vals), Private: req.Private, Diagnostics: d}
}

// Import implements sdk.Resource.
func (f *MemoryFit) Import(context.Context, sdk.ImportRequest) sdk.ImportResponse {
	return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Import not supported",
		"node_memory_fit is a check, not an object on the node: add it to config and plan")}}
}

// memProbe prints nvidia-smi's memory figures (when the command is there)
// and /proc/meminfo, in one command. The nvidia-smi command is its first
// argument, never part of the script.
const memProbe = `smi=$1
if command -v "$smi" >/dev/null 2>&1; then
  echo '== nvidia-smi'
  "$smi" --query-gpu=memory.total,memory.free --format=csv,noheader,nounits 2>&1 || echo "exit status $?"
fi
echo '== meminfo'
cat /proc/meminfo`

// memFigures are a node's memory figures and where they came from.
type memFigures struct {
	source           string
	total, available int64
}

// parseMemProbe reads memProbe's output.
func parseMemProbe(out string) (memFigures, error) {
	var smi, meminfo []string
	var cur *[]string
	for _, line := range strings.Split(out, "\n") {
		switch line {
		case "== nvidia-smi":
			cur = &smi
			continue
		case "== meminfo":
			cur = &meminfo
			continue
		}
		if cur != nil && strings.TrimSpace(line) != "" {
			*cur = append(*cur, line)
		}
	}
	why := ""
	if smi != nil {
		var total, free int64
		ok := true
		for _, l := range smi {
			t, fr, found := strings.Cut(l, ",")
			tn, err1 := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
			fn, err2 := strconv.ParseInt(strings.TrimSpace(fr), 10, 64)
			if !found || err1 != nil || err2 != nil {
				ok, why = false, strings.TrimSpace(l)
				break
			}
			total, free = total+tn<<20, free+fn<<20 // MiB
		}
		if ok {
			return memFigures{source: "nvidia-smi", total: total, available: free}, nil
		}
	}
	kb := map[string]int64{}
	for _, l := range meminfo {
		f := strings.Fields(l)
		if len(f) >= 2 {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				kb[strings.TrimSuffix(f[0], ":")] = n << 10
			}
		}
	}
	total, ok1 := kb["MemTotal"]
	avail, ok2 := kb["MemAvailable"]
	if !ok1 || !ok2 {
		return memFigures{}, fmt.Errorf("%w: no MemTotal and MemAvailable in /proc/meminfo", ErrNoMemFigures)
	}
	src := "/proc/meminfo"
	if smi != nil {
		src += " (nvidia-smi gave no memory figures: " + why + ")"
	}
	return memFigures{source: src, total: total, available: avail}, nil
}

// budget is one node's memory budget.
type budget struct {
	memFigures
	display, asked, gpu, host, weights int64
	// held is, on an update, what the recipe was checked for before
	// (the prior asked_bytes): its running server holds about that much,
	// which its replacement takes over, so only the growth must be
	// available (and the display unlock's reserve is free already). -1 on
	// a create.
	held              int64
	gpuWhat, hostWhat string
	fits, weightsFit  bool
}

// need is what must be available: all that is asked on a create, the
// growth over what the running recipe holds on an update.
func (b budget) need() int64 {
	if b.held < 0 {
		return b.asked
	}
	return max(0, b.asked-b.held)
}

func (b budget) values() map[string]cty.Value {
	return map[string]cty.Value{
		"source":          cty.StringVal(b.source),
		"total_bytes":     cty.NumberIntVal(b.total),
		"available_bytes": cty.NumberIntVal(b.available),
		"asked_bytes":     cty.NumberIntVal(b.asked),
		"budget":          cty.StringVal(b.String()),
	}
}

// String is the budget in one line, the numbers in GiB.
func (b budget) String() string {
	var w strings.Builder
	if b.hostWhat == "" {
		fmt.Fprintf(&w, "asks %s (%s)", gib(b.gpu), b.gpuWhat)
	} else {
		fmt.Fprintf(&w, "asks %s = %s (%s) + %s (%s)", gib(b.asked), gib(b.gpu), b.gpuWhat, gib(b.host), b.hostWhat)
	}
	if b.held >= 0 {
		fmt.Fprintf(&w, ", %s more than the %s the running recipe was checked for,", gib(b.need()), gib(b.held))
	}
	fmt.Fprintf(&w, " of %s available", gib(b.available+b.display))
	if b.display > 0 {
		fmt.Fprintf(&w, " (%s + %s the display unlock frees)", gib(b.available), gib(b.display))
	}
	fmt.Fprintf(&w, ", total %s, from %s: ", gib(b.total), b.source)
	switch {
	case !b.weightsFit:
		fmt.Fprintf(&w, "the weights on this node (%s) do not fit in the GPU share (%s)", gib(b.weights), gib(b.gpu))
	case b.fits:
		fmt.Fprintf(&w, "fits, %s to spare", gib(b.available+b.display-b.need()))
	default:
		fmt.Fprintf(&w, "does not fit, %s short", gib(b.need()-b.available-b.display))
	}
	return w.String()
}

func gib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB" }

// compute is what s asks of a node with figures m; held is what the
// running recipe was checked for (-1: a create).
func compute(s fitSpec, m memFigures, held int64) budget {
	b := budget{memFigures: m, display: s.display, weights: s.modelBytes, weightsFit: true, held: held}
	if held >= 0 {
		b.display = 0
	}
	if s.util > 0 {
		b.gpu = int64(s.util * float64(m.total))
		b.gpuWhat = "gpu_memory_utilization " + strconv.FormatFloat(s.util, 'f', -1, 64) + " of " + gib(m.total)
		b.weightsFit = !s.hasModel || s.modelBytes <= b.gpu
	} else {
		b.gpu = s.modelBytes
		b.gpuWhat = "the model's weights on this node"
	}
	n, each := max(s.containers, 1), "the container's"
	if n > 1 {
		each = strconv.FormatInt(n, 10) + " containers'"
	}
	switch {
	case s.memory > 0:
		b.host, b.hostWhat = s.memory*n, each+" memory limit"
	case s.shm > 0:
		b.host, b.hostWhat = s.shm*n, each+" shm"
	}
	b.asked = b.gpu + b.host
	b.fits = b.weightsFit && b.need() <= b.available+b.display
	return b
}

// check reads node n's memory in one command and judges s against it:
// an error with the numbers when it does not fit, a warning when
// override_reason lets it through.
func (f *MemoryFit) check(ctx context.Context, addr string, n sdk.Node, s fitSpec, held int64) (budget, sdk.Diagnostics) {
	conn, err := f.pool.Get(ctx, n)
	if err != nil {
		return budget{}, sdk.Diagnostics{sdk.Errorf(nil, "Cannot reach node", "%v", err)}
	}
	res, err := conn.Run(ctx, node.Cmd{Argv: []string{"/bin/sh", "-c", memProbe, "sparkform-memory-fit", s.nvidiaSmi}, Timeout: DefaultTimeout})
	if err != nil {
		return budget{}, sdk.Diagnostics{sdk.Errorf(nil, "Cannot read the node's memory",
			"%s: reading nvidia-smi and /proc/meminfo on %s failed: %v\n%s", addr, nodeName(n), err, tail(res.Stderr, maxShown))}
	}
	m, err := parseMemProbe(string(res.Stdout))
	if err != nil {
		return budget{}, sdk.Diagnostics{sdk.Errorf(nil, "Cannot read the node's memory", "%s on %s: %v", addr, nodeName(n), err)}
	}
	b := compute(s, m, held)
	if b.fits {
		return b, nil
	}
	what := fmt.Sprintf("%s on %s %s.", addr, nodeName(n), b)
	if s.override != nil {
		return b, sdk.Diagnostics{{Severity: sdk.Warning, Summary: "Memory check overridden",
			Detail: what + "\n\nPlanned anyway: override_reason = " + strconv.Quote(*s.override) + "."}}
	}
	return b, sdk.Diagnostics{sdk.Errorf(nil, "Does not fit in memory",
		"%s: %s\n\nNothing was changed (at apply, where the engine plans each instance again: nothing that depends on this check, the serving container). Lower gpu_memory_utilization, the container's memory, or the model (a smaller quantisation, more nodes), "+
			"free memory on the node, or set override_reason to plan anyway.", ErrDoesNotFit, what)}
}
