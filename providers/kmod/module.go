package kmod

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

type moduleResource struct{ k *kernel }

var _ sdk.Resource = (*moduleResource)(nil)

var priorType = cty.Object(map[string]cty.Type{"loaded": cty.Bool, "params": cty.Map(cty.String)})

const (
	stateLoaded   = "loaded"
	stateUnloaded = "unloaded"
)

func moduleSchema() *sdk.ResourceSchema {
	return &sdk.ResourceSchema{
		// What an instance manages on its node: two instances with the same
		// value on one node are refused at plan.
		Identity: []string{"name"},
		// modprobe takes nvidia-drm for nvidia_drm: one module either way.
		IdentityFold: map[string]string{"name": sdk.FoldDashUnderscore},
		Description: "A kernel module loaded (or not) with given parameters, temporarily: nothing is written to " +
			"/etc/modprobe.d or modules-load.d, a reboot resets it and the next plan shows the drift. " +
			"Destroy puts back exactly what was there before sparkform first changed it (`prior`, also kept in a restore record " +
			"on the node, written before the first change).",
		Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
			"name": {Type: cty.String, Required: true, ForceNew: true,
				Description: "Module name, e.g. \"nvidia_drm\" (dash and underscore are the same name)."},
			"params": {Type: cty.Map(cty.String), Optional: true,
				Description: "Parameters to load the module with, e.g. { modeset = \"1\", fbdev = \"0\" }. Compared as the kernel " +
					"means them (bool: Y/N = 1/0/y/n; integers by value). Parameters not named here are never drift. " +
					"A change reloads the module (rmmod, then modprobe NAME k=v ...). Values are printable ASCII without spaces or double " +
					"quotes: the kernel splits parameters at whitespace and groups with quotes, so such a value would set other parameters."},
			"state": {Type: cty.String, Optional: true,
				Description: "\"loaded\" (default) or \"unloaded\" to make sure the module is out."},
			"loaded": {Type: cty.Bool, Computed: true, Description: "Whether the module is loaded now."},
			"observed_params": {Type: cty.Map(cty.String), Computed: true,
				Description: "Every readable parameter under /sys/module/NAME/parameters, as the kernel shows it."},
			"prior": {Type: priorType, Computed: true,
				Description: "What was there before sparkform first changed the module: loaded or not, and every readable " +
					"parameter's value. Destroy restores it."},
		}},
	}
}

func (r *moduleResource) Schema() *sdk.ResourceSchema { return moduleSchema() }

// Names never start with '-': modprobe and rmmod would take the word (a
// module name, or a "KEY=VALUE" parameter after it) as an option.
var moduleNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)
var paramNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

func normName(s string) string { return sdk.FoldIdentity(sdk.FoldDashUnderscore, s) }

func desiredState(v cty.Value) string {
	if s := ctyval.Str(v.GetAttr("state")); s != "" {
		return s
	}
	return stateLoaded
}

// Validate implements sdk.Resource.
func (r *moduleResource) Validate(_ context.Context, cfg cty.Value) sdk.Diagnostics {
	var diags sdk.Diagnostics
	if v := cfg.GetAttr("name"); v.IsKnown() && !v.IsNull() && !moduleNameRE.MatchString(v.AsString()) {
		diags = append(diags, sdk.Errorf(sdk.AttrPath("name"), "Invalid module name",
			"%q is not a module name: use letters, digits, '_' or '-' (not first), as in \"nvidia_drm\"", v.AsString()))
	}
	if v := cfg.GetAttr("state"); v.IsKnown() && !v.IsNull() && v.AsString() != stateLoaded && v.AsString() != stateUnloaded {
		diags = append(diags, sdk.Errorf(sdk.AttrPath("state"), "Invalid state",
			"state = %q: use \"loaded\" (the default) or \"unloaded\"", v.AsString()))
	}
	if v := cfg.GetAttr("params"); v.IsKnown() && !v.IsNull() {
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			path := sdk.AttrPath("params").Index(k)
			if !paramNameRE.MatchString(k.AsString()) {
				diags = append(diags, sdk.Errorf(path, "Invalid parameter name",
					"%q is not a module parameter name (letters, digits, '_', not starting with '-')", k.AsString()))
			}
			if e.IsKnown() && !e.IsNull() {
				if err := checkParamValue(k.AsString(), e.AsString()); err != nil {
					diags = append(diags, sdk.Errorf(path, "Invalid parameter value", "%s", strings.TrimPrefix(err.Error(), ErrBadValue.Error()+": ")))
				}
			}
		}
		if st := cfg.GetAttr("state"); st.IsKnown() && !st.IsNull() && st.AsString() == stateUnloaded && v.LengthInt() > 0 {
			diags = append(diags, sdk.Errorf(sdk.AttrPath("params"), "Parameters for an unloaded module",
				"state = \"unloaded\" takes no params: remove params or the state line"))
		}
	}
	return diags
}

// checkArgs checks at apply what Validate checks when it can: a name or
// parameter that comes from another resource is only known now, and it
// reaches modprobe and rmmod as their arguments.
func checkArgs(name string, params map[string]string) error {
	if !moduleNameRE.MatchString(name) {
		return fmt.Errorf("%w: %q is not a module name: use letters, digits, '_' or '-' (not first), as in \"nvidia_drm\"", ErrBadValue, name)
	}
	for _, k := range ctyval.SortedKeys(params) {
		if !paramNameRE.MatchString(k) {
			return fmt.Errorf("%w: %q is not a module parameter name (letters, digits, '_', not starting with '-')", ErrBadValue, k)
		}
		if err := checkParamValue(k, params[k]); err != nil {
			return err
		}
	}
	return nil
}

// checkParamValue refuses what the kernel's module parameter parser
// (parse_args/next_arg in kernel/params.c) does not take as plain value
// text: modprobe joins all KEY=VALUE words into one string and the kernel
// splits it again at whitespace, with double quotes grouping words. So
// rd_nr = "2\" max_part=\"7" would set max_part too. Only printable ASCII
// without '"' and space is let through (the kernel's isspace also counts
// byte 0xA0, found inside UTF-8 text).
func checkParamValue(key, v string) error {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == 0 || c == '\n':
			return fmt.Errorf("%w: the value of %s has a newline or NUL byte, which a module parameter cannot hold", ErrBadValue, key)
		case c == '"':
			return fmt.Errorf("%w: the value of %s holds a double quote (at byte %d): the kernel's parameter parser treats quotes "+
				"as grouping, so the value could set other parameters. Remove the quotes; a module parameter value is plain text", ErrBadValue, key, i)
		case c <= ' ' || c >= 0x7f:
			return fmt.Errorf("%w: the value of %s holds a space, control or non-ASCII byte (0x%02x at byte %d): the kernel splits module "+
				"parameters at whitespace, so the value would be cut there or set other parameters. Use printable ASCII without spaces "+
				"(array parameters take commas: \"1,2\")", ErrBadValue, key, c, i)
		}
	}
	return nil
}

// observation is what the node shows for one module.
type observation struct {
	Loaded  bool
	Builtin bool
	Refcnt  int
	Holders []string
	Params  map[string]string
}

// readScript prints, for each module name argument, "M name" then, when
// /sys/module/NAME exists, L, "S initstate", "R refcnt", "H holder" and
// "P key=value" lines. Its only inputs are its arguments.
//
// Files are read with the shell's read, not a cat per file (a module has a
// few parameters, each was a process on every plan): the first line, as the
// parser takes it. A parameter whose read fails is left out, as before: a
// sysfs attribute's size is never 0, so an empty read there is a failure,
// while an empty regular file (a simulated kernel) still reads as "".
const readScript = `d=$1; shift
for n in "$@"; do
  m="$d/$n"
  echo "M $n"
  [ -d "$m" ] || continue
  echo L
  if [ -r "$m/initstate" ]; then v=; IFS= read -r v <"$m/initstate"; echo "S $v"; fi
  if [ -r "$m/refcnt" ]; then v=; IFS= read -r v <"$m/refcnt"; echo "R $v"; fi
  for h in "$m"/holders/*; do [ -e "$h" ] || [ -L "$h" ] || continue; echo "H ${h##*/}"; done
  for p in "$m"/parameters/*; do
    [ -f "$p" ] || continue
    v=
    if { IFS= read -r v || [ -n "$v" ] || [ ! -s "$p" ]; } 2>/dev/null <"$p"; then printf 'P %s=%s\n' "${p##*/}" "$v"; fi
  done
done
`

// observe reads many modules in one remote command.
func (k *kernel) observe(ctx context.Context, conn node.Conn, n sdk.Node, names []string) (map[string]*observation, error) {
	out, err := k.sh(ctx, conn, n, readScript, append([]string{k.cfg.For(n).moduleDir()}, names...)...)
	if err != nil {
		return nil, fmt.Errorf("reading %s on %s: %s", k.cfg.For(n).moduleDir(), n.Name, toolErr(err))
	}
	obs := map[string]*observation{}
	var cur *observation
	for _, line := range strings.Split(out, "\n") {
		tag, rest, _ := strings.Cut(line, " ")
		switch {
		case tag == "M":
			cur = &observation{Params: map[string]string{}}
			obs[rest] = cur
		case cur == nil:
		case tag == "L":
			cur.Loaded, cur.Builtin = true, true
		case tag == "S":
			cur.Builtin = false
		case tag == "R":
			cur.Refcnt, _ = strconv.Atoi(strings.TrimSpace(rest))
		case tag == "H":
			cur.Holders = append(cur.Holders, rest)
		case tag == "P":
			if key, val, ok := strings.Cut(rest, "="); ok {
				cur.Params[key] = val
			}
		}
	}
	for _, name := range names {
		if obs[name] == nil {
			return nil, fmt.Errorf("reading %s on %s: no answer for module %s (output: %q)", k.cfg.For(n).moduleDir(), n.Name, name, out)
		}
	}
	return obs, nil
}

// priorRec is the restore record: the private data and the `prior` attribute.
type priorRec struct {
	Loaded bool              `json:"loaded"`
	Params map[string]string `json:"params"`
}

func (p *priorRec) value() cty.Value {
	if p == nil {
		return cty.NullVal(priorType)
	}
	return cty.ObjectVal(map[string]cty.Value{"loaded": cty.BoolVal(p.Loaded), "params": ctyval.MapVal(p.Params)})
}

func priorFrom(state cty.Value, private []byte) *priorRec {
	if len(private) > 0 {
		var p priorRec
		if json.Unmarshal(private, &p) == nil {
			return &p
		}
	}
	if state.IsNull() || !state.IsKnown() {
		return nil
	}
	pv := state.GetAttr("prior")
	if pv.IsNull() || !pv.IsWhollyKnown() {
		return nil
	}
	return &priorRec{Loaded: pv.GetAttr("loaded").True(), Params: ctyval.StrMap(pv.GetAttr("params"))}
}

// priorFromRecord reads the prior a restore record holds (nil: none).
func priorFromRecord(rec restore.Record) *priorRec {
	text := rec.First("prior")
	if text == "" {
		return nil
	}
	var p priorRec
	if json.Unmarshal([]byte(text), &p) != nil {
		return nil
	}
	return &p
}

func (p *priorRec) private() []byte {
	if p == nil {
		return nil
	}
	b, _ := json.Marshal(p)
	return b
}

// observedValue is base (config as applied, or prior state) corrected by
// what the node shows: desired values that do not hold are replaced by the
// observed ones, so the next plan shows the drift.
func observedValue(base cty.Value, o *observation, p *priorRec) cty.Value {
	want := desiredState(base)
	stateV := base.GetAttr("state")
	switch {
	case want == stateLoaded && !o.Loaded:
		stateV = cty.StringVal(stateUnloaded)
	case want == stateUnloaded && o.Loaded:
		stateV = cty.StringVal(stateLoaded)
	}
	paramsV := base.GetAttr("params")
	if o.Loaded && want == stateLoaded && !paramsV.IsNull() && paramsV.IsWhollyKnown() {
		ps := ctyval.StrMap(paramsV)
		for key, v := range ps {
			if ov, ok := o.Params[key]; ok && !paramEqual(v, ov) {
				ps[key] = ov
			}
		}
		paramsV = ctyval.MapVal(ps)
	}
	return ctyval.With(base, map[string]cty.Value{
		"state":           stateV,
		"params":          paramsV,
		"loaded":          cty.BoolVal(o.Loaded),
		"observed_params": ctyval.MapVal(o.Params),
		"prior":           p.value(),
	})
}

// Read implements sdk.Resource: one remote command for every instance.
func (r *moduleResource) Read(ctx context.Context, n sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	conn, err := r.k.pool.Get(ctx, n)
	if err != nil {
		return nil, 0, sdk.Diagnostics{sdk.FromError("Cannot reach node "+n.Name, err)}
	}
	var names []string
	for _, it := range items {
		if !it.Prior.IsNull() {
			names = append(names, normName(ctyval.Str(it.Prior.GetAttr("name"))))
		}
	}
	obs, err := r.k.observe(ctx, conn, n, names)
	if err != nil {
		return nil, 1, sdk.Diagnostics{sdk.FromError("Cannot read kernel modules", err)}
	}
	results := make([]sdk.ReadResult, len(items))
	for i, it := range items {
		if it.Prior.IsNull() {
			results[i] = sdk.ReadResult{NewState: it.Prior}
			continue
		}
		p := priorFrom(it.Prior, it.Private)
		results[i] = sdk.ReadResult{
			NewState: observedValue(it.Prior, obs[normName(ctyval.Str(it.Prior.GetAttr("name")))], p),
			Private:  it.Private,
		}
	}
	return results, 1, nil
}

// paramsDiffer reports whether a config's params differ, as the kernel
// means them, from what the state says is there.
func paramsDiffer(cfgParams, stateParams, observed cty.Value) bool {
	if !cfgParams.IsWhollyKnown() {
		return true
	}
	cur := ctyval.StrMap(stateParams)
	obs := ctyval.StrMap(observed)
	for key, v := range ctyval.StrMap(cfgParams) {
		if ov, ok := obs[key]; ok {
			if !paramEqual(v, ov) {
				return true
			}
			continue
		}
		sv, ok := cur[key]
		if !ok || !paramEqual(v, sv) {
			return true // a parameter sysfs does not show: trust what was applied
		}
	}
	return false
}

// Plan implements sdk.Resource.
func (r *moduleResource) Plan(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	if req.Proposed.IsNull() {
		return sdk.PlanResponse{Planned: req.Proposed, PlannedPrivate: req.PriorPrivate}
	}
	cfg := req.Proposed
	loadedV := cty.UnknownVal(cty.Bool)
	if st := cfg.GetAttr("state"); st.IsKnown() {
		loadedV = cty.BoolVal(desiredState(cfg) == stateLoaded)
	}
	if req.Prior.IsNull() {
		priorV := cty.UnknownVal(priorType)
		var diags sdk.Diagnostics
		if !req.Offline && (req.Replaces == cty.NilVal || req.Replaces.IsNull()) {
			// What the create displaces, read now so the plan shows it:
			// a loaded module is unloaded and reloaded.
			p, d := r.displaced(ctx, req.Node, cfg)
			if d.HasErrors() {
				return sdk.PlanResponse{Diagnostics: d}
			}
			diags = d
			if p != nil {
				priorV = p.value()
			}
		}
		return sdk.PlanResponse{Planned: ctyval.With(cfg, map[string]cty.Value{
			"loaded":          loadedV,
			"observed_params": cty.UnknownVal(cty.Map(cty.String)),
			"prior":           priorV,
		}), PlannedPrivate: req.PriorPrivate, Diagnostics: diags}
	}
	prior := req.Prior
	var replace []cty.Path
	if !sdk.ValuesEqual(cfg.GetAttr("name"), prior.GetAttr("name")) {
		replace = append(replace, sdk.AttrPath("name"))
	}
	changed := len(replace) > 0
	if !cfg.GetAttr("state").IsKnown() || desiredState(cfg) != desiredState(prior) ||
		prior.GetAttr("loaded").True() != (desiredState(cfg) == stateLoaded) {
		changed = true
	}
	if desiredState(cfg) == stateLoaded && paramsDiffer(cfg.GetAttr("params"), prior.GetAttr("params"), prior.GetAttr("observed_params")) {
		changed = true
	}
	if !changed {
		return sdk.PlanResponse{Planned: prior, PlannedPrivate: req.PriorPrivate}
	}
	priorV := prior.GetAttr("prior")
	if len(replace) > 0 || priorV.IsNull() {
		priorV = cty.UnknownVal(priorType)
	}
	return sdk.PlanResponse{Planned: ctyval.With(cfg, map[string]cty.Value{
		"loaded":          loadedV,
		"observed_params": cty.UnknownVal(cty.Map(cty.String)),
		"prior":           priorV,
	}), RequiresReplace: replace, PlannedPrivate: req.PriorPrivate}
}

// displaced reads, for a create, the module as the node has it now: the
// record destroy will restore, and a warning (a note on the planned
// change) when the create reloads a loaded module, with its parameters
// and holders.
func (r *moduleResource) displaced(ctx context.Context, n sdk.Node, cfg cty.Value) (*priorRec, sdk.Diagnostics) {
	nameV := cfg.GetAttr("name")
	if !nameV.IsKnown() || nameV.IsNull() || !moduleNameRE.MatchString(nameV.AsString()) {
		return nil, nil
	}
	name := normName(nameV.AsString())
	conn, err := r.k.pool.Get(ctx, n)
	if err != nil {
		return nil, sdk.Diagnostics{sdk.FromError("Cannot reach node "+n.Name, err)}
	}
	obs, err := r.k.observe(ctx, conn, n, []string{name})
	if err != nil {
		return nil, sdk.Diagnostics{sdk.FromError("Cannot read kernel modules", err)}
	}
	o := obs[name]
	p := &priorRec{Loaded: o.Loaded, Params: o.Params}
	// A restore record left by an apply that was cut off after its change
	// holds the first prior, and apply keeps that one: show it.
	cfgN := r.k.cfg.For(n)
	if rec, ok, err := cfgN.records().Get(ctx, conn, n.Become, path.Join(cfgN.moduleDir(), name)); err == nil && ok {
		if rp := priorFromRecord(rec); rp != nil {
			p = rp
		}
	}
	if !o.Loaded {
		return p, nil
	}
	var kv []string
	for _, k := range ctyval.SortedKeys(o.Params) {
		kv = append(kv, k+"="+o.Params[k])
	}
	params := strings.Join(kv, " ")
	if params == "" {
		params = "no readable parameters"
	}
	used := fmt.Sprintf("used by %d", o.Refcnt)
	if len(o.Holders) > 0 {
		used += ": " + strings.Join(o.Holders, ", ")
	}
	var what string
	switch {
	case o.Builtin:
		what = "it is built into the kernel, so apply cannot reload it and will fail"
	case desiredState(cfg) == stateUnloaded:
		what = "apply unloads it"
	case !cfg.GetAttr("params").IsWhollyKnown() || len(ctyval.StrMap(cfg.GetAttr("params"))) > 0:
		what = "apply unloads and reloads it"
		if d, _ := mismatch(ctyval.StrMap(cfg.GetAttr("params")), o); len(d) == 0 && cfg.GetAttr("params").IsWhollyKnown() {
			what = "its parameters already match, so apply leaves it loaded"
		}
	default:
		what = "apply keeps it loaded"
	}
	if (o.Refcnt > 0 || len(o.Holders) > 0) && strings.Contains(what, "unloads") {
		what += ", which fails while it is in use"
	}
	return p, sdk.Diagnostics{{Severity: sdk.Warning, Summary: fmt.Sprintf("%s is loaded (%s, %s); %s", name, params, used, what),
		Detail: "destroy restores it as it is now"}}
}

// inUseErr says who holds a module and what to do.
func inUseErr(nodeName, name string, o *observation, what string) error {
	held := "no module holds it, so a process, a mounted filesystem or a container has one of its devices open"
	if len(o.Holders) > 0 {
		held = "held by modules: " + strings.Join(o.Holders, ", ") + " (unload those first)"
	}
	return fmt.Errorf("%w: cannot %s %s on %s: refcount %d, %s. Stop what uses it first (e.g. the container "+
		"that has its device), then run the same apply or destroy again; the node was left as it was", ErrInUse, what, name, nodeName, o.Refcnt, held)
}

// unload removes exactly one module (rmmod, not modprobe -r: that would
// also unload its unused dependencies).
func (r *moduleResource) unload(ctx context.Context, conn node.Conn, n sdk.Node, name string, o *observation, what string, progress func(sdk.Progress)) error {
	if o.Builtin {
		return fmt.Errorf("%w: %s on %s cannot be unloaded; its parameters can only be set on the kernel command line (%s.PARAM=VALUE)",
			ErrBuiltin, name, n.Name, name)
	}
	if o.Refcnt > 0 || len(o.Holders) > 0 {
		return inUseErr(n.Name, name, o, what)
	}
	progress(sdk.Progress{Message: "rmmod " + name})
	if _, err := r.k.run(ctx, conn, n, r.k.cfg.For(n).Rmmod, name); err != nil {
		return fmt.Errorf("cannot %s %s on %s: %s", what, name, n.Name, toolErr(err))
	}
	return nil
}

func (r *moduleResource) load(ctx context.Context, conn node.Conn, n sdk.Node, name string, params map[string]string, progress func(sdk.Progress)) error {
	argv := []string{r.k.cfg.For(n).Modprobe, name}
	for _, key := range ctyval.SortedKeys(params) {
		argv = append(argv, key+"="+params[key])
	}
	progress(sdk.Progress{Message: strings.Join(argv[1:], " ")})
	if _, err := r.k.run(ctx, conn, n, argv...); err != nil {
		return fmt.Errorf("cannot load %s on %s: %s", name, n.Name, toolErr(err))
	}
	return nil
}

// mismatch lists the parameters the kernel shows with other values than
// want, and those it does not show at all.
func mismatch(want map[string]string, o *observation) (diff, hidden []string) {
	for _, key := range ctyval.SortedKeys(want) {
		ov, ok := o.Params[key]
		switch {
		case !ok:
			hidden = append(hidden, key)
		case !paramEqual(want[key], ov):
			diff = append(diff, fmt.Sprintf("%s=%s (wanted %s)", key, ov, want[key]))
		}
	}
	return diff, hidden
}

// Apply implements sdk.Resource.
func (r *moduleResource) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	n := req.Node
	base := req.Planned
	if base.IsNull() {
		base = req.Prior
	}
	name := normName(ctyval.Str(base.GetAttr("name")))
	p := priorFrom(req.Prior, req.Private)
	fail := func(state cty.Value, err error) sdk.ApplyResponse {
		return sdk.ApplyResponse{NewState: state, Private: p.private(), Diagnostics: sdk.Diagnostics{sdk.FromError("kmod_module "+name, err)}}
	}
	var params map[string]string
	if !req.Planned.IsNull() {
		params = ctyval.StrMap(req.Planned.GetAttr("params"))
	}
	if err := checkArgs(name, params); err != nil {
		return fail(req.Prior, err)
	}
	conn, err := r.k.pool.Get(ctx, n)
	if err != nil {
		return fail(req.Prior, fmt.Errorf("cannot reach node %s: %w (restore data is kept; try again)", n.Name, err))
	}
	look := func() (*observation, error) {
		obs, err := r.k.observe(ctx, conn, n, []string{name})
		if err != nil {
			return nil, err
		}
		return obs[name], nil
	}
	o, err := look()
	if err != nil {
		return fail(req.Prior, err)
	}
	if p == nil { // first change: what is there now, before touching it
		p = &priorRec{Loaded: o.Loaded, Params: o.Params}
	}
	cfg := r.k.cfg.For(n)
	recKey := path.Join(cfg.moduleDir(), name)
	if !req.Planned.IsNull() {
		// Durable on the node before the first change. An earlier record
		// (an apply killed after its change, then replaced) is the first
		// prior and wins over whatever state says.
		rec, err := cfg.records().Create(ctx, conn, n.Become, recKey, restore.Record{"prior": {string(p.private())}})
		if err != nil {
			return fail(req.Prior, fmt.Errorf("cannot record what to restore before changing %s on %s, so nothing was changed: %w", name, n.Name, err))
		}
		if rp := priorFromRecord(rec); rp != nil {
			p = rp
		}
	} else {
		rec, ok, err := cfg.records().Get(ctx, conn, n.Become, recKey)
		if err != nil {
			return fail(req.Prior, fmt.Errorf("cannot read the restore record of %s on %s: %w; the instance stays in state and the next destroy retries", name, n.Name, err))
		}
		if rp := priorFromRecord(rec); ok && rp != nil {
			p = rp
		}
	}
	// real is the state to report from what the node shows after a step.
	real := func(b cty.Value) cty.Value {
		if o2, err := look(); err == nil {
			o = o2
		}
		if b.IsNull() {
			return b
		}
		return observedValue(b, o, p)
	}

	if req.Planned.IsNull() {
		if err := r.restore(ctx, conn, n, name, p, o, progress); err != nil {
			st := req.Prior
			if !st.IsNull() {
				st = real(st)
			}
			return fail(st, fmt.Errorf("restore of %s to its prior state failed: %w; the instance stays in state "+
				"with its prior and the next destroy retries", name, err))
		}
		// Put back and verified: only now may the record go.
		if err := cfg.records().Remove(ctx, conn, n.Become, recKey); err != nil {
			return fail(real(req.Prior), fmt.Errorf("%s on %s is restored, but its restore record could not be removed: %w; "+
				"the instance stays in state and the next destroy retries", name, n.Name, err))
		}
		return sdk.ApplyResponse{NewState: cty.NullVal(req.Planned.Type())}
	}

	planned := req.Planned
	want := ctyval.StrMap(planned.GetAttr("params"))
	var diags sdk.Diagnostics
	if desiredState(planned) == stateUnloaded {
		if o.Loaded {
			if err := r.unload(ctx, conn, n, name, o, "unload", progress); err != nil {
				return fail(real(planned), err)
			}
		}
	} else {
		diff, _ := mismatch(want, o)
		if !o.Loaded || len(diff) > 0 {
			before := o
			if o.Loaded {
				if err := r.unload(ctx, conn, n, name, o, "reload", progress); err != nil {
					return fail(real(planned), err)
				}
			}
			if err := r.load(ctx, conn, n, name, want, progress); err != nil {
				if before.Loaded { // put back the values it had for the parameters we touched
					back := map[string]string{}
					for key := range want {
						if v, ok := before.Params[key]; ok {
							back[key] = v
						}
					}
					if rerr := r.load(ctx, conn, n, name, back, progress); rerr != nil {
						err = fmt.Errorf("%v; putting it back also failed: %v", err, rerr)
					} else {
						err = fmt.Errorf("%v; the module was loaded back with its previous values", err)
					}
				}
				return fail(real(planned), err)
			}
		}
	}
	st := real(planned)
	if desiredState(planned) == stateLoaded {
		if !o.Loaded {
			return fail(st, fmt.Errorf("%s is not loaded on %s after modprobe", name, n.Name))
		}
		diff, hidden := mismatch(want, o)
		if len(diff) > 0 {
			return fail(st, fmt.Errorf("%w: %s on %s shows %s. A module that was already loaded keeps its values "+
				"on modprobe; check for an install/options rule in the node's modprobe.d", ErrNotTaken, name, n.Name, strings.Join(diff, ", ")))
		}
		if len(hidden) > 0 {
			visible := ctyval.SortedKeys(o.Params)
			sort.Strings(visible)
			diags = append(diags, sdk.Diagnostic{Severity: sdk.Warning, Summary: "Parameters not visible in sysfs",
				Detail: fmt.Sprintf("%s on %s does not show %s under parameters/ (it shows %v), so sparkform cannot verify them. "+
					"The kernel ignores unknown parameters: check the names with `modinfo -p %s`.", name, n.Name, strings.Join(hidden, ", "), visible, name)})
		}
	} else if o.Loaded {
		return fail(st, fmt.Errorf("%s is still loaded on %s after rmmod", name, n.Name))
	}
	return sdk.ApplyResponse{NewState: st, Private: p.private(), Diagnostics: diags}
}

// restore puts the module back as p says it was.
func (r *moduleResource) restore(ctx context.Context, conn node.Conn, n sdk.Node, name string, p *priorRec, o *observation, progress func(sdk.Progress)) error {
	look := func() (*observation, error) {
		obs, err := r.k.observe(ctx, conn, n, []string{name})
		if err != nil {
			return nil, err
		}
		return obs[name], nil
	}
	if !p.Loaded {
		if !o.Loaded {
			return nil
		}
		if err := r.unload(ctx, conn, n, name, o, "unload", progress); err != nil {
			return err
		}
		o, err := look()
		if err != nil {
			return err
		}
		if o.Loaded {
			return fmt.Errorf("%s is still loaded on %s after rmmod", name, n.Name)
		}
		return nil
	}
	if diff, _ := mismatch(p.Params, o); o.Loaded && len(diff) == 0 {
		return nil
	}
	if o.Loaded {
		if err := r.unload(ctx, conn, n, name, o, "reload", progress); err != nil {
			return err
		}
	}
	// Plain first: modprobe applies the node's own modprobe.d options, as
	// the seed's "restore the plain module" does.
	if err := r.load(ctx, conn, n, name, nil, progress); err != nil {
		return err
	}
	o, err := look()
	if err != nil {
		return err
	}
	var explicit map[string]string
	for _, key := range ctyval.SortedKeys(p.Params) {
		if ov, ok := o.Params[key]; ok && !paramEqual(p.Params[key], ov) {
			if explicit == nil {
				explicit = map[string]string{}
			}
			explicit[key] = p.Params[key]
		}
	}
	if explicit != nil {
		if err := r.unload(ctx, conn, n, name, o, "reload", progress); err != nil {
			return err
		}
		if err := r.load(ctx, conn, n, name, explicit, progress); err != nil {
			return err
		}
		if o, err = look(); err != nil {
			return err
		}
	}
	if !o.Loaded {
		return fmt.Errorf("%s is not loaded on %s after modprobe", name, n.Name)
	}
	if diff, _ := mismatch(p.Params, o); len(diff) > 0 {
		return fmt.Errorf("%w: %s on %s shows %s after the restore", ErrNotTaken, name, n.Name, strings.Join(diff, ", "))
	}
	return nil
}

// Import implements sdk.Resource: the id is the module name; what is there
// now becomes prior.
func (r *moduleResource) Import(ctx context.Context, req sdk.ImportRequest) sdk.ImportResponse {
	name := normName(strings.TrimSpace(req.ID))
	if !moduleNameRE.MatchString(name) {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Invalid import id",
			"kmod_module is imported by module name, e.g. \"nvidia_drm\"; got %q", req.ID)}}
	}
	conn, err := r.k.pool.Get(ctx, req.Node)
	if err != nil {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot reach node "+req.Node.Name, err)}}
	}
	obs, err := r.k.observe(ctx, conn, req.Node, []string{name})
	if err != nil {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot read kernel modules", err)}}
	}
	o := obs[name]
	p := &priorRec{Loaded: o.Loaded, Params: o.Params}
	stateV := cty.NullVal(cty.String)
	if !o.Loaded {
		stateV = cty.StringVal(stateUnloaded)
	}
	base := cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal(name), "params": cty.NullVal(cty.Map(cty.String)), "state": stateV,
		"loaded": cty.False, "observed_params": cty.MapValEmpty(cty.String), "prior": cty.NullVal(priorType),
	})
	return sdk.ImportResponse{State: observedValue(base, o, p), Private: p.private()}
}
