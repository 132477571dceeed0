package command

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Command is node_command.
type Command struct {
	pool *node.Pool
}

var _ sdk.Resource = (*Command)(nil)

// maxStdout is how much of a command's stdout is kept in state.
const maxStdout = 64 << 10

// maxShown is how much of stdout and stderr a failure message quotes.
const maxShown = 4 << 10

// Schema implements sdk.Resource.
func (c *Command) Schema() *sdk.ResourceSchema { return schema }

// Validate implements sdk.Resource. A config with unknowns is checked at
// plan again, when it is known, and at apply.
func (c *Command) Validate(_ context.Context, cfg cty.Value) sdk.Diagnostics {
	if cfg.IsNull() || !cfg.IsWhollyKnown() {
		return nil
	}
	_, diags := decode(cfg)
	return diags
}

// run runs one step of s on conn.
func run(ctx context.Context, conn node.Conn, s *spec, st string) (node.Result, error) {
	return conn.Run(ctx, node.Cmd{Argv: s.argv(st), Become: s.become, Env: s.env, Dir: s.dir, Timeout: s.timeout})
}

// failure is the diagnostic of a step that did not succeed: the exit
// status, stdout and stderr, so the user sees why without logging in.
func failure(s *spec, st, addr string, n sdk.Node, res node.Result, err error) sdk.Diagnostic {
	what := fmt.Sprintf("%s of %s on %s", describe(s, st), addr, nodeName(n))
	var ee *node.ExitError
	if errors.Is(err, node.ErrBecome) || !errors.As(err, &ee) {
		return sdk.Errorf(cty.GetAttrPath(describe(s, st)), "node_command "+st+" failed", "%s could not run: %v", what, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s exited with status %d.", what, ee.ExitCode)
	if len(res.Stdout) > 0 {
		fmt.Fprintf(&b, "\n\nstdout:\n%s", tail(res.Stdout, maxShown))
	}
	if len(res.Stderr) > 0 {
		fmt.Fprintf(&b, "\n\nstderr:\n%s", tail(res.Stderr, maxShown))
	}
	if len(res.Stdout) == 0 && len(res.Stderr) == 0 {
		b.WriteString("\n\nIt printed nothing.")
	}
	return sdk.Errorf(cty.GetAttrPath(describe(s, st)), "node_command "+st+" failed", "%s", b.String())
}

// tail is the last max bytes of b, marked when cut, with one final newline
// removed.
func tail(b []byte, max int) string {
	s := strings.TrimSuffix(string(b), "\n")
	if len(s) > max {
		return "[... " + fmt.Sprint(len(s)-max) + " bytes before]" + s[len(s)-max:]
	}
	return s
}

func nodeName(n sdk.Node) string {
	if n.Name != "" {
		return n.Name
	}
	return n.Host
}

// Read implements sdk.Resource: the check of every instance that has one,
// concurrently; the others are reported as stored.
func (c *Command) Read(ctx context.Context, n sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	out := make([]sdk.ReadResult, len(items))
	var todo []int
	specs := make([]*spec, len(items))
	for i, it := range items {
		out[i] = sdk.ReadResult{NewState: it.Prior, Private: it.Private}
		if it.Prior.IsNull() || !it.Prior.IsWhollyKnown() {
			continue
		}
		s, diags := decode(it.Prior)
		if diags.HasErrors() {
			out[i].Diagnostics = diags
			continue
		}
		if s.has(stepCheck) {
			specs[i] = s
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return out, 0, nil
	}
	conn, err := c.pool.Get(ctx, n)
	if err != nil {
		return out, 0, sdk.Diagnostics{sdk.Errorf(nil, "Cannot reach node", "%v", err)}
	}
	var wg sync.WaitGroup
	for _, i := range todo {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := specs[i]
			res, err := run(ctx, conn, s, stepCheck)
			var ee *node.ExitError
			switch {
			case err == nil: // present and current
			case !errors.Is(err, node.ErrBecome) && errors.As(err, &ee) && ee.ExitCode != 126 && ee.ExitCode != 127:
				out[i].NewState = cty.NullVal(objType) // gone, or not current
			default:
				d := failure(s, stepCheck, items[i].Address, n, res, err)
				d.Detail += "\n\nExit status 126 or 127 means the check itself cannot run (not executable, not found); fix the check so that it exits 0 when the object is present and current, and 1 when it is not."
				out[i].Diagnostics = sdk.Diagnostics{d}
			}
		}(i)
	}
	wg.Wait()
	return out, len(todo), nil
}

// Plan implements sdk.Resource.
func (c *Command) Plan(_ context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	if req.Proposed.IsNull() { // delete
		resp := sdk.PlanResponse{Planned: req.Proposed, PlannedPrivate: req.PriorPrivate}
		if !req.Prior.IsNull() && req.Prior.IsKnown() &&
			req.Prior.GetAttr("destroy").IsNull() && req.Prior.GetAttr("destroy_script").IsNull() {
			resp.Diagnostics = sdk.Diagnostics{{Severity: sdk.Warning, Summary: "Destroy undoes nothing on the node",
				Detail: fmt.Sprintf("%s has no destroy command: destroying it only removes it from state, and what create did stays on %s.", req.Address, nodeName(req.Node))}}
		}
		return resp
	}
	if !req.Proposed.IsKnown() {
		return sdk.PlanResponse{Planned: cty.UnknownVal(objType)}
	}
	var diags sdk.Diagnostics
	if req.Proposed.GetAttr("check").IsNull() && req.Proposed.GetAttr("check_script").IsNull() {
		diags = append(diags, sdk.Diagnostic{Severity: sdk.Warning, Summary: "Drift cannot be seen",
			Detail: fmt.Sprintf("%s has no check, so refresh cannot tell whether what its create did is still there on %s: plan trusts the stored value. Add check = [ARGV...] (exit 0 = present and current) to see drift.", req.Address, nodeName(req.Node))})
	}
	proposed := withDefaults(req.Proposed, req.Config)
	vals := proposed.AsValueMap()
	if req.Prior.IsNull() { // create
		vals["id"], vals["stdout"] = cty.UnknownVal(cty.String), cty.UnknownVal(cty.String)
		return sdk.PlanResponse{Planned: cty.ObjectVal(vals), Diagnostics: diags}
	}
	if !sdk.ValuesEqual(req.Prior.GetAttr("triggers_replace"), proposed.GetAttr("triggers_replace")) {
		vals["id"], vals["stdout"] = cty.UnknownVal(cty.String), cty.UnknownVal(cty.String)
		return sdk.PlanResponse{Planned: cty.ObjectVal(vals), Diagnostics: diags,
			RequiresReplace: []cty.Path{cty.GetAttrPath("triggers_replace")}}
	}
	changed := changedRunAffecting(req.Prior, proposed)
	if len(changed) > 0 {
		vals["id"], vals["stdout"] = req.Prior.GetAttr("id"), cty.UnknownVal(cty.String)
		resp := sdk.PlanResponse{Planned: cty.ObjectVal(vals), Diagnostics: diags, PlannedPrivate: req.PriorPrivate}
		if proposed.GetAttr("update").IsNull() && proposed.GetAttr("update_script").IsNull() {
			resp.RequiresReplace = changed
			vals["id"] = cty.UnknownVal(cty.String)
			resp.Planned = cty.ObjectVal(vals)
		}
		return resp
	}
	vals["id"], vals["stdout"] = req.Prior.GetAttr("id"), req.Prior.GetAttr("stdout")
	planned := cty.ObjectVal(vals)
	if sdk.ValuesEqual(planned, req.Prior) {
		planned = req.Prior
	}
	return sdk.PlanResponse{Planned: planned, Diagnostics: diags, PlannedPrivate: req.PriorPrivate}
}

// changedRunAffecting lists the attributes that change what create does.
func changedRunAffecting(prior, planned cty.Value) []cty.Path {
	var out []cty.Path
	for _, a := range runAffecting {
		pv, nv := prior.GetAttr(a), planned.GetAttr(a)
		if a == "become" { // null and false are the same
			if pv.IsNull() {
				pv = cty.False
			}
			if nv.IsKnown() && nv.IsNull() {
				nv = cty.False
			}
		}
		if !sdk.ValuesEqual(pv, nv) {
			out = append(out, cty.GetAttrPath(a))
		}
	}
	return out
}

// Apply implements sdk.Resource.
func (c *Command) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	keep := sdk.ApplyResponse{NewState: req.Prior, Private: req.Private}
	if req.Planned.IsNull() {
		return c.destroy(ctx, req, progress)
	}
	planned := withDefaults(req.Planned, cty.NilVal)
	known := planned.AsValueMap()
	delete(known, "id")
	delete(known, "stdout")
	if !cty.ObjectVal(known).IsWhollyKnown() {
		keep.Diagnostics = sdk.Diagnostics{sdk.Errorf(nil, "Value not known at apply",
			"every argument of %s must be known when it is applied; the engine should have resolved every reference first", req.Address)}
		return keep
	}
	s, diags := decode(planned)
	if diags.HasErrors() {
		keep.Diagnostics = diags
		return keep
	}
	st := stepCreate
	if !req.Prior.IsNull() {
		if len(changedRunAffecting(req.Prior, planned)) == 0 { // only stored attributes changed
			vals := planned.AsValueMap()
			vals["id"], vals["stdout"] = req.Prior.GetAttr("id"), req.Prior.GetAttr("stdout")
			return sdk.ApplyResponse{NewState: cty.ObjectVal(vals), Private: req.Private}
		}
		if !s.has(stepUpdate) {
			keep.Diagnostics = sdk.Diagnostics{sdk.Errorf(nil, "No update command",
				"%s changed in place but has no update command; the plan should have replaced it", req.Address)}
			return keep
		}
		st = stepUpdate
	}
	conn, err := c.pool.Get(ctx, req.Node)
	if err != nil {
		keep.Diagnostics = sdk.Diagnostics{sdk.Errorf(nil, "Cannot reach node", "%v", err)}
		return keep
	}
	progress(sdk.Progress{Message: "running " + describe(s, st)})
	res, err := run(ctx, conn, s, st)
	vals := planned.AsValueMap()
	vals["stdout"] = cty.StringVal(strings.ToValidUTF8(tailBytes(res.Stdout, maxStdout), "\uFFFD"))
	if id := req.Planned.GetAttr("id"); id.IsKnown() && !id.IsNull() {
		vals["id"] = id
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
		vals["id"] = cty.StringVal(hex.EncodeToString(b[:]))
	}
	newState := cty.ObjectVal(vals)
	if err != nil {
		d := failure(s, st, req.Address, req.Node, res, err)
		if st == stepUpdate {
			return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{d}}
		}
		// Kept (tainted): what a failed create made is undone by its
		// destroy before the next create.
		return sdk.ApplyResponse{NewState: newState, Diagnostics: sdk.Diagnostics{d}}
	}
	if s.has(stepCheck) {
		progress(sdk.Progress{Message: "running " + describe(s, stepCheck)})
		cres, cerr := run(ctx, conn, s, stepCheck)
		if cerr != nil {
			d := failure(s, stepCheck, req.Address, req.Node, cres, cerr)
			d.Summary = "node_command check failed after " + st
			d.Detail += fmt.Sprintf("\n\n%s succeeded, but the check does not see its result: every plan would run it again. Make the check exit 0 exactly when what %s makes is present and current.", describe(s, st), st)
			return sdk.ApplyResponse{NewState: newState, Diagnostics: sdk.Diagnostics{d}}
		}
	}
	return sdk.ApplyResponse{NewState: newState, Private: req.Private}
}

func tailBytes(b []byte, max int) string {
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// destroy runs the destroy command stored with the object.
func (c *Command) destroy(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	keep := sdk.ApplyResponse{NewState: req.Prior, Private: req.Private}
	if req.Prior.IsNull() {
		return sdk.ApplyResponse{NewState: req.Planned}
	}
	s, diags := decode(withDefaults(req.Prior, cty.NilVal))
	if diags.HasErrors() {
		keep.Diagnostics = diags
		return keep
	}
	if !s.has(stepDestroy) {
		return sdk.ApplyResponse{NewState: req.Planned}
	}
	conn, err := c.pool.Get(ctx, req.Node)
	if err != nil {
		keep.Diagnostics = sdk.Diagnostics{sdk.Errorf(nil, "Cannot reach node", "%v", err)}
		return keep
	}
	progress(sdk.Progress{Message: "running " + describe(s, stepDestroy)})
	res, err := run(ctx, conn, s, stepDestroy)
	if err != nil {
		d := failure(s, stepDestroy, req.Address, req.Node, res, err)
		d.Detail += "\n\nThe object stays in state; a later destroy runs the command again."
		keep.Diagnostics = sdk.Diagnostics{d}
		return keep
	}
	return sdk.ApplyResponse{NewState: req.Planned}
}

// Import implements sdk.Resource: nothing on a node records that a
// command once ran.
func (c *Command) Import(context.Context, sdk.ImportRequest) sdk.ImportResponse {
	return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Import not supported",
		"node_command cannot be imported: nothing on a node records that a command ran; add the resource to config and apply it (its create must then be safe to run where the object is already present)")}}
}
