package docker

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// readParallel bounds concurrent inspects in one Read batch when each
// API connection is cheap (the socket, directly or over an SSH channel).
const readParallel = 8

type containerResource struct {
	clients *clients
	once    sync.Once
	schema  *sdk.ResourceSchema
}

var _ sdk.Resource = (*containerResource)(nil)

// Schema implements sdk.Resource.
func (r *containerResource) Schema() *sdk.ResourceSchema {
	r.once.Do(func() { r.schema = containerSchema() })
	return r.schema
}

// Validate implements sdk.Resource.
func (r *containerResource) Validate(_ context.Context, config cty.Value) sdk.Diagnostics {
	_, diags := parseSpec(config)
	return diags
}

// inspected is one container's inspect result and its cgroup values.
type inspected struct {
	ins   container.InspectResponse
	found bool
	err   error
}

// inspectJobs returns one job per non-empty id that inspects it into
// out[i] (left zero, not found, when the container is gone). The jobs do
// not depend on each other or on anything else a Read does, so runWave can
// run them alongside other reads of the node.
func inspectJobs(ctx context.Context, d *dockerClient, ids []string, out []inspected) []func() {
	var jobs []func()
	for i, id := range ids {
		if id == "" {
			continue
		}
		jobs = append(jobs, func() {
			res, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			switch {
			case isNotFound(err):
			case err != nil:
				out[i].err = err
			default:
				out[i] = inspected{ins: res.Container, found: true}
			}
		})
	}
	return jobs
}

// runWave runs jobs concurrently, parallel at a time, and returns how
// many sequential waves of remote calls that is.
func runWave(parallel int, jobs []func()) int {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, job := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			job()
		}()
	}
	wg.Wait()
	return (len(jobs) + parallel - 1) / parallel
}

// cgroupsFor reads the cgroup values of the running ones in one command.
func cgroupsFor(ctx context.Context, d *dockerClient, ins []inspected) (map[int]cgroupValues, int, error) {
	var pids []int
	for _, x := range ins {
		if x.found && x.ins.State != nil && x.ins.State.Running && x.ins.State.Pid > 0 {
			pids = append(pids, x.ins.State.Pid)
		}
	}
	if len(pids) == 0 {
		return nil, 0, nil
	}
	conn, err := d.conn(ctx)
	if err != nil {
		return nil, 0, err
	}
	return readCgroups(ctx, conn, d.node.Become, pids)
}

func cgFor(cgs map[int]cgroupValues, ins container.InspectResponse) *cgroupValues {
	if ins.State == nil {
		return nil
	}
	if cg, ok := cgs[ins.State.Pid]; ok {
		return &cg
	}
	return nil
}

// Read implements sdk.Resource: inspect every instance (concurrently) and
// read all cgroup values in one remote command. The provider's
// ReadResources does the same alongside docker_image reads.
func (r *containerResource) Read(ctx context.Context, n sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	d, err := r.clients.get(ctx, n)
	if err != nil {
		return nil, 0, sdk.Diagnostics{sdk.FromError("Cannot reach Docker on "+n.Name, err)}
	}
	ids := containerRefs(items)
	ins := make([]inspected, len(ids))
	trips := runWave(d.readParallel(), inspectJobs(ctx, d, ids, ins))
	results, t2 := r.finishRead(ctx, d, n, items, ins)
	return results, trips + t2, nil
}

// containerRefs is what to inspect for each item: its id, else its name.
func containerRefs(items []sdk.ReadItem) []string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = ctyval.Str(ctyval.Attr(it.Prior, "id"))
		if ids[i] == "" {
			ids[i] = ctyval.Str(ctyval.Attr(it.Prior, "name"))
		}
	}
	return ids
}

// finishRead reads the cgroup values of the running containers in ins (one
// remote command) and builds the results; it returns the round trips made.
func (r *containerResource) finishRead(ctx context.Context, d *dockerClient, n sdk.Node, items []sdk.ReadItem, ins []inspected) ([]sdk.ReadResult, int) {
	cgs, trips, cgErr := cgroupsFor(ctx, d, ins)
	results := make([]sdk.ReadResult, len(items))
	for i, it := range items {
		res := sdk.ReadResult{Private: it.Private, NewState: cty.NullVal(r.Schema().Block.ImpliedType())}
		switch {
		case ins[i].err != nil:
			res.NewState = it.Prior
			res.Diagnostics = sdk.Diagnostics{sdk.FromError("Cannot inspect container for "+it.Address, ins[i].err)}
		case !ins[i].found:
			// removed: drift, planned as a create
		default:
			res.NewState = observe(r.Schema(), it.Prior, ins[i].ins, cgFor(cgs, ins[i].ins))
			if cgErr != nil {
				res.Diagnostics = append(res.Diagnostics, sdk.Diagnostic{Severity: sdk.Warning,
					Summary: "Cannot read container cgroup values on " + n.Name, Detail: cgErr.Error()})
			}
		}
		results[i] = res
	}
	return results, trips
}

// Plan implements sdk.Resource.
func (r *containerResource) Plan(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	s := r.Schema()
	if req.Proposed.IsNull() {
		return sdk.PlanResponse{Planned: req.Proposed, PlannedPrivate: req.PriorPrivate}
	}
	spc, diags := parseSpec(req.Config)
	if diags.HasErrors() {
		return sdk.PlanResponse{Diagnostics: diags}
	}
	// Keep prior's spelling where config means the same ("9g" vs "9216m").
	vals := req.Proposed.AsValueMap()
	same := map[string]bool{} // equivalent to prior, checked once
	if !req.Prior.IsNull() {
		for name, a := range s.Block.Attributes {
			if (!a.Computed || a.Optional) && equiv(name, req.Prior.GetAttr(name), vals[name]) {
				vals[name] = req.Prior.GetAttr(name)
				same[name] = true
			}
		}
		if equiv("mount", req.Prior.GetAttr("mount"), vals["mount"]) {
			vals["mount"] = req.Prior.GetAttr("mount")
			same["mount"] = true
		}
	}
	// Binds are only (re)made on create or replace; an unchanged set was
	// checked when it was made, so a no-change plan runs no command.
	bindsChange := !same["bind_files"] || !same["mount"]
	diags = append(diags, r.checkOnNode(ctx, req, spc, bindsChange)...)
	if diags.HasErrors() {
		return sdk.PlanResponse{Diagnostics: diags}
	}
	computedUnknown := func() {
		for name, a := range s.Block.Attributes {
			if a.Computed && !a.Optional {
				vals[name] = cty.UnknownVal(a.Type)
			}
		}
		if spc.MustRun {
			vals["running"] = cty.True
		}
	}
	if req.Prior.IsNull() {
		computedUnknown()
		return sdk.PlanResponse{Planned: cty.ObjectVal(vals), PlannedPrivate: req.PriorPrivate, Diagnostics: diags}
	}

	var replace []cty.Path
	changed, limits := false, false
	for name, a := range s.Block.Attributes {
		if a.Computed && !a.Optional {
			continue
		}
		pv, nv := req.Prior.GetAttr(name), vals[name]
		if same[name] || sdk.ValuesEqual(pv, nv) {
			continue
		}
		changed = true
		switch {
		case a.ForceNew:
			replace = append(replace, cty.GetAttrPath(name))
		case inPlace[name] && name != "restart":
			limits = true
			// The engine's update cannot remove a limit: lifting one
			// replaces the container.
			if nv.IsNull() || !nv.IsKnown() {
				replace = append(replace, cty.GetAttrPath(name))
			}
		}
	}
	if !same["mount"] && !sdk.ValuesEqual(req.Prior.GetAttr("mount"), vals["mount"]) {
		changed = true
		replace = append(replace, cty.GetAttrPath("mount"))
	}
	if !sdk.ValuesEqual(req.Prior.GetAttr("wait"), vals["wait"]) {
		changed = true
	}
	stopped := !ctyval.Bool(req.Prior.GetAttr("running"), false)
	if spc.MustRun && stopped {
		changed = true // drift: stopped by hand or crashed
	}
	if !changed {
		return sdk.PlanResponse{Planned: req.Prior, PlannedPrivate: req.PriorPrivate, Diagnostics: diags}
	}
	if len(replace) > 0 {
		computedUnknown()
		return sdk.PlanResponse{Planned: cty.ObjectVal(vals), RequiresReplace: replace, PlannedPrivate: req.PriorPrivate, Diagnostics: diags}
	}
	// In place: identity stays, what the kernel applies may change.
	for _, name := range []string{"id", "image_id", "running", "exit_code", "cgroup_version", "cgroup_memory_max", "cgroup_memory_swap_max", "cgroup_cpu_max"} {
		vals[name] = req.Prior.GetAttr(name)
	}
	if spc.MustRun && stopped {
		vals["running"] = cty.True
		vals["exit_code"] = cty.UnknownVal(cty.Number)
	}
	if limits || (spc.MustRun && stopped) {
		for _, name := range []string{"cgroup_version", "cgroup_memory_max", "cgroup_memory_swap_max", "cgroup_cpu_max"} {
			vals[name] = cty.UnknownVal(cty.String)
		}
		vals["cgroup_version"] = cty.UnknownVal(cty.Number)
	}
	return sdk.PlanResponse{Planned: cty.ObjectVal(vals), PlannedPrivate: req.PriorPrivate, Diagnostics: diags}
}

// bindCheckScript reads lines "F PATH" (must be a regular file, not a
// symlink) and "E PATH" (must exist) on stdin and prints the lines that
// fail. Paths come only through stdin: nothing is interpolated, and they
// are printed with printf (dash's echo would expand a backslash in them).
const bindCheckScript = `
while IFS= read -r line; do
  k=${line%% *}; p=${line#* }
  case $k in
    F) if [ -h "$p" ] || [ ! -f "$p" ]; then
         if [ -h "$p" ]; then k=symlink; elif [ -d "$p" ]; then k=directory;
         elif [ -e "$p" ]; then k=special; else k=missing; fi
         printf '%s %s\n' "$k" "$p"
       fi ;;
  esac
done
`

// checkOnNode does the plan-time checks that need the node: bind sources,
// a same-named container sparkform did not create, cgroup_parent's form
// for the engine's cgroup driver. One API call and one command at most.
func (r *containerResource) checkOnNode(ctx context.Context, req sdk.PlanRequest, spc spec, bindsChange bool) sdk.Diagnostics {
	var diags sdk.Diagnostics
	if !bindsChange && !req.Prior.IsNull() && spc.CgroupParent == "" {
		return nil // nothing to look at: no client, no round trip
	}
	if req.Offline {
		return nil // -refresh=false: apply checks all of it
	}
	d, err := r.clients.get(ctx, req.Node)
	if err != nil {
		return sdk.Diagnostics{sdk.FromError("Cannot reach Docker on "+req.Node.Name, err)}
	}
	var in strings.Builder
	if cfg := req.Config; bindsChange && ctyval.Known(ctyval.Attr(cfg, "bind_files")) {
		for _, f := range spc.BindFiles {
			in.WriteString("F " + f.Source + "\n")
		}
	}
	// Mount sources are not checked here: they are often made by another
	// resource in the same apply (a kit's serving/ folder). Docker refuses
	// a missing one when the container is created, with its path.
	if in.Len() > 0 {
		conn, err := d.conn(ctx)
		if err != nil {
			return append(diags, sdk.FromError("Cannot reach "+req.Node.Name, err))
		}
		res, err := conn.Run(ctx, node.Cmd{Argv: []string{"sh", "-c", bindCheckScript}, Stdin: strings.NewReader(in.String()), Become: req.Node.Become})
		if err != nil {
			return append(diags, sdk.FromError("Cannot check bind sources on "+req.Node.Name, err))
		}
		var bad []string
		for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
			if l != "" {
				bad = append(bad, l)
			}
		}
		if len(bad) > 0 {
			shown := bad
			if len(shown) > 10 {
				shown = append(shown[:10:10], fmt.Sprintf("... and %d more", len(bad)-10))
			}
			diags = append(diags, sdk.Errorf(sdk.AttrPath("bind_files"), "Bind sources are not usable on "+req.Node.Name,
				"%v: every bind_files source must be a regular file (not a symlink: give its resolved path):\n  %s", ErrNotRegularFile, strings.Join(shown, "\n  ")))
		}
	}
	if req.Prior.IsNull() && spc.Name != "" {
		if err := r.refuseForeign(ctx, d, spc.Name, req.Address); errors.Is(err, ErrNotManaged) {
			diags = append(diags, sdk.Errorf(sdk.AttrPath("name"), "Container name taken", "%v", err))
		} else if err != nil {
			diags = append(diags, sdk.FromError("Cannot look for a container named "+spc.Name+" on "+req.Node.Name, err))
		}
	}
	if spc.CgroupParent != "" {
		info, err := d.api.Info(ctx, client.InfoOptions{})
		if err == nil {
			slice := strings.HasSuffix(spc.CgroupParent, ".slice")
			if info.Info.CgroupDriver == "systemd" && !slice {
				diags = append(diags, sdk.Errorf(sdk.AttrPath("cgroup_parent"), "cgroup_parent needs a slice",
					"Docker on %s uses the systemd cgroup driver: give a slice name such as \"sparkform.slice\", not %q", req.Node.Name, spc.CgroupParent))
			} else if info.Info.CgroupDriver == "cgroupfs" && slice {
				diags = append(diags, sdk.Errorf(sdk.AttrPath("cgroup_parent"), "cgroup_parent needs a path",
					"Docker on %s uses the cgroupfs driver: give a path relative to the cgroup root such as \"/sparkform\", not %q", req.Node.Name, spc.CgroupParent))
			}
		}
	}
	return diags
}

// refuseForeign returns ErrNotManaged when a container named name exists
// and does not carry this address's label.
func (r *containerResource) refuseForeign(ctx context.Context, d *dockerClient, name, address string) error {
	res, err := d.api.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if res.Container.Config != nil && res.Container.Config.Labels[labelAddress] == address && address != "" {
		return nil
	}
	owner := ""
	if res.Container.Config != nil && res.Container.Config.Labels[labelAddress] != "" {
		owner = " (it belongs to " + res.Container.Config.Labels[labelAddress] + ")"
	}
	return fmt.Errorf("%w: a container named %q (%s) already exists on %s%s; import it with `sparkform import %s %s`, or remove it",
		ErrNotManaged, name, res.Container.ID[:12], d.node.Name, owner, shellQuote(address), shellQuote(name))
}

// shellQuote quotes s for a POSIX shell, for commands a message suggests
// (an address holds brackets and double quotes).
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Apply implements sdk.Resource.
func (r *containerResource) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	d, err := r.clients.get(ctx, req.Node)
	if err != nil {
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot reach Docker on "+req.Node.Name, err)}}
	}
	fail := func(summary string, err error) sdk.ApplyResponse {
		return sdk.ApplyResponse{NewState: r.current(ctx, d, req), Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.FromError(summary, err)}}
	}
	if req.Planned.IsNull() {
		if err := r.remove(ctx, d, req.Prior, progress); err != nil {
			return fail("Cannot remove container "+ctyval.Str(ctyval.Attr(req.Prior, "name")), err)
		}
		return sdk.ApplyResponse{NewState: req.Planned, Private: req.Private}
	}
	spc, diags := parseSpec(req.Planned)
	if diags.HasErrors() {
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: diags}
	}
	id := ""
	if !req.Prior.IsNull() {
		id = ctyval.Str(req.Prior.GetAttr("id"))
		if !ctyval.Known(req.Planned.GetAttr("id")) { // replace
			if err := r.remove(ctx, d, req.Prior, progress); err != nil {
				return fail("Cannot remove the container being replaced", err)
			}
			id = ""
		}
	}
	if id == "" {
		id, err = r.create(ctx, d, req.Address, spc, progress)
		if err != nil {
			return fail("Cannot create container "+spc.Name, err)
		}
	} else {
		upd := client.ContainerUpdateOptions{}
		res := spc.resources()
		upd.Resources = &res
		rp := spc.Restart
		if rp.Name == "" {
			rp.Name = container.RestartPolicyDisabled
		}
		upd.RestartPolicy = &rp
		progress(sdk.Progress{Message: "updating " + spc.Name + " in place"})
		if _, err := d.api.ContainerUpdate(ctx, id, upd); err != nil {
			return fail("Cannot update container "+spc.Name, err)
		}
	}
	ins, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return fail("Cannot inspect container "+spc.Name, err)
	}
	if spc.MustRun && (ins.Container.State == nil || !ins.Container.State.Running) {
		progress(sdk.Progress{Message: "starting " + spc.Name})
		if _, err := d.api.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			return fail("Cannot start container "+spc.Name, startHint(err, spc, d.node.Name))
		}
		if spc.Wait != nil {
			if err := waitReady(ctx, d, id, spc.Wait, progress); err != nil {
				return fail("Container "+spc.Name+" did not become ready", err)
			}
		}
	}
	st := r.current(ctx, d, req)
	if st.IsNull() {
		return sdk.ApplyResponse{NewState: st, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Container vanished", "%s was removed while apply ran", spc.Name)}}
	}
	return sdk.ApplyResponse{NewState: st, Private: req.Private}
}

// current reads back what is really on the node for req (by the id the
// node holds under the planned name), merged with the planned spelling.
func (r *containerResource) current(ctx context.Context, d *dockerClient, req sdk.ApplyRequest) cty.Value {
	ctx = context.WithoutCancel(ctx)
	ref := ctyval.Str(ctyval.Attr(req.Planned, "name"))
	base := req.Planned
	if req.Planned.IsNull() {
		ref, base = ctyval.Str(ctyval.Attr(req.Prior, "id")), req.Prior
	}
	null := cty.NullVal(r.Schema().Block.ImpliedType())
	if ref == "" {
		return null
	}
	res, err := d.api.ContainerInspect(ctx, ref, client.ContainerInspectOptions{})
	if err != nil {
		if isNotFound(err) {
			return null
		}
		return req.Prior
	}
	if lbl := res.Container.Config; lbl != nil && lbl.Labels[labelAddress] != req.Address && ctyval.Str(ctyval.Attr(req.Prior, "id")) != res.Container.ID {
		return req.Prior // someone else's container: not ours to record
	}
	cgs, _, _ := cgroupsFor(ctx, d, []inspected{{ins: res.Container, found: true}})
	return observe(r.Schema(), stripUnknown(base), res.Container, cgFor(cgs, res.Container))
}

// stripUnknown turns unknown attributes of a planned value into nulls so it
// can serve as the "prior spelling" for observe.
func stripUnknown(v cty.Value) cty.Value {
	if v.IsNull() || !v.IsKnown() {
		return v
	}
	vals := v.AsValueMap()
	for k, x := range vals {
		if !x.IsWhollyKnown() {
			vals[k] = cty.NullVal(x.Type())
		}
	}
	return cty.ObjectVal(vals)
}

// create makes the container (pulling its image when missing).
func (r *containerResource) create(ctx context.Context, d *dockerClient, address string, spc spec, progress func(sdk.Progress)) (string, error) {
	if err := r.refuseForeign(ctx, d, spc.Name, address); err != nil {
		return "", err
	}
	// Ours from an interrupted apply (same address label): replace it.
	if _, err := d.api.ContainerRemove(ctx, spc.Name, client.ContainerRemoveOptions{Force: true}); err != nil && !isNotFound(err) {
		return "", err
	}
	if _, err := d.api.ImageInspect(ctx, spc.Image); isNotFound(err) {
		if err := pull(ctx, d, spc.Image, progress); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	cfg, hc := spc.createConfig(address)
	progress(sdk.Progress{Message: fmt.Sprintf("creating %s (%d binds)", spc.Name, len(hc.Mounts)+len(hc.Binds))})
	res, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{Name: spc.Name, Config: cfg, HostConfig: hc})
	if err != nil {
		if strings.Contains(err.Error(), "bind source path does not exist") {
			return "", fmt.Errorf("%w (a mount source must exist when the container is created: make it, let the resource that makes it come first, or set create_host_path = true)", err)
		}
		return "", err
	}
	for _, w := range res.Warnings {
		progress(sdk.Progress{Message: "docker: " + w})
	}
	return res.ID, nil
}

// remove stops (honouring stop_timeout) and removes the container in prior.
func (r *containerResource) remove(ctx context.Context, d *dockerClient, prior cty.Value, progress func(sdk.Progress)) error {
	id := ctyval.Str(ctyval.Attr(prior, "id"))
	if id == "" {
		return nil
	}
	progress(sdk.Progress{Message: "stopping " + ctyval.Str(ctyval.Attr(prior, "name"))})
	var timeout *int
	if st := ctyval.Attr(prior, "stop_timeout"); ctyval.IsSet(st) {
		t := int(ctyval.Number(st))
		timeout = &t
	}
	start := time.Now()
	if err := stopContainer(ctx, d, id, timeout); err != nil {
		return err
	}
	if _, err := d.api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil && !isNotFound(err) {
		return err
	}
	progress(sdk.Progress{Message: "removed " + ctyval.Str(ctyval.Attr(prior, "name")), Elapsed: time.Since(start)})
	return nil
}

// Import implements sdk.Resource: ID is a container name or id. Everything
// observable is reported; env and labels leave out what the image sets.
func (r *containerResource) Import(ctx context.Context, req sdk.ImportRequest) sdk.ImportResponse {
	d, err := r.clients.get(ctx, req.Node)
	if err != nil {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot reach Docker on "+req.Node.Name, err)}}
	}
	res, err := d.api.ContainerInspect(ctx, req.ID, client.ContainerInspectOptions{})
	if err != nil {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot import container "+req.ID, err)}}
	}
	c := res.Container
	// A prior that "sets" the image-independent parts makes observe report them.
	env, labels := map[string]string{}, map[string]string{}
	imgEnv, imgLabels := map[string]bool{}, map[string]string{}
	if img, err := d.api.ImageInspect(ctx, c.Image); err == nil && img.Config != nil {
		for _, kv := range img.Config.Env {
			imgEnv[kv] = true
		}
		imgLabels = img.Config.Labels
	}
	if c.Config != nil {
		for _, kv := range c.Config.Env {
			if !imgEnv[kv] {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		}
		for k, v := range c.Config.Labels {
			if iv, ok := imgLabels[k]; (!ok || iv != v) && k != labelAddress && k != labelManaged {
				labels[k] = v
			}
		}
	}
	s := r.Schema()
	prior := map[string]cty.Value{}
	for name, a := range s.Block.Attributes {
		prior[name] = cty.NullVal(a.Type)
	}
	prior["mount"] = cty.SetValEmpty(s.Block.BlockTypes["mount"].Block.ImpliedType())
	prior["wait"] = cty.NullVal(s.Block.BlockTypes["wait"].Block.ImpliedType())
	if c.Config != nil {
		prior["entrypoint"] = ctyval.ListOrNull(emptyIfNil(c.Config.Entrypoint))
		prior["command"] = ctyval.ListOrNull(emptyIfNil(c.Config.Cmd))
		if c.Config.WorkingDir != "" {
			prior["working_dir"] = cty.StringVal(c.Config.WorkingDir)
		}
		if c.Config.User != "" {
			prior["user"] = cty.StringVal(c.Config.User)
		}
	}
	if len(env) > 0 {
		prior["env"] = ctyval.MapOrNull(env)
	}
	if len(labels) > 0 {
		prior["labels"] = ctyval.MapOrNull(labels)
	}
	if c.HostConfig != nil {
		prior["network_mode"] = ctyval.StrOrNull(string(c.HostConfig.NetworkMode))
		prior["ipc_mode"] = ctyval.StrOrNull(string(c.HostConfig.IpcMode))
		if len(c.HostConfig.Ulimits) > 0 {
			u := map[string]string{}
			for _, x := range c.HostConfig.Ulimits {
				u[x.Name] = ulimitString(x)
			}
			prior["ulimits"] = ctyval.MapOrNull(u)
		}
	}
	cgs, _, _ := cgroupsFor(ctx, d, []inspected{{ins: c, found: true}})
	return sdk.ImportResponse{State: observe(s, cty.ObjectVal(prior), c, cgFor(cgs, c))}
}

// startHint adds what to do to a start error the engine words for
// itself only.
func startHint(err error, spc spec, node string) error {
	err = rlimitHint(gpuDriverHint(err, spc.GPUs, node), spc.Ulimits, node)
	if m := missingDeviceRE.FindStringSubmatch(err.Error()); m != nil {
		hint := ""
		if strings.HasSuffix(m[1], "/infiniband") || strings.Contains(m[1], "/infiniband/") {
			hint = " (no RDMA device: the node has no RoCE/InfiniBand NIC, or its drivers, mlx5_ib and ib_uverbs, are not loaded; the spark-recipe module binds it with infiniband = true)"
		}
		err = fmt.Errorf("%w: the device %s does not exist on %s%s; remove it from devices or make it exist before the container starts", err, m[1], node, hint)
	}
	if spc.Privileged && strings.Contains(err.Error(), "unable to apply caps: operation not permitted") {
		err = fmt.Errorf("%w: privileged = true asks for every capability, and the Docker Engine on %s runs without some of them (Docker inside a container, "+
			"or a reduced capability bounding set), so it cannot give them; run the engine with every capability, or set privileged = false and add what the image needs "+
			"with cap_add and devices", err, node)
	}
	return err
}

// gpuDriverHint says what to do when the engine could not serve the GPU
// device request (docker run --gpus): the engine's own words name no
// package. Other errors are returned as they are.
func gpuDriverHint(err error, gpus, node string) error {
	if gpus == "" || !strings.Contains(err.Error(), "could not select device driver") {
		return err
	}
	return fmt.Errorf("%w (%v): gpus = %q needs the NVIDIA Container Toolkit on %s (install it, run `nvidia-ctk runtime configure --runtime=docker` and restart Docker), "+
		"or leave gpus unset (null) where the node's default runtime already gives the container its GPU", ErrNoGPUDriver, err, gpus, node)
}

// rlimitNames are Linux's RLIMIT_* numbers, as runc names them in its
// error ("error setting rlimit type 8").
var rlimitNames = map[string]string{"0": "cpu", "1": "fsize", "2": "data", "3": "stack", "4": "core", "5": "rss", "6": "nproc",
	"7": "nofile", "8": "memlock", "9": "as", "10": "locks", "11": "sigpending", "12": "msgqueue", "13": "nice", "14": "rtprio", "15": "rttime"}

var missingDeviceRE = regexp.MustCompile(`error gathering device information while adding custom device "([^"]+)": no such file or directory`)

var rlimitErrRE = regexp.MustCompile(`error setting rlimit type (\d+): operation not permitted`)

// rlimitHint says what to do when the runtime may not raise a ulimit: an
// engine without CAP_SYS_RESOURCE (rootless Docker, Docker inside a
// container) cannot go above its own hard limit. Other errors are
// returned as they are.
func rlimitHint(err error, ulimits []*container.Ulimit, node string) error {
	m := rlimitErrRE.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	name := rlimitNames[m[1]]
	want := ""
	for _, u := range ulimits {
		if u.Name == name {
			want = fmt.Sprintf(" = %q", ulimitString(u))
		}
	}
	return fmt.Errorf("%w: ulimits.%s%s is above what the Docker Engine on %s may set: its processes lack CAP_SYS_RESOURCE (rootless Docker, or Docker inside a container) "+
		"and cannot raise a limit above their own hard limit (see `grep -i %s /proc/$(pidof dockerd)/limits`); run the engine as root with that capability, "+
		"or lower ulimits.%s to at most that hard limit", ErrUlimitNotPermitted, name, want, node, rlimitLabel(name), name)
}

// rlimitLabel is the words /proc/PID/limits uses for a ulimit's name.
func rlimitLabel(name string) string {
	switch name {
	case "memlock":
		return "'locked memory'"
	case "stack":
		return "'stack size'"
	case "nofile":
		return "'open files'"
	}
	return name
}
