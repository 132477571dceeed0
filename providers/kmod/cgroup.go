package kmod

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

type cgroupResource struct{ k *kernel }

var _ sdk.Resource = (*cgroupResource)(nil)

// limit ties an attribute to its interface file and controller.
type limit struct {
	attr, file, ctrl string
}

var limits = []limit{
	{"memory_max", "memory.max", "memory"},
	{"memory_swap_max", "memory.swap.max", "memory"},
	{"cpus", "cpu.max", "cpu"},
	{"cpu_max", "cpu.max", "cpu"},
	{"pids_max", "pids.max", "pids"},
}

func cgroupSchema() *sdk.ResourceSchema {
	opt := func(t cty.Type, d string) *sdk.Attribute {
		return &sdk.Attribute{Type: t, Optional: true, Description: d}
	}
	comp := func(t cty.Type, d string) *sdk.Attribute {
		return &sdk.Attribute{Type: t, Computed: true, Description: d}
	}
	return &sdk.ResourceSchema{
		// What an instance manages on its node: two instances with the same
		// value on one node are refused at plan.
		Identity: []string{"path"},
		Description: "A cgroup v2 group with resource limits (the seed's serving guard: memory.max 9g, no swap, " +
			"cpu quota <= 6). docker_container.cgroup_parent can point at it. Destroy removes the group when empty and " +
			"disables only the controllers sparkform enabled.",
		Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
			"path": {Type: cty.String, Required: true, ForceNew: true,
				Description: "Group path relative to the cgroup root (/sys/fs/cgroup), e.g. \"sparkform/serve\". No \"..\", no leading \"/\"."},
			"memory_max":      opt(cty.String, "memory.max: bytes, \"9g\" (binary units k, m, g, t) or \"max\"."),
			"memory_swap_max": opt(cty.String, "memory.swap.max: \"0\" means no swap; bytes, \"1g\" or \"max\"."),
			"cpus":            opt(cty.Number, "CPU limit in CPUs, written as cpu.max \"QUOTA 100000\" (6 -> \"600000 100000\"). Conflicts with cpu_max."),
			"cpu_max":         opt(cty.String, "Raw cpu.max, \"QUOTA PERIOD\" (\"600000 100000\") or \"max\". Conflicts with cpus."),
			"pids_max":        opt(cty.String, "pids.max: a number of processes or \"max\"."),
			"exists":          comp(cty.Bool, "Whether the group exists on the node now."),
			"observed":        comp(cty.Map(cty.String), "The limit files as the kernel shows them (memory.max, memory.swap.max, cpu.max, pids.max)."),
			"enabled_controllers": comp(cty.List(cty.String),
				"Controllers sparkform enabled in an ancestor's cgroup.subtree_control, as \"ANCESTOR:CONTROLLER\" (\".\" is the root); destroy disables exactly these."),
			"created_paths": comp(cty.List(cty.String), "Groups sparkform created (the group and missing ancestors); destroy removes them when empty."),
		}},
	}
}

func (r *cgroupResource) Schema() *sdk.ResourceSchema { return cgroupSchema() }

// cleanPath checks a group path: relative, no "..", no empty components.
func cleanPath(p string) (string, error) {
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." {
		return "", fmt.Errorf("%w: path %q: give a path relative to the cgroup root without \"..\", \"//\", a leading or trailing \"/\", e.g. \"sparkform/serve\"", ErrBadValue, p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." || c == "." || strings.ContainsAny(c, "\n\x00") {
			return "", fmt.Errorf("%w: path %q must stay inside the cgroup root (no \"..\")", ErrBadValue, p)
		}
		if strings.HasPrefix(c, "cgroup.") {
			return "", fmt.Errorf("%w: path %q: a group name cannot start with \"cgroup.\" (the kernel's interface files)", ErrBadValue, p)
		}
	}
	return p, nil
}

// wantFile returns what to write for one limit attribute of v, and whether
// it is set.
func wantFile(v cty.Value, l limit) (string, bool, error) {
	a := v.GetAttr(l.attr)
	if a.IsNull() || !a.IsKnown() {
		return "", false, nil
	}
	switch l.attr {
	case "memory_max", "memory_swap_max":
		n, isMax, err := parseBytes(a.AsString())
		if err != nil {
			return "", true, fmt.Errorf("%s: %w", l.attr, err)
		}
		if isMax {
			return "max", true, nil
		}
		return strconv.FormatUint(n, 10), true, nil
	case "cpus":
		s, err := cpusToMax(a.AsBigFloat())
		return s, true, err
	case "cpu_max":
		s, err := cpuMaxNorm(a.AsString())
		return s, true, err
	default:
		s, err := pidsNorm(a.AsString())
		return s, true, err
	}
}

// fileEqual compares a limit as configured with the file's content.
func fileEqual(l limit, want, observed string) bool {
	if l.ctrl == "memory" {
		return memEqual(want, observed)
	}
	return want == strings.TrimSpace(observed)
}

// Validate implements sdk.Resource.
func (r *cgroupResource) Validate(_ context.Context, cfg cty.Value) sdk.Diagnostics {
	var diags sdk.Diagnostics
	if p := cfg.GetAttr("path"); p.IsKnown() && !p.IsNull() {
		if _, err := cleanPath(p.AsString()); err != nil {
			diags = append(diags, sdk.Errorf(sdk.AttrPath("path"), "Invalid cgroup path", "%v", err))
		}
	}
	for _, l := range limits {
		if _, _, err := wantFile(cfg, l); err != nil {
			diags = append(diags, sdk.Errorf(sdk.AttrPath(l.attr), "Invalid "+l.attr, "%v", err))
		}
	}
	if !cfg.GetAttr("cpus").IsNull() && !cfg.GetAttr("cpu_max").IsNull() {
		diags = append(diags, sdk.Errorf(sdk.AttrPath("cpu_max"), "Conflicting CPU limits",
			"set either cpus (a number of CPUs) or cpu_max (raw \"QUOTA PERIOD\"), not both"))
	}
	return diags
}

// cgObs is what the node shows for one group.
type cgObs struct {
	Exists bool
	Files  map[string]string
	Procs  []string
}

// cgReadScript prints "V2" when the root has cgroup.controllers, then for
// each group argument "G path", "E" when it exists, "F file=value" for the
// limit files and "P pid" for each process in it.
const cgReadScript = `r=$1; shift
[ -f "$r/cgroup.controllers" ] && echo V2
for g in "$@"; do
  printf 'G %s\n' "$g"
  d="$r/$g"
  [ -d "$d" ] || continue
  echo E
  for f in memory.max memory.swap.max cpu.max pids.max; do
    if [ -r "$d/$f" ]; then printf 'F %s=%s\n' "$f" "$(cat "$d/$f")"; fi
  done
  while read -r p; do echo "P $p"; done < "$d/cgroup.procs"
done
`

func (r *cgroupResource) observe(ctx context.Context, conn node.Conn, n sdk.Node, paths []string) (bool, map[string]*cgObs, error) {
	out, err := r.k.sh(ctx, conn, n, cgReadScript, append([]string{r.k.cfg.CgroupRoot}, paths...)...)
	if err != nil {
		return false, nil, fmt.Errorf("reading %s on %s: %s", r.k.cfg.CgroupRoot, n.Name, toolErr(err))
	}
	v2 := false
	obs := map[string]*cgObs{}
	var cur *cgObs
	for _, line := range strings.Split(out, "\n") {
		tag, rest, _ := strings.Cut(line, " ")
		switch {
		case tag == "V2":
			v2 = true
		case tag == "G":
			cur = &cgObs{Files: map[string]string{}}
			obs[rest] = cur
		case cur == nil:
		case tag == "E":
			cur.Exists = true
		case tag == "F":
			if k, v, ok := strings.Cut(rest, "="); ok {
				cur.Files[k] = v
			}
		case tag == "P":
			cur.Procs = append(cur.Procs, rest)
		}
	}
	for _, p := range paths {
		if obs[p] == nil { // callers index obs by every path they asked for
			return v2, nil, fmt.Errorf("reading %s on %s: no answer for group %q (output: %q)", r.k.cfg.CgroupRoot, n.Name, p, out)
		}
	}
	return v2, obs, nil
}

func noV2(n sdk.Node, root string) error {
	return fmt.Errorf("%w: %s has no cgroup v2 hierarchy at %s (cgroup.controllers is missing: the node runs cgroup v1 or a hybrid "+
		"layout). Boot it with systemd.unified_cgroup_hierarchy=1, or mount cgroup2 there", ErrNoCgroup2, n.Name, root)
}

// cgRec is the restore record (private data and the computed lists).
type cgRec struct {
	Enabled []string `json:"enabled"` // "ANCESTOR:CONTROLLER"
	Created []string `json:"created"`
}

func cgRecFrom(state cty.Value, private []byte) cgRec {
	var rec cgRec
	if len(private) > 0 && json.Unmarshal(private, &rec) == nil {
		return rec
	}
	if !state.IsNull() && state.IsKnown() {
		rec.Enabled = ctyval.StrList(state.GetAttr("enabled_controllers"))
		rec.Created = ctyval.StrList(state.GetAttr("created_paths"))
	}
	return rec
}

func (c cgRec) private() []byte { b, _ := json.Marshal(c); return b }

// withRecord adds the facts of the group's restore record on the node that
// c lacks (after a lost reply c knows none of them), record order first.
func (c cgRec) withRecord(r restore.Record) cgRec {
	union := func(first, then []string) []string {
		var out []string
		for _, x := range append(append([]string(nil), first...), then...) {
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
		return out
	}
	return cgRec{Enabled: union(r["enabled"], c.Enabled), Created: union(r["created"], c.Created)}
}

// record is the group's restore record on the node, if any.
func (r *cgroupResource) record(ctx context.Context, conn node.Conn, n sdk.Node, gpath string) (restore.Record, bool, error) {
	return r.k.cfg.For(n).cgroupRecords().Get(ctx, conn, n.Become, path.Join(r.k.cfg.CgroupRoot, gpath))
}

// cgObservedValue is base corrected by what the node shows: a limit that
// does not hold is replaced by the observed value, so the plan shows drift.
func cgObservedValue(base cty.Value, o *cgObs, rec cgRec) cty.Value {
	attrs := map[string]cty.Value{
		"exists":              cty.BoolVal(o.Exists),
		"observed":            ctyval.MapVal(o.Files),
		"enabled_controllers": ctyval.ListVal(rec.Enabled),
		"created_paths":       ctyval.ListVal(rec.Created),
	}
	for _, l := range limits {
		want, set, err := wantFile(base, l)
		if !set || err != nil {
			continue
		}
		got, ok := o.Files[l.file]
		if ok && fileEqual(l, want, got) {
			continue
		}
		switch {
		case !ok:
			attrs[l.attr] = cty.NullVal(base.GetAttr(l.attr).Type())
		case l.attr == "cpus":
			attrs[l.attr] = cty.NullVal(cty.Number)
			if f := strings.Fields(got); len(f) == 2 {
				q, err1 := strconv.ParseFloat(f[0], 64)
				p, err2 := strconv.ParseFloat(f[1], 64)
				if err1 == nil && err2 == nil && p > 0 {
					attrs[l.attr] = cty.NumberFloatVal(q / p)
				}
			}
		default:
			attrs[l.attr] = cty.StringVal(strings.TrimSpace(got))
		}
	}
	return ctyval.With(base, attrs)
}

// Read implements sdk.Resource: one remote command for every instance.
func (r *cgroupResource) Read(ctx context.Context, n sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	conn, err := r.k.pool.Get(ctx, n)
	if err != nil {
		return nil, 0, sdk.Diagnostics{sdk.FromError("Cannot reach node "+n.Name, err)}
	}
	var paths []string
	for _, it := range items {
		if !it.Prior.IsNull() {
			paths = append(paths, ctyval.Str(it.Prior.GetAttr("path")))
		}
	}
	v2, obs, err := r.observe(ctx, conn, n, paths)
	if err == nil && !v2 {
		err = noV2(n, r.k.cfg.CgroupRoot)
	}
	if err != nil {
		return nil, 1, sdk.Diagnostics{sdk.FromError("Cannot read cgroups", err)}
	}
	results := make([]sdk.ReadResult, len(items))
	trips := 1
	for i, it := range items {
		if it.Prior.IsNull() {
			results[i] = sdk.ReadResult{NewState: it.Prior}
			continue
		}
		gpath := ctyval.Str(it.Prior.GetAttr("path"))
		rec, private := cgRecFrom(it.Prior, it.Private), it.Private
		if len(private) == 0 {
			// Recovered from a journal intent (the apply's reply was
			// lost): what it created and enabled is in the node's record.
			trips++
			nr, ok, err := r.record(ctx, conn, n, gpath)
			if err != nil {
				return nil, trips, sdk.Diagnostics{sdk.FromError("Cannot read the restore record of "+gpath, err)}
			}
			if ok {
				rec = rec.withRecord(nr)
				private = rec.private()
			}
		}
		results[i] = sdk.ReadResult{NewState: cgObservedValue(it.Prior, obs[gpath], rec), Private: private}
	}
	return results, trips, nil
}

// Plan implements sdk.Resource.
func (r *cgroupResource) Plan(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	s := cgroupSchema()
	resp := sdk.DefaultPlan(s, req)
	if req.Proposed.IsNull() || req.Prior.IsNull() {
		if !req.Proposed.IsNull() {
			resp.Planned = ctyval.With(resp.Planned, map[string]cty.Value{"exists": cty.True})
			// Say at plan time, not halfway through an apply, that the
			// node has no cgroup v2 (one remote command).
			if conn, err := r.k.pool.Get(ctx, req.Node); err == nil {
				if v2, _, err := r.observe(ctx, conn, req.Node, nil); err == nil && !v2 {
					resp.Diagnostics = append(resp.Diagnostics, sdk.FromError("No cgroup v2 on "+req.Node.Name, noV2(req.Node, r.k.cfg.CgroupRoot)))
				}
			}
		}
		return resp
	}
	if resp.Planned.RawEquals(req.Prior) && req.Prior.GetAttr("exists").False() {
		// The group was removed behind our back: create it again (an
		// update, so the record of enabled controllers is kept).
		resp.Planned = ctyval.With(req.Proposed, map[string]cty.Value{
			"observed": cty.UnknownVal(cty.Map(cty.String)), "enabled_controllers": cty.UnknownVal(cty.List(cty.String)),
			"created_paths": cty.UnknownVal(cty.List(cty.String)),
		})
	}
	if !resp.Planned.RawEquals(req.Prior) {
		resp.Planned = ctyval.With(resp.Planned, map[string]cty.Value{"exists": cty.True})
	}
	return resp
}

// cgOps does the remote steps of an apply, each a round trip.
type cgOps struct {
	r    *cgroupResource
	conn node.Conn
	n    sdk.Node
	ctx  context.Context
}

func (o cgOps) abs(rel string) string {
	if rel == "." || rel == "" {
		return o.r.k.cfg.CgroupRoot
	}
	return path.Join(o.r.k.cfg.CgroupRoot, rel)
}

func (o cgOps) read(rel, file string) (string, error) {
	out, err := o.r.k.run(o.ctx, o.conn, o.n, "cat", path.Join(o.abs(rel), file))
	if err != nil {
		return "", fmt.Errorf("%s", toolErr(err))
	}
	return strings.TrimSpace(out), nil
}

func (o cgOps) write(rel, file, value string) error {
	// One fixed script; the path and value are its arguments.
	if _, err := o.r.k.sh(o.ctx, o.conn, o.n, `printf '%s\n' "$2" > "$1"`, path.Join(o.abs(rel), file), value); err != nil {
		return fmt.Errorf("writing %q to %s on %s: %s", value, path.Join(o.abs(rel), file), o.n.Name, toolErr(err))
	}
	return nil
}

// Apply implements sdk.Resource.
func (r *cgroupResource) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	n := req.Node
	base := req.Planned
	if base.IsNull() {
		base = req.Prior
	}
	gpath := ctyval.Str(base.GetAttr("path"))
	rec := cgRecFrom(req.Prior, req.Private)
	fail := func(state cty.Value, err error) sdk.ApplyResponse {
		return sdk.ApplyResponse{NewState: state, Private: rec.private(), Diagnostics: sdk.Diagnostics{sdk.FromError("kmod_cgroup "+gpath, err)}}
	}
	// Validate could not check a path known only now (another resource's
	// output); it must not leave the cgroup root.
	if _, err := cleanPath(gpath); err != nil {
		return fail(req.Prior, err)
	}
	conn, err := r.k.pool.Get(ctx, n)
	if err != nil {
		return fail(req.Prior, fmt.Errorf("cannot reach node %s: %w", n.Name, err))
	}
	ops := cgOps{r: r, conn: conn, n: n, ctx: ctx}
	look := func() (*cgObs, error) {
		v2, obs, err := r.observe(ctx, conn, n, []string{gpath})
		if err == nil && !v2 {
			err = noV2(n, r.k.cfg.CgroupRoot)
		}
		if err != nil {
			return nil, err
		}
		return obs[gpath], nil
	}
	o, err := look()
	if err != nil {
		return fail(req.Prior, err)
	}
	real := func(b cty.Value) cty.Value {
		if o2, err := look(); err == nil {
			o = o2
		}
		return cgObservedValue(b, o, rec)
	}

	records := r.k.cfg.For(n).cgroupRecords()
	recKey := ops.abs(gpath)
	if req.Planned.IsNull() {
		// What to undo: private data, and the node's record, which also
		// holds what an apply whose reply was lost created and enabled.
		if nr, ok, err := records.Get(ctx, conn, n.Become, recKey); err != nil {
			return fail(real(req.Prior), err)
		} else if ok {
			rec = rec.withRecord(nr)
		}
		var diags sdk.Diagnostics
		if o.Exists {
			if len(o.Procs) > 0 {
				return fail(real(req.Prior), fmt.Errorf("%w: %s on %s still has processes %s: stop them (or the container using it) "+
					"and destroy again", ErrNotEmpty, gpath, n.Name, strings.Join(o.Procs, ", ")))
			}
			progress(sdk.Progress{Message: "rmdir " + gpath})
			if _, err := r.k.run(ctx, conn, n, "rmdir", ops.abs(gpath)); err != nil {
				return fail(real(req.Prior), fmt.Errorf("removing %s on %s: %s", gpath, n.Name, toolErr(err)))
			}
		}
		step(req.Address, "delete-group-removed")
		// What is left to undo is named by the record: the instance leaves
		// state only once all of it is undone. A step that fails (a
		// dropped link, a refused write) keeps the instance and the record,
		// so that the next destroy finishes; only what others now use
		// (a group with other groups or processes in it, a controller a
		// child group relies on) is left with a warning, as theirs.
		var cut []string
		for i := len(rec.Created) - 1; i >= 0; i-- { // deepest first
			// A recorded group may never have been made (the record is
			// written before the mkdir): gone is fine.
			c := rec.Created[i]
			if c == gpath {
				continue
			}
			out, err := r.k.sh(ctx, conn, n, cgRmdirScript, ops.abs(c))
			switch {
			case err != nil:
				cut = append(cut, fmt.Sprintf("removing the group %s it created: %s", c, toolErr(err)))
			case strings.TrimSpace(out) == "kept":
				diags = append(diags, sdk.Diagnostic{Severity: sdk.Warning, Summary: "Ancestor group left in place",
					Detail: fmt.Sprintf("sparkform created %s on %s, but other groups or processes are in it now, so it is left as it is; remove it when it is empty", c, n.Name)})
			}
		}
		for i := len(rec.Enabled) - 1; i >= 0; i-- {
			// In a group sparkform created and removed above there is
			// nothing left to disable.
			dir, ctrl, _ := strings.Cut(rec.Enabled[i], ":")
			out, err := r.k.sh(ctx, conn, n, cgDisableScript, ops.abs(dir), ctrl)
			switch {
			case err != nil:
				cut = append(cut, fmt.Sprintf("disabling %s in %s, which it enabled: %s", ctrl, dir, toolErr(err)))
			case strings.TrimSpace(out) == "kept":
				diags = append(diags, sdk.Diagnostic{Severity: sdk.Warning, Summary: "Controller left enabled",
					Detail: fmt.Sprintf("sparkform enabled %s in %s on %s, but a group below it now uses it, so it stays enabled", ctrl, dir, n.Name)})
			}
		}
		if len(cut) == 0 {
			// Everything put back: only now may the record go.
			if err := records.Remove(ctx, conn, n.Become, recKey); err != nil {
				cut = append(cut, "removing its restore record: "+err.Error())
			}
		}
		if len(cut) > 0 {
			resp := fail(real(req.Prior), fmt.Errorf("destroy of %s on %s did not finish: %s. The instance stays in state with its restore record on the node; "+
				"run destroy again to finish", gpath, n.Name, strings.Join(cut, "; ")))
			resp.Diagnostics = append(resp.Diagnostics, diags...)
			return resp
		}
		return sdk.ApplyResponse{NewState: cty.NullVal(req.Planned.Type()), Diagnostics: diags}
	}

	planned := req.Planned
	// Which controllers the limits need.
	need := []string{}
	for _, l := range limits {
		if _, set, _ := wantFile(planned, l); set && !slices.Contains(need, l.ctrl) {
			need = append(need, l.ctrl)
		}
	}
	avail, err := ops.read(".", "cgroup.controllers")
	if err != nil {
		return fail(req.Prior, err)
	}
	for _, c := range need {
		if !slices.Contains(strings.Fields(avail), c) {
			return fail(req.Prior, fmt.Errorf("%w: the %s controller is not available on %s (cgroup.controllers: %q)", ErrNoCgroup2, c, n.Name, avail))
		}
	}
	// Walk down from the root: which controllers to enable where, which
	// groups to create (a group made now has none enabled).
	type cgStep struct{ dir, ctrl string } // enable ctrl in dir; no ctrl: create dir
	var steps []cgStep
	comps := strings.Split(gpath, "/")
	cur, exists := ".", true
	for i := range comps {
		sc := ""
		if exists {
			if sc, err = ops.read(cur, "cgroup.subtree_control"); err != nil {
				return fail(real(planned), err)
			}
		}
		for _, ctrl := range need {
			if !slices.Contains(strings.Fields(sc), ctrl) {
				steps = append(steps, cgStep{cur, ctrl})
			}
		}
		next := path.Join(comps[:i+1]...)
		if exists {
			_, err := ops.read(next, "cgroup.controllers")
			exists = err == nil
		}
		if !exists {
			steps = append(steps, cgStep{dir: next})
		}
		cur = next
	}
	// What destroy must undo is on the node, durably, before the first
	// change: a reply lost after it (a killed CLI or plugin, a dropped
	// link) cannot lose it.
	add := restore.Record{}
	for _, st := range steps {
		if st.ctrl == "" {
			add["created"] = append(add["created"], st.dir)
		} else {
			add["enabled"] = append(add["enabled"], st.dir+":"+st.ctrl)
		}
	}
	if len(add) > 0 {
		if err := records.Append(ctx, conn, n.Become, recKey, add); err != nil {
			return fail(req.Prior, fmt.Errorf("recording what destroy must undo, before changing anything: %w", err))
		}
	}
	for _, st := range steps {
		if st.ctrl == "" {
			progress(sdk.Progress{Message: "mkdir " + ops.abs(st.dir)})
			if _, err := r.k.run(ctx, conn, n, "mkdir", ops.abs(st.dir)); err != nil {
				return fail(real(planned), fmt.Errorf("creating %s on %s: %s", st.dir, n.Name, toolErr(err)))
			}
			if !slices.Contains(rec.Created, st.dir) {
				rec.Created = append(rec.Created, st.dir)
			}
			continue
		}
		progress(sdk.Progress{Message: fmt.Sprintf("enable %s in %s", st.ctrl, ops.abs(st.dir))})
		if err := ops.write(st.dir, "cgroup.subtree_control", "+"+st.ctrl); err != nil {
			return fail(real(planned), err)
		}
		if e := st.dir + ":" + st.ctrl; !slices.Contains(rec.Enabled, e) {
			rec.Enabled = append(rec.Enabled, e)
		}
	}
	// Limits: set ones are written; ones dropped from config go back to "max".
	for _, l := range limits {
		want, set, err := wantFile(planned, l)
		if err != nil {
			return fail(real(planned), err)
		}
		if !set {
			// Dropped from config: give the file back its default.
			if !req.Prior.IsNull() && !fileSet(planned, l.file) {
				if _, was, _ := wantFile(req.Prior, l); was && o.Exists {
					if err := ops.write(gpath, l.file, "max"); err != nil {
						return fail(real(planned), err)
					}
				}
			}
			continue
		}
		progress(sdk.Progress{Message: fmt.Sprintf("%s = %s", l.file, want)})
		if err := ops.write(gpath, l.file, want); err != nil {
			return fail(real(planned), err)
		}
	}
	st := real(planned)
	var bad []string
	for _, l := range limits {
		want, set, _ := wantFile(planned, l)
		if set && !fileEqual(l, want, o.Files[l.file]) {
			bad = append(bad, fmt.Sprintf("%s is %q (wrote %q)", l.file, o.Files[l.file], want))
		}
	}
	if len(bad) > 0 {
		return fail(st, fmt.Errorf("the kernel did not take the limits on %s: %s", n.Name, strings.Join(bad, "; ")))
	}
	return sdk.ApplyResponse{NewState: st, Private: rec.private()}
}

// cgRmdirScript ($1 group folder) removes a group sparkform created: done
// when it is gone; "kept" when other groups or processes are in it now
// (theirs, not ours to remove); otherwise the kernel's error.
const cgRmdirScript = `d=$1
[ -d "$d" ] || exit 0
err=$(rmdir "$d" 2>&1) && exit 0
for c in "$d"/*/; do
  [ -d "$c" ] && { echo kept; exit 0; }
done
[ -s "$d/cgroup.procs" ] && { echo kept; exit 0; }
printf '%s\n' "$err" >&2
exit 1
`

// cgDisableScript ($1 group folder, $2 controller) disables a controller
// sparkform enabled: done when the group is gone or the controller is off;
// "kept" when a child group has it in its own subtree_control (the kernel
// refuses while one does); otherwise the kernel's error.
const cgDisableScript = `d=$1 c=$2
[ -d "$d" ] || exit 0
grep -qw -- "$c" "$d/cgroup.subtree_control" || exit 0
err=$( { printf '%s\n' "-$c" > "$d/cgroup.subtree_control"; } 2>&1) && exit 0
for s in "$d"/*/cgroup.subtree_control; do
  [ -f "$s" ] && grep -qw -- "$c" "$s" && { echo kept; exit 0; }
done
printf '%s\n' "$err" >&2
exit 1
`

// step marks a point between two node changes of an apply: a fault point
// in test builds (sdk.Step), and testStep for this package's tests.
func step(address, name string) {
	sdk.Step(address, name)
	if testStep != nil {
		testStep(address, name)
	}
}

// testStep, set only by tests (export_test.go), runs at each step.
var testStep func(address, name string)

// fileSet reports whether any limit attribute of v writes file.
func fileSet(v cty.Value, file string) bool {
	for _, l := range limits {
		if _, set, _ := wantFile(v, l); set && l.file == file {
			return true
		}
	}
	return false
}

// Import implements sdk.Resource: the id is the group path; its current
// limits become the config values and nothing is recorded to undo.
func (r *cgroupResource) Import(ctx context.Context, req sdk.ImportRequest) sdk.ImportResponse {
	p, err := cleanPath(strings.Trim(req.ID, "/"))
	if err != nil {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Invalid import id", "%v", err)}}
	}
	conn, err := r.k.pool.Get(ctx, req.Node)
	if err != nil {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot reach node "+req.Node.Name, err)}}
	}
	v2, obs, err := r.observe(ctx, conn, req.Node, []string{p})
	if err == nil && !v2 {
		err = noV2(req.Node, r.k.cfg.CgroupRoot)
	}
	if err == nil && !obs[p].Exists {
		err = fmt.Errorf("%w: no cgroup %s under %s on %s", sdk.ErrNotFound, p, r.k.cfg.CgroupRoot, req.Node.Name)
	}
	if err != nil {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot import cgroup", err)}}
	}
	o := obs[p]
	vals := map[string]cty.Value{}
	for name, a := range cgroupSchema().Block.Attributes {
		vals[name] = cty.NullVal(a.Type)
	}
	vals["path"] = cty.StringVal(p)
	for _, l := range limits {
		if v, ok := o.Files[l.file]; ok && l.attr != "cpus" {
			vals[l.attr] = cty.StringVal(v)
		}
	}
	rec := cgRec{}
	return sdk.ImportResponse{State: cgObservedValue(cty.ObjectVal(vals), o, rec), Private: rec.private()}
}
