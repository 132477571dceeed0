package docker

import (
	"math"
	"path"
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
	cfg := ins.Config
	if cfg == nil {
		cfg = &container.Config{}
	}
	hc := ins.HostConfig
	if hc == nil {
		hc = &container.HostConfig{}
	}
	p := func(name string) cty.Value {
		if prior.IsNull() || !prior.IsKnown() {
			return cty.NullVal(s.Block.Attributes[name].Type)
		}
		return prior.GetAttr(name)
	}
	setByPrior := func(name string) bool { return !p(name).IsNull() }
	vals := map[string]cty.Value{}

	vals["name"] = cty.StringVal(strings.TrimPrefix(ins.Name, "/"))
	vals["image"] = cty.StringVal(cfg.Image)

	// Attributes that can only change by recreating the container: a null
	// prior means "engine/image default", not drift.
	if setByPrior("entrypoint") {
		vals["entrypoint"] = ctyval.ListOrNull(emptyIfNil(cfg.Entrypoint))
	}
	if setByPrior("command") {
		vals["command"] = ctyval.ListOrNull(emptyIfNil(cfg.Cmd))
	}
	if setByPrior("env") {
		env := map[string]string{}
		for _, kv := range cfg.Env {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		// Only the keys the user set: image ENV (PATH, ...) is not drift.
		want := ctyval.StrMap(p("env"))
		got := map[string]string{}
		for k := range want {
			if v, ok := env[k]; ok {
				got[k] = v
			}
		}
		vals["env"] = ctyval.MapOrNull(got)
	}
	if setByPrior("working_dir") {
		vals["working_dir"] = cty.StringVal(cfg.WorkingDir)
	}
	if setByPrior("user") {
		vals["user"] = cty.StringVal(cfg.User)
	}

	// In-place attributes: report what the engine holds, whatever prior says,
	// so a `docker update` by hand shows up.
	if hc.Memory > 0 {
		vals["memory"] = cty.StringVal(formatSize(hc.Memory))
	}
	switch {
	case hc.MemorySwap == -1 && setByPrior("memory_swap"):
		vals["memory_swap"] = cty.StringVal("-1")
	case hc.MemorySwap > 0 && (setByPrior("memory_swap") || hc.MemorySwap != 2*hc.Memory):
		// The engine defaults memory_swap to twice memory; that is not drift.
		vals["memory_swap"] = cty.StringVal(formatSize(hc.MemorySwap))
	}
	switch {
	case hc.NanoCPUs > 0:
		vals["cpus"] = ctyval.NumVal(float64(hc.NanoCPUs) / 1e9)
	case hc.CPUQuota > 0:
		period := hc.CPUPeriod
		if period == 0 {
			period = cpuPeriod
		}
		vals["cpus"] = ctyval.NumVal(math.Round(float64(hc.CPUQuota)/float64(period)*1e6) / 1e6)
	}
	if rs := restartString(hc.RestartPolicy); rs != "no" || setByPrior("restart") {
		vals["restart"] = cty.StringVal(rs)
	}

	if setByPrior("shm_size") || (hc.ShmSize > 0 && hc.ShmSize != 64<<20) {
		if hc.ShmSize > 0 {
			vals["shm_size"] = cty.StringVal(formatSize(hc.ShmSize))
		}
	}
	if hc.PidsLimit != nil && *hc.PidsLimit > 0 {
		vals["pids_limit"] = cty.NumberIntVal(*hc.PidsLimit)
	}
	if len(hc.Devices) > 0 || setByPrior("devices") {
		ds := []string{}
		for _, d := range hc.Devices {
			ds = append(ds, deviceString(d))
		}
		vals["devices"] = ctyval.ListOrNull(ds)
	}
	for _, r := range hc.DeviceRequests {
		if hasGPUCap(r) {
			if r.Count < 0 {
				vals["gpus"] = cty.StringVal("all")
			} else {
				vals["gpus"] = cty.StringVal(strconv.Itoa(r.Count))
			}
		}
	}
	if setByPrior("network_mode") {
		vals["network_mode"] = cty.StringVal(string(hc.NetworkMode))
	}
	if setByPrior("ipc_mode") {
		vals["ipc_mode"] = cty.StringVal(string(hc.IpcMode))
	}
	if setByPrior("ulimits") {
		want := ctyval.StrMap(p("ulimits"))
		got := map[string]string{}
		for _, u := range hc.Ulimits {
			if _, ok := want[u.Name]; ok { // daemon-wide default ulimits are not drift
				got[u.Name] = ulimitString(u)
			}
		}
		vals["ulimits"] = ctyval.MapOrNull(got)
	}
	if len(hc.CapAdd) > 0 || setByPrior("cap_add") {
		cs := []string{}
		for _, c := range hc.CapAdd {
			cs = append(cs, normCap(c))
		}
		vals["cap_add"] = ctyval.SetOrNull(cs)
	}
	if setByPrior("labels") {
		want := ctyval.StrMap(p("labels"))
		got := map[string]string{}
		for k := range want {
			if v, ok := cfg.Labels[k]; ok {
				got[k] = v
			}
		}
		vals["labels"] = ctyval.MapOrNull(got)
	}
	if hc.CgroupParent != "" || setByPrior("cgroup_parent") {
		vals["cgroup_parent"] = cty.StringVal(hc.CgroupParent)
	}
	if cfg.StopTimeout != nil {
		vals["stop_timeout"] = cty.NumberIntVal(int64(*cfg.StopTimeout))
	}

	// Binds: targets prior lists in bind_files are files; every other bind
	// is a mount block. Volumes the image declares are not ours.
	fileTargets := map[string]bool{}
	for _, f := range ctyval.Elems(p("bind_files")) {
		fileTargets[path.Clean(ctyval.Str(ctyval.Attr(f, "target")))] = true
	}
	priorMounts := map[string]cty.Value{}
	for _, m := range ctyval.Elems(p("mount")) {
		priorMounts[path.Clean(ctyval.Str(ctyval.Attr(m, "target")))] = m
	}
	var mounts, files []cty.Value
	for _, mp := range ins.Mounts {
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
	mountType := s.Block.BlockTypes["mount"].Block.ImpliedType()
	if len(mounts) == 0 {
		vals["mount"] = cty.SetValEmpty(mountType)
	} else {
		vals["mount"] = cty.SetVal(mounts)
	}
	if len(files) > 0 {
		vals["bind_files"] = cty.ListVal(orderLike(files, ctyval.Elems(p("bind_files"))))
	} else if setByPrior("bind_files") {
		vals["bind_files"] = cty.ListValEmpty(bindFileType)
	}

	for name := range notObservable {
		vals[name] = p(name)
	}

	vals["id"] = cty.StringVal(ins.ID)
	vals["image_id"] = cty.StringVal(ins.Image)
	running := ins.State != nil && ins.State.Running
	vals["running"] = cty.BoolVal(running)
	exit := 0
	if ins.State != nil {
		exit = ins.State.ExitCode
	}
	vals["exit_code"] = cty.NumberIntVal(int64(exit))
	if cg != nil && running {
		vals["cgroup_version"] = cty.NumberIntVal(int64(cg.Version))
		vals["cgroup_memory_max"] = cty.StringVal(cg.MemoryMax)
		vals["cgroup_memory_swap_max"] = cty.StringVal(cg.SwapMax)
		vals["cgroup_cpu_max"] = cty.StringVal(cg.CPUMax)
	}

	// Fill nulls, then keep prior's spelling where it means the same.
	for name, a := range s.Block.Attributes {
		if _, ok := vals[name]; !ok {
			vals[name] = cty.NullVal(a.Type)
		}
		if !a.Computed || a.Optional {
			if pv := p(name); equiv(name, pv, vals[name]) {
				vals[name] = pv
			}
		}
	}
	if pv := p("mount"); equiv("mount", pv, vals["mount"]) && !pv.IsNull() {
		vals["mount"] = pv
	}
	return cty.ObjectVal(vals)
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
	pos := map[string]int{}
	for i, w := range want {
		pos[ctyval.Str(ctyval.Attr(w, "target"))] = i
	}
	sort.SliceStable(got, func(i, j int) bool {
		pi, ok1 := pos[ctyval.Str(ctyval.Attr(got[i], "target"))]
		pj, ok2 := pos[ctyval.Str(ctyval.Attr(got[j], "target"))]
		if !ok1 {
			pi = math.MaxInt
		}
		if !ok2 {
			pj = math.MaxInt
		}
		return pi < pj
	})
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
