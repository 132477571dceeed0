package docker

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
)

// cpuPeriod is the CFS period cpus is applied over (the kernel default).
const cpuPeriod = 100000

// defaultWaitTimeout bounds a wait block without a timeout.
const defaultWaitTimeout = 2 * time.Minute

// spec is a docker_container config in Go terms, checked.
type spec struct {
	Name, Image          string
	Entrypoint, Command  []string
	Env                  map[string]string
	WorkingDir, User     string
	Memory, MemorySwap   int64 // 0: unset; MemorySwap -1: unlimited
	CPUs                 float64
	ShmSize              int64
	PidsLimit            *int64
	Devices              []container.DeviceMapping
	GPUs                 string
	NetworkMode, IpcMode string
	Ulimits              []*container.Ulimit
	CapAdd               []string
	Privileged           bool
	Labels               map[string]string
	CgroupParent         string
	Restart              container.RestartPolicy
	Mounts               []mountSpec
	BindFiles            []bindFile
	Wait                 *waitSpec
	StopTimeout          *int
	MustRun              bool
}

type mountSpec struct {
	Source, Target   string
	ReadOnly, Create bool
}

type bindFile struct{ Source, Target string }

type waitSpec struct {
	HTTP, TCP, LogLine string
	Timeout            time.Duration
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
var capRE = regexp.MustCompile(`^[A-Za-z_]+$`)

// parseSpec reads and checks a config value. Unknown parts are skipped (no
// error); callers that need a complete spec check ctyval.Known() first.
func parseSpec(v cty.Value) (spec, sdk.Diagnostics) {
	sp := &specParser{v: v}
	sp.process()
	sp.resources()
	sp.devices()
	sp.privileges()
	sp.lifecycle()
	sp.binds()
	sp.wait()
	return sp.s, sp.diags
}

// specParser reads one config value into a spec, group by group,
// gathering the diagnostics.
type specParser struct {
	v     cty.Value
	s     spec
	diags sdk.Diagnostics
}

func (sp *specParser) bad(name, summary, format string, args ...any) {
	sp.diags = append(sp.diags, sdk.Errorf(sdk.AttrPath(name), summary, format, args...))
}

// get is attribute name when it is known and set.
func (sp *specParser) get(name string) (cty.Value, bool) {
	a := ctyval.Attr(sp.v, name)
	return a, ctyval.Known(a) && !a.IsNull()
}

// size reads a size attribute ("9g"); 0 when unset, -1 for "-1" where
// allowUnlimited.
func (sp *specParser) size(name string, allowUnlimited bool) int64 {
	a, ok := sp.get(name)
	if !ok {
		return 0
	}
	if allowUnlimited && a.AsString() == "-1" {
		return -1
	}
	n, err := parseSize(a.AsString())
	if err != nil {
		sp.bad(name, "Invalid size", "%v", err)
		return 0
	}
	if n == 0 {
		sp.bad(name, "Invalid size", "%s = %q is zero; leave it unset for no limit", name, a.AsString())
	}
	return n
}

// process reads the process: name, image, entrypoint, command, env, working_dir, user.
func (sp *specParser) process() {
	if a, ok := sp.get("name"); ok {
		sp.s.Name = a.AsString()
		if !nameRE.MatchString(sp.s.Name) {
			sp.bad("name", "Invalid container name", "%q: use letters, digits, '_', '.' and '-', starting with a letter or digit", sp.s.Name)
		}
	}
	if a, ok := sp.get("image"); ok {
		sp.s.Image = a.AsString()
		if _, err := reference.ParseNormalizedNamed(sp.s.Image); err != nil {
			sp.bad("image", "Invalid image reference", "%q: %v; write it as [registry/]repo[:tag|@digest]", sp.s.Image, err)
		}
	}
	// An argv element or environment value is a C string in the
	// container's process: a NUL would cut it short where the plan shows
	// the whole value.
	noNUL := func(name string, vals ...string) {
		for _, x := range vals {
			if strings.IndexByte(x, 0) >= 0 {
				sp.bad(name, "NUL byte in "+name, "%q contains a NUL byte, which a process argument or environment value cannot hold; remove it", x)
				return
			}
		}
	}
	if a, ok := sp.get("entrypoint"); ok {
		sp.s.Entrypoint = ctyval.StrList(a)
		noNUL("entrypoint", sp.s.Entrypoint...)
	}
	if a, ok := sp.get("command"); ok {
		sp.s.Command = ctyval.StrList(a)
		noNUL("command", sp.s.Command...)
	}
	if a, ok := sp.get("env"); ok {
		sp.s.Env = ctyval.StrMap(a)
		for _, k := range ctyval.SortedKeys(sp.s.Env) {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				sp.bad("env", "Invalid environment variable name", "%q: a name may not be empty or contain '='", k)
			}
			noNUL("env", sp.s.Env[k])
		}
	}
	if a, ok := sp.get("working_dir"); ok {
		sp.s.WorkingDir = a.AsString()
		noNUL("working_dir", sp.s.WorkingDir)
	}
	if a, ok := sp.get("user"); ok {
		sp.s.User = a.AsString()
		noNUL("user", sp.s.User)
	}
}

// resources reads the resource limits: memory, memory_swap, shm_size, cpus, pids_limit.
func (sp *specParser) resources() {
	sp.s.Memory = sp.size("memory", false)
	sp.s.MemorySwap = sp.size("memory_swap", true)
	sp.s.ShmSize = sp.size("shm_size", false)
	if sp.s.Memory > 0 && sp.s.Memory < 6<<20 {
		sp.bad("memory", "Memory limit too small", "%s: the engine needs at least 6m", formatSize(sp.s.Memory))
	}
	if sp.s.MemorySwap > 0 {
		if _, ok := sp.get("memory"); !ok && ctyval.Known(ctyval.Attr(sp.v, "memory")) {
			sp.bad("memory_swap", "memory_swap without memory", "memory_swap is memory plus swap; set memory too")
		} else if sp.s.Memory > 0 && sp.s.MemorySwap < sp.s.Memory {
			sp.bad("memory_swap", "memory_swap below memory", "memory_swap (%s) is memory plus swap and must be >= memory (%s); equal means no swap",
				formatSize(sp.s.MemorySwap), formatSize(sp.s.Memory))
		}
	}
	if a, ok := sp.get("cpus"); ok {
		sp.s.CPUs = ctyval.Number(a)
		if sp.s.CPUs < 0.01 || sp.s.CPUs > 4096 {
			sp.bad("cpus", "Invalid cpus", "%v: use a number of CPUs between 0.01 and 4096", sp.s.CPUs)
		}
	}
	if a, ok := sp.get("pids_limit"); ok {
		f := ctyval.Number(a)
		if f != math.Trunc(f) || f < 1 {
			sp.bad("pids_limit", "Invalid pids_limit", "%v: use a whole number >= 1 (unset for no limit)", f)
		}
		n := int64(f)
		sp.s.PidsLimit = &n
	}
}

// devices reads devices and namespaces: devices, gpus, network_mode, ipc_mode.
func (sp *specParser) devices() {
	if a, ok := sp.get("devices"); ok {
		for i, d := range ctyval.StrList(a) {
			m, err := parseDevice(d)
			if err != nil {
				sp.diags = append(sp.diags, sdk.Errorf(cty.GetAttrPath("devices").IndexInt(i), "Invalid device", "%v", err))
				continue
			}
			sp.s.Devices = append(sp.s.Devices, m)
		}
	}
	if a, ok := sp.get("gpus"); ok {
		sp.s.GPUs = a.AsString()
		if _, err := gpuRequest(sp.s.GPUs); err != nil {
			sp.bad("gpus", "Invalid gpus", "%v", err)
		}
	}
	if a, ok := sp.get("network_mode"); ok {
		sp.s.NetworkMode = a.AsString()
	}
	if a, ok := sp.get("ipc_mode"); ok {
		sp.s.IpcMode = a.AsString()
		if !container.IpcMode(sp.s.IpcMode).Valid() {
			sp.bad("ipc_mode", "Invalid ipc_mode", "%q: use private, shareable, host, none or container:NAME", sp.s.IpcMode)
		}
	}
}

// privileges reads ulimits, cap_add and privileged.
func (sp *specParser) privileges() {
	if a, ok := sp.get("privileged"); ok {
		sp.s.Privileged = a.True()
	}
	if a, ok := sp.get("ulimits"); ok {
		m := ctyval.StrMap(a)
		for _, k := range ctyval.SortedKeys(m) {
			u, err := parseUlimit(k, m[k])
			if err != nil {
				sp.bad("ulimits", "Invalid ulimit", "%v", err)
				continue
			}
			sp.s.Ulimits = append(sp.s.Ulimits, u)
		}
	}
	if a, ok := sp.get("cap_add"); ok {
		for _, c := range ctyval.StrList(a) {
			if !capRE.MatchString(c) {
				sp.bad("cap_add", "Invalid capability", "%q: use a name such as SYS_NICE or CAP_SYS_NICE", c)
			}
			sp.s.CapAdd = append(sp.s.CapAdd, normCap(c))
		}
		sort.Strings(sp.s.CapAdd)
	}
}

// lifecycle reads labels, cgroup_parent, restart, stop_timeout, must_run.
func (sp *specParser) lifecycle() {
	if a, ok := sp.get("labels"); ok {
		sp.s.Labels = ctyval.StrMap(a)
		for k := range sp.s.Labels {
			if k == labelAddress || k == labelManaged {
				sp.bad("labels", "Reserved label", "%q is set by sparkform itself; remove it", k)
			}
		}
	}
	if a, ok := sp.get("cgroup_parent"); ok {
		sp.s.CgroupParent = a.AsString()
		if strings.HasPrefix(sp.s.CgroupParent, "/sys/fs/cgroup") {
			sp.bad("cgroup_parent", "cgroup_parent is a mount path", "%q: give the path relative to the cgroup root, e.g. %q",
				sp.s.CgroupParent, "/"+strings.TrimLeft(strings.TrimPrefix(sp.s.CgroupParent, "/sys/fs/cgroup"), "/"))
		}
	}
	if a, ok := sp.get("restart"); ok {
		rp, err := parseRestart(a.AsString())
		if err != nil {
			sp.bad("restart", "Invalid restart policy", "%v", err)
		}
		sp.s.Restart = rp
	}
	if a, ok := sp.get("stop_timeout"); ok {
		f := ctyval.Number(a)
		if f != math.Trunc(f) || f < 0 {
			sp.bad("stop_timeout", "Invalid stop_timeout", "%v: use whole seconds >= 0", f)
		}
		n := int(f)
		sp.s.StopTimeout = &n
	}
	sp.s.MustRun = ctyval.Bool(ctyval.Attr(sp.v, "must_run"), true)
}

// absPath checks that val is an absolute path without newlines or NULs.
func (sp *specParser) absPath(p cty.Path, what, val string) bool {
	if !path.IsAbs(val) || strings.ContainsAny(val, "\n\x00") {
		sp.diags = append(sp.diags, sdk.Errorf(p, "Invalid path", "%s %q must be an absolute path without newlines", what, val))
		return false
	}
	return true
}

// cleanTarget checks a bind target and returns its clean form. A target is
// where the runtime creates and binds inside the container's root: one
// with "." or ".." steps (/m/../../proc/x) is resolved by the runtime, not
// by what the plan shows, so it is refused with its clean form. Doubled or
// trailing slashes are harmless and cleaned.
func (sp *specParser) cleanTarget(p cty.Path, what, val string) (string, bool) {
	if !sp.absPath(p, what, val) {
		return val, false
	}
	for _, el := range strings.Split(val, "/") {
		if el == "." || el == ".." {
			sp.diags = append(sp.diags, sdk.Errorf(p, "Invalid path", "%s %q has a %q step; write the path it means, %q, or another absolute path without . or ..", what, val, el, path.Clean(val)))
			return val, false
		}
	}
	c := path.Clean(val)
	if c == "/" {
		sp.diags = append(sp.diags, sdk.Errorf(p, "Invalid path", "%s %q is the container's root; bind to a folder inside it", what, val))
		return val, false
	}
	return c, true
}

// binds reads the mount blocks and bind_files: absolute clean targets, one bind per target, at most MaxBinds.
func (sp *specParser) binds() {
	targets := map[string]string{}
	seen := func(p cty.Path, target, what string) {
		if prev, dup := targets[target]; dup {
			sp.diags = append(sp.diags, sdk.Errorf(p, "Duplicate target", "%s binds to %s, which %s already binds", what, target, prev))
		}
		targets[target] = what
	}
	if a := ctyval.Attr(sp.v, "mount"); ctyval.Known(a) {
		for i, m := range ctyval.Elems(a) {
			ms := mountSpec{Source: ctyval.Str(ctyval.Attr(m, "source")), Target: ctyval.Str(ctyval.Attr(m, "target")),
				ReadOnly: ctyval.Bool(ctyval.Attr(m, "read_only"), false), Create: ctyval.Bool(ctyval.Attr(m, "create_host_path"), false)}
			p := cty.GetAttrPath("mount").IndexInt(i)
			if t, ok := sp.cleanTarget(p.GetAttr("target"), "mount target", ms.Target); sp.absPath(p.GetAttr("source"), "mount source", ms.Source) && ok {
				ms.Target = t
				seen(p, t, "mount "+ms.Source)
			}
			sp.s.Mounts = append(sp.s.Mounts, ms)
		}
	}
	if a := ctyval.Attr(sp.v, "bind_files"); ctyval.Known(a) {
		for i, f := range ctyval.Elems(a) {
			b := bindFile{Source: ctyval.Str(ctyval.Attr(f, "source")), Target: ctyval.Str(ctyval.Attr(f, "target"))}
			p := cty.GetAttrPath("bind_files").IndexInt(i)
			if t, ok := sp.cleanTarget(p.GetAttr("target"), "bind_files target", b.Target); sp.absPath(p.GetAttr("source"), "bind_files source", b.Source) && ok {
				b.Target = t
				seen(p, t, "bind_files "+b.Source)
			}
			sp.s.BindFiles = append(sp.s.BindFiles, b)
		}
	}
	if n := len(sp.s.Mounts) + len(sp.s.BindFiles); n > MaxBinds {
		sp.diags = append(sp.diags, sdk.Errorf(sdk.AttrPath("bind_files"), "Too many binds",
			"%d binds (mount blocks + bind_files) is more than the kernel's mount-max of %d: bind a directory instead of its files", n, MaxBinds))
	}
}

// wait reads the wait block: exactly one of http, tcp or log_line, and its timeout.
func (sp *specParser) wait() {
	if w := ctyval.Attr(sp.v, "wait"); ctyval.Known(w) && !w.IsNull() {
		ws := &waitSpec{HTTP: ctyval.Str(ctyval.Attr(w, "http")), TCP: ctyval.Str(ctyval.Attr(w, "tcp")), LogLine: ctyval.Str(ctyval.Attr(w, "log_line")), Timeout: defaultWaitTimeout}
		p := cty.GetAttrPath("wait")
		n := 0
		for _, x := range []string{ws.HTTP, ws.TCP, ws.LogLine} {
			if x != "" {
				n++
			}
		}
		if n != 1 {
			sp.diags = append(sp.diags, sdk.Errorf(p, "Invalid wait block", "set exactly one of http, tcp or log_line (got %d)", n))
		}
		if ws.HTTP != "" {
			if u, err := url.Parse(ws.HTTP); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				sp.diags = append(sp.diags, sdk.Errorf(p.GetAttr("http"), "Invalid wait URL", "%q: use http://HOST:PORT/PATH as reached from the node", ws.HTTP))
			}
		}
		if ws.TCP != "" {
			if _, _, err := net.SplitHostPort(ws.TCP); err != nil {
				sp.diags = append(sp.diags, sdk.Errorf(p.GetAttr("tcp"), "Invalid wait address", "%q: use HOST:PORT (%v)", ws.TCP, err))
			}
		}
		if ws.LogLine != "" {
			if _, err := regexp.Compile(ws.LogLine); err != nil {
				sp.diags = append(sp.diags, sdk.Errorf(p.GetAttr("log_line"), "Invalid log_line regexp", "%v", err))
			}
		}
		if t := ctyval.Str(ctyval.Attr(w, "timeout")); t != "" {
			d, err := time.ParseDuration(t)
			if err != nil || d <= 0 {
				sp.diags = append(sp.diags, sdk.Errorf(p.GetAttr("timeout"), "Invalid wait timeout", "%q: use a Go duration such as \"90s\" or \"10m\"", t))
			}
			ws.Timeout = d
		}
		sp.s.Wait = ws
	}
}

// parseDevice reads "/dev/x", "/dev/x:/dev/y" or "/dev/x:/dev/y:rw".
func parseDevice(d string) (container.DeviceMapping, error) {
	parts := strings.Split(d, ":")
	m := container.DeviceMapping{CgroupPermissions: "rwm"}
	switch len(parts) {
	case 1:
		m.PathOnHost, m.PathInContainer = parts[0], parts[0]
	case 2:
		m.PathOnHost, m.PathInContainer = parts[0], parts[1]
		if !strings.HasPrefix(parts[1], "/") { // "/dev/x:rw"
			m.PathInContainer, m.CgroupPermissions = parts[0], parts[1]
		}
	case 3:
		m.PathOnHost, m.PathInContainer, m.CgroupPermissions = parts[0], parts[1], parts[2]
	default:
		return m, fmt.Errorf("%q: use /dev/HOST or /dev/HOST:/dev/CONTAINER[:PERMS]", d)
	}
	if !path.IsAbs(m.PathOnHost) || !path.IsAbs(m.PathInContainer) {
		return m, fmt.Errorf("%q: device paths must be absolute (e.g. /dev/dri/card0)", d)
	}
	perms := ""
	for _, c := range "rwm" {
		if strings.ContainsRune(m.CgroupPermissions, c) {
			perms += string(c)
		}
	}
	if m.CgroupPermissions == "" || len(perms) != len(m.CgroupPermissions) {
		return m, fmt.Errorf("%q: permissions %q must be letters from rwm", d, m.CgroupPermissions)
	}
	m.CgroupPermissions = perms
	return m, nil
}

func deviceString(m container.DeviceMapping) string {
	perms := m.CgroupPermissions
	if perms == "" {
		perms = "rwm"
	}
	if p, err := parseDevice(m.PathOnHost + ":" + m.PathInContainer + ":" + perms); err == nil {
		perms = p.CgroupPermissions
	}
	return m.PathOnHost + ":" + m.PathInContainer + ":" + perms
}

// gpuRequest turns "all" or a count into a device request.
func gpuRequest(g string) (container.DeviceRequest, error) {
	r := container.DeviceRequest{Capabilities: [][]string{{"gpu"}}}
	if g == "all" {
		r.Count = -1
		return r, nil
	}
	n, err := strconv.Atoi(g)
	if err != nil || n < 1 {
		return r, fmt.Errorf("%q: use \"all\" or a number of GPUs >= 1", g)
	}
	r.Count = n
	return r, nil
}

// parseRestart reads "no", "always", "unless-stopped", "on-failure[:N]".
func parseRestart(r string) (container.RestartPolicy, error) {
	name, n, hasN := strings.Cut(r, ":")
	rp := container.RestartPolicy{Name: container.RestartPolicyMode(name)}
	if hasN {
		c, err := strconv.Atoi(n)
		if err != nil || c < 0 || rp.Name != container.RestartPolicyOnFailure {
			return rp, fmt.Errorf("%q: only on-failure takes a retry count (on-failure:3)", r)
		}
		rp.MaximumRetryCount = c
	}
	if err := container.ValidateRestartPolicy(rp); err != nil || name == "" {
		return rp, fmt.Errorf("%q: use no, always, unless-stopped or on-failure[:N]", r)
	}
	return rp, nil
}

func restartString(rp container.RestartPolicy) string {
	switch {
	case rp.Name == "" || rp.Name == container.RestartPolicyDisabled:
		return "no"
	case rp.Name == container.RestartPolicyOnFailure && rp.MaximumRetryCount > 0:
		return "on-failure:" + strconv.Itoa(rp.MaximumRetryCount)
	}
	return string(rp.Name)
}

func parseUlimit(name, v string) (*container.Ulimit, error) {
	soft, hard, hasHard := strings.Cut(v, ":")
	s, err1 := strconv.ParseInt(soft, 10, 64)
	h := s
	var err2 error
	if hasHard {
		h, err2 = strconv.ParseInt(hard, 10, 64)
	}
	if err1 != nil || err2 != nil || name == "" {
		return nil, fmt.Errorf("%s = %q: use \"SOFT\" or \"SOFT:HARD\" (numbers, -1 for unlimited)", name, v)
	}
	if s != -1 && h != -1 && s > h {
		return nil, fmt.Errorf("%s = %q: soft limit above hard limit", name, v)
	}
	return &container.Ulimit{Name: name, Soft: s, Hard: h}, nil
}

func ulimitString(u *container.Ulimit) string {
	return strconv.FormatInt(u.Soft, 10) + ":" + strconv.FormatInt(u.Hard, 10)
}

func normCap(c string) string {
	c = strings.ToUpper(c)
	if c != "ALL" && !strings.HasPrefix(c, "CAP_") {
		c = "CAP_" + c
	}
	return c
}

// normImage makes "busybox" and "docker.io/library/busybox:latest" equal.
func normImage(s string) string {
	r, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return s
	}
	return reference.TagNameOnly(r).String()
}

// createConfig builds what ContainerCreate needs from s.
func (s spec) createConfig(address string) (*container.Config, *container.HostConfig) {
	labels := map[string]string{labelAddress: address, labelManaged: "true"}
	for k, v := range s.Labels {
		labels[k] = v
	}
	cfg := &container.Config{
		Image:       s.Image,
		Entrypoint:  s.Entrypoint,
		Cmd:         s.Command,
		WorkingDir:  s.WorkingDir,
		User:        s.User,
		Labels:      labels,
		StopTimeout: s.StopTimeout,
	}
	for _, k := range ctyval.SortedKeys(s.Env) {
		cfg.Env = append(cfg.Env, k+"="+s.Env[k])
	}
	hc := &container.HostConfig{
		NetworkMode:   container.NetworkMode(s.NetworkMode),
		IpcMode:       container.IpcMode(s.IpcMode),
		CapAdd:        s.CapAdd,
		Privileged:    s.Privileged,
		ShmSize:       s.ShmSize,
		RestartPolicy: s.Restart,
	}
	hc.Resources = s.resources()
	hc.CgroupParent = s.CgroupParent
	hc.PidsLimit = s.PidsLimit
	hc.Devices = s.Devices
	hc.Ulimits = s.Ulimits
	if s.GPUs != "" {
		r, _ := gpuRequest(s.GPUs)
		hc.DeviceRequests = []container.DeviceRequest{r}
	}
	for _, m := range s.Mounts {
		if m.Create {
			// Binds (docker run -v) create a missing source directory;
			// Mounts refuse it, which is what create_host_path = false wants.
			b := m.Source + ":" + m.Target
			if m.ReadOnly {
				b += ":ro"
			}
			hc.Binds = append(hc.Binds, b)
			continue
		}
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	for _, f := range s.BindFiles {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: f.Source, Target: f.Target, ReadOnly: true})
	}
	return cfg, hc
}

// resources is the in-place updatable part.
func (s spec) resources() container.Resources {
	r := container.Resources{Memory: s.Memory, MemorySwap: s.MemorySwap}
	if s.CPUs > 0 {
		r.CPUPeriod = cpuPeriod
		r.CPUQuota = int64(math.Round(s.CPUs * cpuPeriod))
	}
	return r
}
