package docker

import (
	"cmp"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
)

// cgroupValues are the limits the kernel applied to a running container.
type cgroupValues struct {
	Version                    int
	MemoryMax, SwapMax, CPUMax string
}

// observe builds the state value of a container from its inspect data. For
// each attribute it starts from the fact and then keeps prior's spelling
// when the two mean the same (equiv), so a value the user wrote as "9g"
// stays "9g" while 9 GiB is what the engine holds. Attributes prior leaves
// null report null when the engine's value is its own default.
func observe(s *sdk.ResourceSchema, prior cty.Value, ins container.InspectResponse, cg *cgroupValues) cty.Value {
	o := &observer{schema: s, prior: prior, ins: ins, cfg: ins.Config, hc: ins.HostConfig, vals: map[string]cty.Value{}}
	if o.cfg == nil {
		o.cfg = &container.Config{}
	}
	if o.hc == nil {
		o.hc = &container.HostConfig{}
	}
	o.process()
	o.resources()
	o.devices()
	o.privileges()
	o.lifecycle()
	o.binds()
	for name := range notObservable {
		o.vals[name] = o.p(name)
	}
	o.runtime(cg)
	o.keepPriorSpelling()
	return cty.ObjectVal(o.vals)
}

// observer builds one observed value, attribute group by group.
type observer struct {
	schema *sdk.ResourceSchema
	prior  cty.Value
	ins    container.InspectResponse
	cfg    *container.Config
	hc     *container.HostConfig
	vals   map[string]cty.Value
}

// p is prior's attribute name (null when there is no prior).
func (o *observer) p(name string) cty.Value {
	if o.prior.IsNull() || !o.prior.IsKnown() {
		return cty.NullVal(o.schema.Block.Attributes[name].Type)
	}
	return o.prior.GetAttr(name)
}

func (o *observer) setByPrior(name string) bool { return !o.p(name).IsNull() }

// process observes name, image, entrypoint, command, env, working_dir and user.
func (o *observer) process() {
	o.vals["name"] = cty.StringVal(strings.TrimPrefix(o.ins.Name, "/"))
	o.vals["image"] = cty.StringVal(o.cfg.Image)

	// Attributes that can only change by recreating the container: a null
	// prior means "engine/image default", not drift.
	if o.setByPrior("entrypoint") {
		o.vals["entrypoint"] = ctyval.ListOrNull(emptyIfNil(o.cfg.Entrypoint))
	}
	if o.setByPrior("command") {
		o.vals["command"] = ctyval.ListOrNull(emptyIfNil(o.cfg.Cmd))
	}
	if o.setByPrior("env") {
		env := map[string]string{}
		for _, kv := range o.cfg.Env {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		// Only the keys the user set: image ENV (PATH, ...) is not drift.
		want := ctyval.StrMap(o.p("env"))
		got := map[string]string{}
		for k := range want {
			if v, ok := env[k]; ok {
				got[k] = v
			}
		}
		o.vals["env"] = ctyval.MapOrNull(got)
	}
	if o.setByPrior("working_dir") {
		o.vals["working_dir"] = cty.StringVal(o.cfg.WorkingDir)
	}
	if o.setByPrior("user") {
		o.vals["user"] = cty.StringVal(o.cfg.User)
	}
}

// resources observes the resource limits: memory, memory_swap, cpus, shm_size, pids_limit.
func (o *observer) resources() {
	// In-place attributes: report what the engine holds, whatever prior says,
	// so a `docker update` by hand shows up.
	if o.hc.Memory > 0 {
		o.vals["memory"] = cty.StringVal(formatSize(o.hc.Memory))
	}
	switch {
	case o.hc.MemorySwap == -1 && o.setByPrior("memory_swap"):
		o.vals["memory_swap"] = cty.StringVal("-1")
	case o.hc.MemorySwap > 0 && (o.setByPrior("memory_swap") || o.hc.MemorySwap != 2*o.hc.Memory):
		// The engine defaults memory_swap to twice memory; that is not drift.
		o.vals["memory_swap"] = cty.StringVal(formatSize(o.hc.MemorySwap))
	}
	switch {
	case o.hc.NanoCPUs > 0:
		o.vals["cpus"] = ctyval.NumVal(float64(o.hc.NanoCPUs) / 1e9)
	case o.hc.CPUQuota > 0:
		period := o.hc.CPUPeriod
		if period == 0 {
			period = cpuPeriod
		}
		o.vals["cpus"] = ctyval.NumVal(math.Round(float64(o.hc.CPUQuota)/float64(period)*1e6) / 1e6)
	}
	if o.setByPrior("shm_size") || (o.hc.ShmSize > 0 && o.hc.ShmSize != 64<<20) {
		if o.hc.ShmSize > 0 {
			o.vals["shm_size"] = cty.StringVal(formatSize(o.hc.ShmSize))
		}
	}
	if o.hc.PidsLimit != nil && *o.hc.PidsLimit > 0 {
		o.vals["pids_limit"] = cty.NumberIntVal(*o.hc.PidsLimit)
	}
}

// devices observes devices, gpus, network_mode and ipc_mode.
func (o *observer) devices() {
	if len(o.hc.Devices) > 0 || o.setByPrior("devices") {
		ds := []string{}
		for _, d := range o.hc.Devices {
			ds = append(ds, deviceString(d))
		}
		o.vals["devices"] = ctyval.ListOrNull(ds)
	}
	for _, r := range o.hc.DeviceRequests {
		if hasGPUCap(r) {
			if r.Count < 0 {
				o.vals["gpus"] = cty.StringVal("all")
			} else {
				o.vals["gpus"] = cty.StringVal(strconv.Itoa(r.Count))
			}
		}
	}
	if o.setByPrior("network_mode") {
		o.vals["network_mode"] = cty.StringVal(string(o.hc.NetworkMode))
	}
	if o.setByPrior("ipc_mode") {
		o.vals["ipc_mode"] = cty.StringVal(string(o.hc.IpcMode))
	}
}

// privileges observes ulimits, cap_add and privileged.
func (o *observer) privileges() {
	if o.hc.Privileged || o.setByPrior("privileged") {
		o.vals["privileged"] = cty.BoolVal(o.hc.Privileged)
	}
	if o.setByPrior("ulimits") {
		want := ctyval.StrMap(o.p("ulimits"))
		got := map[string]string{}
		for _, u := range o.hc.Ulimits {
			if _, ok := want[u.Name]; ok { // daemon-wide default ulimits are not drift
				got[u.Name] = ulimitString(u)
			}
		}
		o.vals["ulimits"] = ctyval.MapOrNull(got)
	}
	if len(o.hc.CapAdd) > 0 || o.setByPrior("cap_add") {
		cs := []string{}
		for _, c := range o.hc.CapAdd {
			cs = append(cs, normCap(c))
		}
		o.vals["cap_add"] = ctyval.SetOrNull(cs)
	}
}

// lifecycle observes restart, labels, cgroup_parent and stop_timeout.
func (o *observer) lifecycle() {
	if rs := restartString(o.hc.RestartPolicy); rs != "no" || o.setByPrior("restart") {
		o.vals["restart"] = cty.StringVal(rs)
	}

	if o.setByPrior("labels") {
		want := ctyval.StrMap(o.p("labels"))
		got := map[string]string{}
		for k := range want {
			if v, ok := o.cfg.Labels[k]; ok {
				got[k] = v
			}
		}
		o.vals["labels"] = ctyval.MapOrNull(got)
	}
	if o.hc.CgroupParent != "" || o.setByPrior("cgroup_parent") {
		o.vals["cgroup_parent"] = cty.StringVal(o.hc.CgroupParent)
	}
	if o.cfg.StopTimeout != nil {
		o.vals["stop_timeout"] = cty.NumberIntVal(int64(*o.cfg.StopTimeout))
	}
}

// binds observes the mount blocks and bind_files.
func (o *observer) binds() {
	// Binds: targets prior lists in bind_files are files; every other bind
	// is a mount block. Volumes the image declares are not ours.
	fileTargets := map[string]bool{}
	for _, f := range ctyval.Elems(o.p("bind_files")) {
		fileTargets[path.Clean(ctyval.Str(ctyval.Attr(f, "target")))] = true
	}
	priorMounts := map[string]cty.Value{}
	for _, m := range ctyval.Elems(o.p("mount")) {
		priorMounts[path.Clean(ctyval.Str(ctyval.Attr(m, "target")))] = m
	}
	var mounts, files []cty.Value
	for _, mp := range o.ins.Mounts {
		if mp.Type != "bind" {
			continue
		}
		t := path.Clean(mp.Destination)
		if fileTargets[t] {
			files = append(files, cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal(mp.Source), "target": cty.StringVal(mp.Destination)}))
			continue
		}
		m := map[string]cty.Value{
			"source": cty.StringVal(mp.Source), "target": cty.StringVal(mp.Destination),
			"read_only": cty.BoolVal(!mp.RW), "create_host_path": cty.NullVal(cty.Bool),
		}
		if pm, ok := priorMounts[t]; ok {
			if ctyval.Bool(ctyval.Attr(pm, "read_only"), false) == !mp.RW {
				m["read_only"] = ctyval.Attr(pm, "read_only")
			}
			m["create_host_path"] = ctyval.Attr(pm, "create_host_path")
		}
		mounts = append(mounts, cty.ObjectVal(m))
	}
	mountType := o.schema.Block.BlockTypes["mount"].Block.ImpliedType()
	if len(mounts) == 0 {
		o.vals["mount"] = cty.SetValEmpty(mountType)
	} else {
		o.vals["mount"] = cty.SetVal(mounts)
	}
	if len(files) > 0 {
		o.vals["bind_files"] = cty.ListVal(orderLike(files, ctyval.Elems(o.p("bind_files"))))
	} else if o.setByPrior("bind_files") {
		o.vals["bind_files"] = cty.ListValEmpty(bindFileType)
	}
}

// runtime observes what only the engine sets: id, image_id, running,
// exit_code and, for a running container, the cgroup limits cg.
func (o *observer) runtime(cg *cgroupValues) {
	o.vals["id"] = cty.StringVal(o.ins.ID)
	o.vals["image_id"] = cty.StringVal(o.ins.Image)
	running := o.ins.State != nil && o.ins.State.Running
	o.vals["running"] = cty.BoolVal(running)
	exit := 0
	if o.ins.State != nil {
		exit = o.ins.State.ExitCode
	}
	o.vals["exit_code"] = cty.NumberIntVal(int64(exit))
	if cg != nil && running {
		o.vals["cgroup_version"] = cty.NumberIntVal(int64(cg.Version))
		o.vals["cgroup_memory_max"] = cty.StringVal(cg.MemoryMax)
		o.vals["cgroup_memory_swap_max"] = cty.StringVal(cg.SwapMax)
		o.vals["cgroup_cpu_max"] = cty.StringVal(cg.CPUMax)
	}
}

// keepPriorSpelling fills nulls, then keeps prior's spelling where it means the same.
func (o *observer) keepPriorSpelling() {
	// Fill nulls, then keep prior's spelling where it means the same.
	for name, a := range o.schema.Block.Attributes {
		if _, ok := o.vals[name]; !ok {
			o.vals[name] = cty.NullVal(a.Type)
		}
		if !a.Computed || a.Optional {
			if pv := o.p(name); equiv(name, pv, o.vals[name]) {
				o.vals[name] = pv
			}
		}
	}
	if pv := o.p("mount"); equiv("mount", pv, o.vals["mount"]) && !pv.IsNull() {
		o.vals["mount"] = pv
	}
}

func emptyIfNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

func hasGPUCap(r container.DeviceRequest) bool {
	for _, and := range r.Capabilities {
		for _, c := range and {
			if c == "gpu" {
				return true
			}
		}
	}
	return false
}

// orderLike sorts got in the order of the matching elements of want
// (unmatched ones last, in their own order).
func orderLike(got, want []cty.Value) []cty.Value {
	pos := make(map[string]int, len(want))
	for i, w := range want {
		pos[ctyval.Str(ctyval.Attr(w, "target"))] = i
	}
	// Each element's place is looked up once, not per comparison (the
	// sort compares ~n log n times; 1,000 bind_files made ~20,000
	// attribute reads and lookups per container read).
	type placed struct {
		at int
		v  cty.Value
	}
	ps := make([]placed, len(got))
	for i, g := range got {
		at, ok := pos[ctyval.Str(ctyval.Attr(g, "target"))]
		if !ok {
			at = math.MaxInt
		}
		ps[i] = placed{at, g}
	}
	slices.SortStableFunc(ps, func(a, b placed) int { return cmp.Compare(a.at, b.at) })
	for i, p := range ps {
		got[i] = p.v
	}
	return got
}

// equiv reports whether two values of attribute name mean the same to the
// engine. Unknowns are never equivalent.
func equiv(name string, a, b cty.Value) bool {
	if !ctyval.Known(a) || !ctyval.Known(b) {
		return false
	}
	// Collections are compared once, order-free; a deep cty comparison
	// first would double the cost for 100,000 bind_files.
	if !collections[name] && sdk.ValuesEqual(a, b) {
		return true
	}
	emptyish := func(v cty.Value) bool { return v.IsNull() || (v.CanIterateElements() && v.LengthInt() == 0) }
	switch name {
	case "memory", "memory_swap", "shm_size":
		return !a.IsNull() && !b.IsNull() && sizesEqual(a.AsString(), b.AsString())
	case "cpus":
		return !a.IsNull() && !b.IsNull() && math.Abs(ctyval.Number(a)-ctyval.Number(b)) < 1e-6
	case "restart":
		ra, rb := "no", "no"
		if !a.IsNull() {
			ra = normRestart(a.AsString())
		}
		if !b.IsNull() {
			rb = normRestart(b.AsString())
		}
		return ra == rb
	case "must_run":
		return ctyval.Bool(a, true) == ctyval.Bool(b, true)
	case "image":
		return !a.IsNull() && !b.IsNull() && normImage(a.AsString()) == normImage(b.AsString())
	case "env", "labels", "bind_files", "mount", "cap_add", "devices", "ulimits":
		if emptyish(a) && emptyish(b) {
			return true
		}
		if a.IsNull() || b.IsNull() {
			return false
		}
		return canonical(name, a) == canonical(name, b)
	}
	return false
}

func normRestart(s string) string {
	rp, err := parseRestart(s)
	if err != nil {
		return s
	}
	return restartString(rp)
}

var collections = map[string]bool{"env": true, "labels": true, "bind_files": true, "mount": true, "cap_add": true, "devices": true, "ulimits": true}

// canonical is an order-free string form of a collection attribute.
func canonical(name string, v cty.Value) string {
	var parts []string
	switch name {
	case "env", "labels":
		m := ctyval.StrMap(v)
		for _, k := range ctyval.SortedKeys(m) {
			parts = append(parts, k+"="+m[k])
		}
	case "ulimits":
		m := ctyval.StrMap(v)
		for _, k := range ctyval.SortedKeys(m) {
			u, err := parseUlimit(k, m[k])
			if err != nil {
				parts = append(parts, k+"="+m[k])
				continue
			}
			parts = append(parts, k+"="+ulimitString(u))
		}
	case "cap_add":
		for _, c := range ctyval.StrList(v) {
			parts = append(parts, normCap(c))
		}
	case "devices":
		for _, d := range ctyval.StrList(v) {
			if m, err := parseDevice(d); err == nil {
				d = deviceString(m)
			}
			parts = append(parts, d)
		}
	case "bind_files":
		for _, e := range ctyval.Elems(v) {
			parts = append(parts, ctyval.Str(ctyval.Attr(e, "source"))+"\x00"+path.Clean(ctyval.Str(ctyval.Attr(e, "target"))))
		}
	case "mount":
		for _, e := range ctyval.Elems(v) {
			parts = append(parts, fmtMount(e))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

func fmtMount(e cty.Value) string {
	return ctyval.Str(ctyval.Attr(e, "source")) + "\x00" + path.Clean(ctyval.Str(ctyval.Attr(e, "target"))) + "\x00" +
		strconv.FormatBool(ctyval.Bool(ctyval.Attr(e, "read_only"), false)) + "\x00" + strconv.FormatBool(ctyval.Bool(ctyval.Attr(e, "create_host_path"), false))
}
